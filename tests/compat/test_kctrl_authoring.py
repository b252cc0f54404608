"""`kapply package init`, `release` and `repository release` against the real kctrl (issue 31): the same answers
on stdin, each tool in a directory of its own holding the same files and pushing to a repository of its own in the
tests' registry, comparing the exit status, stdout, stderr and every file written. Then what kapply pushed is fetched:
by crane and imgpkg (the same uncompressed layer as kctrl's imgpkg pushed, read back as a bundle), and by a
PackageRepository on the cluster, whose package then installs.

kctrl runs ytt, kbld, imgpkg and vendir (kctrl shells out to them): the real ones, on a PATH of their own. Normalised
away: the repository each tool pushed to, digests (kapply gzips its layer with Python's zlib, not Go's), times, kctrl's
copy of the working directory that it templates (`/tmp/kapp-controller-fetch-template-deploy<N>/0/`), and kctrl's
`$ imgpkg push ...` line (kapply pushes with its own OCI client: docs/compatibility.md, "Known differences")."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap, Namespace

from tests.e2e.harness import Cluster, external_tool
from tests.e2e.package_cli_harness import package_cli_controller
from tests.e2e.registry import Registry

pytestmark = [pytest.mark.compat, pytest.mark.timeout(300)]
TOOLS = ("kctrl", "kapply")
REF = "hello.authoring.corp.com"
IMAGE_TAG = "1"
# an image reference kbld locks (kbld resolves every `image` key, a ConfigMap's data too)
CONFIG = """apiVersion: v1
kind: ConfigMap
metadata:
  name: hello
data:
  image: {registry}/authoring/app:1
  greeting: hello
"""
SCHEMA = """#@data/values-schema
---
#@schema/desc "What to say"
greeting: hello
"""


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str


@dataclass
class Authors:
    """Each tool's working directory and registry repository, and the programs kctrl runs."""

    root: Path
    registry: Registry
    kctrl: Path
    path: str  # PATH for kctrl: ytt, kbld, imgpkg, vendir
    base: str  # <registry>/authoring/<id>

    def dir(self, tool: str) -> Path:
        return self.root / tool

    def repository(self, tool: str, name: str) -> str:
        return f"{self.base}/{tool}/{name}"

    def run(self, tool: str, args: tuple[str, ...], stdin: str, cwd: str = "", group: str = "package") -> Run:
        """`{repo:NAME}` in stdin is the tool's registry repository NAME."""
        stdin = re.sub(r"\{repo:([a-z-]+)\}", lambda m: self.repository(tool, m.group(1)), stdin)
        if tool == "kctrl":
            argv, env = [str(self.kctrl)], {**os.environ, "PATH": self.path}
        else:
            argv, env = [sys.executable, "-m", "kapply"], dict(os.environ)
        env["HOME"] = str(self.root / f"home-{tool}")  # no Docker config: the registry needs none
        done = subprocess.run(
            [*argv, group, *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=self.dir(tool) / cwd,
            env=env,
            timeout=120,
        )
        return Run(done.returncode, done.stdout, done.stderr)

    def both(self, *args: str, stdin: str, cwd: str = "", group: str = "package") -> None:
        """The command (of `group`: package or app) with each tool (kctrl first); what each printed and the files each
        wrote, compared."""
        runs = {tool: self.run(tool, args, stdin, cwd, group) for tool in TOOLS}
        seen = {tool: self.seen(tool, runs[tool]) for tool in TOOLS}
        assert seen["kapply"] == seen["kctrl"], "\n".join(("kctrl:", *seen["kctrl"], "", "kapply:", *seen["kapply"]))

    def normalize(self, tool: str, text: str) -> str:
        text = text.replace(f"{self.base}/{tool}/", "REPO/")
        text = re.sub(r"^(kctrl|kapply): Error:", "PROG: Error:", text, flags=re.M)
        text = re.sub(r"sha256:[0-9a-f]{64}", "sha256:DIGEST", text)
        text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "TIMESTAMP", text)
        text = re.sub(r"(build[-.])\d+", r"\1TIME", text)
        return re.sub(r"/tmp/kapp-controller-fetch-template-deploy\d+/0/", "", text)

    def seen(self, tool: str, run: Run) -> list[str]:
        lines = [f"exit {run.code}", *run.stdout.splitlines(), "== stderr", *run.stderr.splitlines()]
        for path in sorted(p for p in self.dir(tool).rglob("*") if p.is_file()):
            lines += [f"== {path.relative_to(self.dir(tool))}", *path.read_text().splitlines()]
        normalized = self.normalize(tool, "\n".join(lines)).splitlines()
        return [line for line in normalized if not line.startswith("\t    | $ imgpkg push -b ")]


@pytest.fixture(scope="module")
def oci_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    from tests.e2e import registry

    crane = external_tool("crane", "KAPPLY_CRANE")
    with registry.serving(crane, tmp_path_factory.mktemp("oci-registry")) as served:
        yield served


@pytest.fixture(scope="module")
def authors(oci_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Authors:
    """Both working directories with the package's configuration (its image pushed), and kctrl's programs."""
    kctrl = external_tool("kctrl", "KAPPLY_KCTRL")
    programs = tmp_path_factory.mktemp("kctrl-programs")
    for name, variable in (("ytt", "KAPPLY_YTT"), ("kbld", "KAPPLY_KBLD"), ("imgpkg", "KAPPLY_IMGPKG")):
        (programs / name).symlink_to(external_tool(name, variable))
    (programs / "vendir").symlink_to(external_tool("vendir", "KAPPLY_VENDIR"))
    (programs / "helm").symlink_to(external_tool("helm", "KAPPLY_HELM"))  # vendir's helm chart fetch runs it
    root = tmp_path_factory.mktemp("authoring")
    oci_registry.push_files(f"{oci_registry.host}/authoring/app:{IMAGE_TAG}", {"app": b"app"}, root / "layers")
    for tool in TOOLS:
        config = root / tool / "config"
        config.mkdir(parents=True)
        (config / "config.yml").write_text(CONFIG.format(registry=oci_registry.host))
        (config / "values.yml").write_text(SCHEMA)
        (root / f"home-{tool}").mkdir()
    shutil.rmtree(root / "layers")
    base = f"{oci_registry.host}/authoring/{uuid.uuid4().hex[:8]}"
    return Authors(root, oci_registry, kctrl, f"{programs}:/usr/bin:/bin", base)


# --- package init -----------------------------------------------------------------------------------------------------


def test_init(authors: Authors) -> None:
    authors.both("init", stdin=f"{REF}\n1\nconfig\n")


def test_init_checks_answers_and_fails_at_the_end_of_its_input(authors: Authors) -> None:
    """A name of two segments, a choice of no source: asked again; then stdin ends (the files as far as they got)."""
    authors.both("init", "--tty", stdin=f"a.b\nNot.Valid.name\n{REF}\n9\nx\n")


def test_init_again_offers_the_last_answers_and_overwrites_the_package_when_told(authors: Authors) -> None:
    authors.both("init", "--tty", stdin="\n\nconfig,config\n1\n")
    authors.both("init", stdin="\n\nconfig\n2\n")


# --- package release --------------------------------------------------------------------------------------------------


def test_release(authors: Authors) -> None:
    """A version and a tag, a repository's layout too: TTY output, the artifacts, package-build.yml updated; the
    bundle's layer is imgpkg's, byte for byte."""
    args = ("release", "--version", "1.0.0", "--tag", "v1", "--repo-output", "repo", "--tty")
    authors.both(*args, stdin="{repo:pkg}\n")
    configs = {tool: authors.registry.crane("config", authors.repository(tool, "pkg") + ":v1") for tool in TOOLS}
    assert json.loads(configs["kapply"])["rootfs"] == json.loads(configs["kctrl"])["rootfs"]
    assert json.loads(configs["kapply"])["config"] == {"Labels": {"dev.carvel.imgpkg.bundle": "true"}}
    package = yaml.safe_load((authors.dir("kapply") / "repo/packages" / REF / "1.0.0.yml").read_text())
    assert package["spec"]["valuesSchema"]["openAPIv3"]["properties"]["greeting"]["description"] == "What to say"


def test_release_defaults_and_build_values(authors: Authors) -> None:
    """Without a version or a tag (`0.0.0+build.<time>`, `build-<time>`), with `-y` (the last registry URL, not asked),
    build values and ytt's validations off, no values schema; not a TTY."""
    (authors.dir("kctrl") / "build-values.yml").write_text("greeting: hi\n")
    (authors.dir("kapply") / "build-values.yml").write_text("greeting: hi\n")
    args = ("release", "--build-values", "build-values.yml", "--build-ytt-validations=false", "--openapi-schema=false")
    authors.both(*args, "-y", stdin="")


def test_release_needs_init_first(authors: Authors) -> None:
    for tool in TOOLS:
        (authors.dir(tool) / "elsewhere").mkdir()
    authors.both("release", "--chdir", "elsewhere", stdin="")
    for tool in TOOLS:
        (authors.dir(tool) / "elsewhere" / "package-build.yml").write_text("apiVersion: kctrl.carvel.dev/v1alpha1\n")
    authors.both("release", "--chdir", "elsewhere", stdin="")
    for tool in TOOLS:
        shutil.rmtree(authors.dir(tool) / "elsewhere")


# --- package repository release ---------------------------------------------------------------------------------------


def test_repository_release(authors: Authors) -> None:
    """From the release's repository layout: package-repository.yml and pkgrepo-build.yml; the bundle imgpkg pulls
    from kapply's push holds what kctrl's does."""
    authors.both("repository", "release", "-v", "1.0.0", "--tty", stdin="authoring.corp.com\n{repo:repo}\n", cwd="repo")
    imgpkg = external_tool("imgpkg", "KAPPLY_IMGPKG")
    pulled = {}
    for tool in TOOLS:
        out = authors.root / f"pulled-{tool}"
        ref = authors.repository(tool, "repo") + ":1.0.0"
        subprocess.run([imgpkg, "pull", "-b", ref, "-o", out], check=True, capture_output=True, timeout=60)
        pulled[tool] = {
            str(p.relative_to(out)): authors.normalize(tool, p.read_text())
            for p in sorted(out.rglob("*"))
            if p.is_file()
        }
    assert pulled["kapply"] == pulled["kctrl"]
    config = json.loads(authors.registry.crane("config", authors.repository("kapply", "repo") + ":1.0.0"))
    assert config["config"] == {"Labels": {"dev.carvel.imgpkg.bundle": "true"}}
    assert set(pulled["kapply"]) == {".imgpkg/images.yml", f"packages/{REF}/1.0.0.yml", f"packages/{REF}/metadata.yml"}


def test_repository_release_defaults_and_errors(authors: Authors) -> None:
    """The last answers (`-y`) and a version made of the time; without a `packages` directory, kctrl's error."""
    authors.both("repository", "release", "-y", stdin="", cwd="repo")
    for tool in TOOLS:
        (authors.dir(tool) / "empty").mkdir()
    authors.both("repository", "release", stdin="a.b.c\n{repo:none}\n", cwd="empty")


# --- package init from a Helm chart in a Helm repository, then release ------------------------------------------------

HELM_REF = "chart.authoring.corp.com"
CHART = "apiVersion: v2\nname: hello\nversion: 0.1.0\nappVersion: '1.0'\n"
CHART_TEMPLATE = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hello
data:
  image: {{ .Values.image }}
  replicas: {{ .Values.replicas | quote }}
"""
# what kctrl's values schema generator reads: types as YAML 1.2 resolves them, descriptions from the comments above
CHART_VALUES = """# A document's comment

# replicas The number of replicas
# over two lines
replicas: 2
## Double hashed
## and again
double: x
# -- helm-docs style
docs: y
# separated by a blank line

separated: z
image: {registry}/authoring/app:1
answers:
  yes: yes
  quoted: "1"
  tilde: ~
  nothing:
  nulled: null
  negative: -3
  exp: 1e3
  ratio: 0.5
  enabled: true
# the servers
servers:
  # the first server
  - name: a # not a description
    port: 1
empty: {{}}
none: []
base: &base
  k: v
derived: *base
block: |
  text
  more
"""


@pytest.fixture(scope="module")
def helm_repository(oci_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Helm repository served over http on this machine (`helm package` and `helm repo index` of a chart whose
    ConfigMap names the pushed image): its URL."""
    import functools
    import http.server
    import threading

    helm = external_tool("helm", "KAPPLY_HELM")
    root = tmp_path_factory.mktemp("helm-repository")
    chart, served = root / "hello", root / "served"
    (chart / "templates").mkdir(parents=True)
    served.mkdir()
    (chart / "Chart.yaml").write_text(CHART)
    (chart / "values.yaml").write_text(CHART_VALUES.format(registry=oci_registry.host))
    (chart / "templates" / "cm.yaml").write_text(CHART_TEMPLATE)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(served)))
    url = f"http://127.0.0.1:{server.server_address[1]}"
    for argv in (["package", str(chart), "-d", str(served)], ["repo", "index", str(served), "--url", url]):
        subprocess.run([helm, *argv], check=True, capture_output=True, timeout=60)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield url
    finally:
        server.shutdown()
        thread.join(10)


@pytest.fixture
def helm_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """kapply's vendir and helm: the ones kctrl runs."""
    monkeypatch.setenv("KAPPLY_VENDIR", str(external_tool("vendir", "KAPPLY_VENDIR")))
    monkeypatch.setenv("KAPPLY_HELM", str(external_tool("helm", "KAPPLY_HELM")))


@pytest.mark.usefixtures("helm_tools")
def test_init_from_a_helm_repository_and_release(authors: Authors, helm_repository: str) -> None:
    """vendir.yml written and synced (upstream/ and vendir.lock.yml are vendir's), the PackageBuild's helmTemplate;
    a rerun offers the last answers and fails as kctrl does when vendir cannot fetch; release: the chart templated,
    its images locked, the values schema kctrl generates from the chart's values.yaml."""
    for tool in TOOLS:
        (authors.dir(tool) / "helm").mkdir()
    authors.both("init", "--tty", stdin=f"{HELM_REF}\n3\n{helm_repository}\nhello\n0.1.0\n", cwd="helm")
    authors.both("init", stdin="\n\n\n\n9.9.9\n", cwd="helm")
    authors.both("init", stdin="\n\n\n\n0.1.0\n", cwd="helm")
    authors.both(
        "release", "--version", "1.0.0", "--tag", "v1", "--repo-output", "repo", stdin="{repo:helm}\n", cwd="helm"
    )
    package = yaml.safe_load((authors.dir("kapply") / "helm/repo/packages" / HELM_REF / "1.0.0.yml").read_text())
    replicas = package["spec"]["valuesSchema"]["openAPIv3"]["properties"]["replicas"]
    assert replicas == {"default": 2, "description": "The number of replicas over two lines", "type": "integer"}


@pytest.fixture(scope="module")
def git_repository(oci_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A bare Git repository on this machine holding the ConfigMap under config/, tagged v1.0.0: its file:// URL."""
    root = tmp_path_factory.mktemp("git-repository")
    work, bare = root / "work", root / "bare.git"
    (work / "config").mkdir(parents=True)
    (work / "config" / "config.yml").write_text(CONFIG.format(registry=oci_registry.host))
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for argv in (
        ["init", "-q", "-b", "main", str(work)],
        ["-C", str(work), "add", "."],
        ["-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "config"],
        ["-C", str(work), "tag", "v1.0.0"],
        ["clone", "-q", "--bare", str(work), str(bare)],
    ):
        subprocess.run(["git", *argv], check=True, capture_output=True, env=env, timeout=60)
    return f"file://{bare}"


@pytest.mark.usefixtures("helm_tools")
def test_init_from_a_git_repository_and_release(authors: Authors, git_repository: str) -> None:
    """vendir.yml's git content (URL, reference, include paths) synced by vendir; stopped at the end of its input
    (kctrl's files as far as they got), another source refused; then released (ytt over `upstream`)."""
    for tool in TOOLS:
        (authors.dir(tool) / "git").mkdir()
    authors.both("init", "--tty", stdin=f"git.authoring.corp.com\n4\n{git_repository}\n", cwd="git")
    authors.both("init", "--tty", stdin="\n\n\nv1.0.0\nconfig/*\n", cwd="git")
    authors.both("init", stdin="\n5\n", cwd="git")
    authors.both("release", "--version", "1.0.0", "--tag", "v1", stdin="{repo:git}\n", cwd="git")


# --- app init ---------------------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("helm_tools")
def test_app_init(authors: Authors, helm_repository: str, git_repository: str) -> None:
    """From a local directory (kctrl saves both files before it asks for the content), again with the last answers,
    stopped at the end of its input; then from a Helm chart, where an earlier source was a local directory (the build's
    templates are kept), and back to a local directory (refused: vendir.yml says a Helm chart); from a Git
    repository."""
    for tool in TOOLS:
        (authors.dir(tool) / "app" / "config").mkdir(parents=True)
        (authors.dir(tool) / "app" / "config" / "config.yml").write_text(CONFIG.format(registry="example.com"))
    authors.both("init", "--tty", stdin="hello-app\n1\nconfig\n", cwd="app", group="app")
    authors.both("init", stdin="\n\nconfig,config\n", cwd="app", group="app")
    authors.both("init", "--tty", stdin="\n\n", cwd="app", group="app")
    authors.both("init", "--tty", stdin=f"\n3\n{helm_repository}\nhello\n0.1.0\n", cwd="app", group="app")
    authors.both("init", stdin="\n1\n", cwd="app", group="app")
    for tool in TOOLS:
        (authors.dir(tool) / "app-git").mkdir()
    authors.both("init", stdin=f"\n4\n{git_repository}\nv1.0.0\nconfig/*\n", cwd="app-git", group="app")
    for tool in TOOLS:  # a user's app.yml: read into kctrl's App struct, nothing filled in
        (authors.dir(tool) / "app-helm").mkdir()
        (authors.dir(tool) / "app-helm" / "app.yml").write_text(
            "apiVersion: kappctrl.k14s.io/v1alpha1\nkind: App\nmetadata: {name: mine}\n"
            "spec: {deploy: [], paused: true, x: 1}\n"
        )
    authors.both("init", stdin=f"\n3\n{helm_repository}\nhello\n0.1.0\n", cwd="app-helm", group="app")


# --- what kapply pushed, on the cluster -------------------------------------------------------------------------------


@pytest.mark.e2e
def test_the_repository_kapply_pushed_installs(
    authors: Authors, cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`kapply package repository add` of kapply's repository bundle (by its digest, from package-repository.yml),
    then `kapply package install` of its package: the ConfigMap deployed names the image by the digest the bundle's
    images lock holds."""
    repository = yaml.safe_load((authors.dir("kapply") / "repo" / "package-repository.yml").read_text())
    url = repository["spec"]["fetch"]["imgpkgBundle"]["image"]
    namespace = f"t-authoring-{uuid.uuid4().hex[:5]}"
    kube.create(Namespace.from_dict({"metadata": {"name": namespace}}))
    try:
        with package_cli_controller(cluster, kube, namespace, tmp_path_factory.mktemp("authoring-controller")):
            env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
            for args in (
                ("repository", "add", "-r", "authored", "--url", url, "-n", namespace, "--wait-check-interval=0.5s"),
                (
                    "install",
                    "-i",
                    "hello",
                    "-p",
                    REF,
                    "--version",
                    "1.0.0",
                    "-n",
                    namespace,
                    "--wait-check-interval=0.5s",
                ),
            ):
                done = subprocess.run(
                    [sys.executable, "-m", "kapply", "package", *args],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=120,
                )
                assert done.returncode == 0, done.stdout + done.stderr
            found = kube.get(ConfigMap, "hello", namespace=namespace)  # install waited for the deploy
            digest = authors.registry.digest(f"{authors.registry.host}/authoring/app:{IMAGE_TAG}")
            assert found.data == {"image": f"{authors.registry.host}/authoring/app@{digest}", "greeting": "hello"}
    finally:
        kube.delete(Namespace, namespace)
