"""Hostile Apps: what an App's author controls (the files its sources hold, its paths, refs, URLs and kustomizations)
turned against the controller, which runs with far more rights than the author (here: a copy of rbac.yml's
ClusterRole, which reads every Secret of the cluster) on a machine whose disk the author must never reach.

Every target is a canary the test itself plants in its temporary directory, never a real system path: a directory of
files (which a move or delete attack would empty) and files holding a unique token `CANARY-<uuid>`, next to a
kustomization, a chart, a values file and a git repository holding the token too. Each attacking App runs in the
test's namespace with a service account that has a namespaced Role only, and each test checks that:

- the App ends ReconcileFailed with a message naming what was refused,
- the canary is whole,
- the token (and, for the attack on the controller's kubeconfig, the controller's bearer token) appears nowhere: not
  in any ConfigMap (what the App deploys, its app record and app-changes), Secret (decoded), Event or App (status
  included) of the namespace, nor in the controller's log.

Hard links get no e2e case: no source kapply fetches can make one (git stores content, inline and pathsFrom write
new files, and a clone's files are copied out), so there is nothing an App could send; the check that refuses one
in a fetched tree is covered in tests/unit/test_controller_fetch.py.

Run against the code before this suite (fetch's paths checked lexically only, symlinks copied as they came, the ref
given to `git checkout`, kustomize run as it was, no limits), every test but test_submodules_are_never_fetched fails:
the subPath test finds the canary directory emptied (its files moved into the App's temporary directory and deleted
with it); the helm, paths and file-URL tests find the canary's token (and the controller's bearer token) in deployed
ConfigMaps; the git test finds the token in the App's status (git read the file `--pathspec-from-file=` named); the
kustomize test finds its http base fetched and the token deployed; the limits test sees the Apps over the limits
deployed; the ytt test fails on its message only (ytt itself refuses a symlink that leaves its inputs). Some Apps of
the failing tests were refused before as well (the `--upload-pack` and `ext::` URLs by git, `..` and absolute paths
by their text): they guard against a regression.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap, Event, Secret

from tests.e2e.controller_harness import (
    App,
    Controllers,
    Identity,
    condition,
    config_map,
    config_map_data,
    controller_identity,
    create_all,
    deployer,
    inline_app,
    install_crd,
    status,
    tool_env,
)
from tests.e2e.harness import Cluster, eventually
from tests.e2e.test_controller_sources import git, succeeded

pytestmark = pytest.mark.e2e

UP = "/".join([".."] * 40)  # from any directory up to /: `..` at / stays at /


def climb(path: Path) -> str:
    """A relative path that reaches the absolute `path` from wherever it is resolved."""
    return f"{UP}/{str(path).lstrip('/')}"


# --- the canary -------------------------------------------------------------------------------------------------------


@dataclass
class Canary:
    root: Path
    token: str
    original: dict[str, str] = field(default_factory=dict)

    @property
    def token_file(self) -> Path:
        return self.root / "token.txt"

    @property
    def directory(self) -> Path:  # what a move or delete attack would empty
        return self.root / "dir"

    @property
    def kustomization(self) -> Path:  # a kustomization deploying the token
        return self.root / "kustomize"

    @property
    def chart(self) -> Path:  # a chart deploying the token
        return self.root / "chart"

    @property
    def values(self) -> Path:  # a values file holding the token (`stolen: CANARY-...`)
        return self.root / "values"

    @property
    def repo(self) -> Path:  # a git repository (a kustomization deploying the token)
        return self.root / "repo"

    def contents(self) -> dict[str, str]:
        """Every file and directory of the canary (its repository's .git aside), with the files' content."""
        return {
            str(path.relative_to(self.root)): "<dir>" if path.is_dir() else path.read_text()
            for path in sorted(self.root.rglob("*"))
            if ".git" not in path.relative_to(self.root).parts
        }

    def assert_whole(self) -> None:
        assert self.contents() == self.original, "the canary was changed"


@pytest.fixture
def canary(tmp_path: Path) -> Canary:
    token = f"CANARY-{uuid.uuid4()}"
    planted = Canary(tmp_path / "canary", token)
    files = {
        "token.txt": token,
        "dir/a.txt": token,
        "dir/b.txt": "b",
        "dir/nested/c.txt": token,
        "kustomize/kustomization.yaml": "resources: [cm.yaml]\n",
        "kustomize/cm.yaml": config_map("canary-kustomize", stolen=token),
        "chart/Chart.yaml": "apiVersion: v2\nname: canary\nversion: 0.1.0\n",
        "chart/templates/cm.yaml": config_map("canary-chart", stolen=token),
        "values/values.yml": f"stolen: {token}\n",
        "repo/kustomization.yaml": "resources: [cm.yml]\n",
        "repo/cm.yml": config_map("canary-repo", stolen=token),
    }
    for relative, content in files.items():
        (planted.root / relative).parent.mkdir(parents=True, exist_ok=True)
        (planted.root / relative).write_text(content)
    git("init", "-q", "--initial-branch=main", cwd=planted.repo)
    git("add", "-A", cwd=planted.repo)
    git("commit", "-q", "-m", "canary", cwd=planted.repo)
    planted.original = planted.contents()
    return planted


def repository(path: Path, files: dict[str, str], links: dict[str, str] | None = None) -> str:
    """A git repository with `files` and symlinks (`links`: name -> target) committed on main; its file:// URL."""
    path.mkdir(parents=True)
    for relative, content in files.items():
        (path / relative).parent.mkdir(parents=True, exist_ok=True)
        (path / relative).write_text(content)
    for relative, target in (links or {}).items():
        (path / relative).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path / relative)
    git("init", "-q", "--initial-branch=main", cwd=path)
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", "hostile", cwd=path)
    return f"file://{path}"


def git_fetch(url: str, ref: str = "main", sub_path: str = "") -> list[dict]:
    return [{"git": {"url": url, "ref": ref, **({"subPath": sub_path} if sub_path else {})}}]


def app(name: str, namespace: str, fetch: list[dict], template: list[dict] | None = None) -> App:
    return App(**inline_app(name, namespace, {}, fetch=fetch, template=template or [{"ytt": {}}]))


# --- what the App got, and what leaked -------------------------------------------------------------------------------


def outcomes(kube: Client, namespace: str, *apps: str, timeout: float = 30) -> dict[str, dict]:
    """Each App's status once a reconcile of it ended, well or not: the damage an attack did is checked before its
    message, so that a test run against code that lets an attack through shows what the attack did."""
    for name in apps:
        eventually(
            lambda name=name: condition(kube, namespace, name) in ("ReconcileSucceeded", "ReconcileFailed"),
            timeout=timeout,
            what=f"a reconcile of {name} to end",
        )
    return {name: status(kube, namespace, name) for name in apps}


def assert_refused(reported: dict, message: str) -> None:
    """The App ended ReconcileFailed (as kapp-controller reports it) with `message` in its description."""
    assert [(c["type"], c["status"]) for c in reported["conditions"]] == [("ReconcileFailed", "True")], reported
    assert reported["friendlyDescription"].startswith("Reconcile failed: "), reported
    assert message in reported["friendlyDescription"], reported
    assert reported["usefulErrorMessage"] and reported["consecutiveReconcileFailures"] >= 1, reported


def _texts(kube: Client, namespace: str, controllers: Controllers) -> dict[str, str]:
    """Everything of the namespace an App's author could read back, and the controllers' logs, by where it is."""
    texts = {}
    for cm in kube.list(ConfigMap, namespace=namespace):
        texts[f"ConfigMap {cm.metadata.name}"] = json.dumps(cm.to_dict())
    for secret in kube.list(Secret, namespace=namespace):
        decoded = [base64.b64decode(v).decode(errors="replace") for v in (secret.data or {}).values()]
        texts[f"Secret {secret.metadata.name}"] = json.dumps(secret.to_dict()) + "".join(decoded)
    for event in kube.list(Event, namespace=namespace):
        texts[f"Event {event.metadata.name}"] = json.dumps(event.to_dict())
    for found in kube.list(App, namespace=namespace):
        texts[f"App {found.metadata.name}"] = json.dumps(found.to_dict())
    for name, log in controllers.logs_by_name.items():
        texts[f"the log of {name}"] = log.read_text() if log.exists() else ""
    return texts


def assert_nowhere(kube: Client, namespace: str, controllers: Controllers, *secrets: str) -> None:
    leaks = [where for where, text in _texts(kube, namespace, controllers).items() if any(s in text for s in secrets)]
    assert not leaks, f"leaked into {leaks}"


# --- fixtures ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def identity(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Identity]:
    """The controllers' identity: rbac.yml's rights, and a kubeconfig with a bearer token in a temporary directory."""
    install_crd(cluster.kubeconfig, kube)
    with controller_identity(kube, cluster.kubeconfig, tmp_path_factory.mktemp("identity")) as made:
        yield made


@pytest.fixture
def controllers(identity: Identity, kube: Client, namespace: str, tmp_path: Path) -> Iterator[Controllers]:
    """Controllers for the test's namespace, where the `deployer` service account has a namespaced Role."""
    create_all(kube, deployer(namespace))
    logs = tmp_path / "logs"
    logs.mkdir()
    running = Controllers(identity.kubeconfig, kube, namespace, logs)
    try:
        yield running
    finally:
        running.close()


def serve(
    controllers: Controllers, *tools: str, flags: tuple[str, ...] = ("--dangerous-allow-file-urls",), **env: str
) -> subprocess.Popen:
    """One controller with ytt and `tools`; by default its Apps may fetch file:// URLs (the attacks' repositories
    are local), as the other controller tests allow."""
    return controllers.start("--leader-elect=false", *flags, env={**tool_env("ytt", *tools), **env})


# --- symlinks ---------------------------------------------------------------------------------------------------------


def test_a_sub_path_through_a_symlink_moves_deletes_and_deploys_nothing(
    controllers: Controllers, kube: Client, namespace: str, tmp_path: Path, canary: Canary
):
    # The repository holds d/etc -> the canary directory (absolute) and d/up -> / (relative, climbing out): a subPath
    # through either would, by the old code, have the canary's files moved into the App's temporary directory, then
    # deleted with it.
    url = repository(
        tmp_path / "repo",
        {"d/cm.yml": config_map("plain", a="b")},
        links={"d/etc": str(canary.directory), "d/up": UP},
    )
    through_up = f"d/up/{str(canary.directory).lstrip('/')}"
    kube.create(app("absolute-link", namespace, git_fetch(url, sub_path="d/etc")))
    kube.create(app("climbing-link", namespace, git_fetch(url, sub_path=through_up)))
    serve(controllers)

    reported = outcomes(kube, namespace, "absolute-link", "climbing-link")
    canary.assert_whole()
    assert_nowhere(kube, namespace, controllers, canary.token)
    assert_refused(reported["absolute-link"], "Invalid path: d/etc (a symlink on it leads outside the repository)")
    assert_refused(reported["climbing-link"], f"Invalid path: {through_up} (a symlink on it leads outside")


CHART_YAML = "apiVersion: v2\nname: thief\nversion: 0.1.0\n"


def stolen_config_map(data: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\ndata:\n{data}\n"


def test_helm_reads_nothing_through_a_symlink_not_even_the_controllers_kubeconfig(
    controllers: Controllers, kube: Client, namespace: str, tmp_path: Path, canary: Canary, identity: Identity
):
    get = stolen_config_map('  stolen: {{ .Files.Get "stolen.txt" | quote }}')
    glob = stolen_config_map('{{ (.Files.Glob "files/*").AsConfig | indent 2 }}')
    kubeconfig = stolen_config_map('  stolen: {{ .Files.Get "kubeconfig.txt" | quote }}')
    chart = {"chart/Chart.yaml": CHART_YAML}
    attacks = {
        # name: (files, symlinks, the symlink refused)
        "files-get": ({**chart, "chart/templates/cm.yaml": get}, {"chart/stolen.txt": str(canary.token_file)}),
        "files-glob": ({**chart, "chart/templates/cm.yaml": glob}, {"chart/files": climb(canary.directory)}),
        "kubeconfig": (
            {**chart, "chart/templates/cm.yaml": kubeconfig},
            {"chart/kubeconfig.txt": str(identity.kubeconfig)},
        ),
    }
    for name, (files, links) in attacks.items():
        url = repository(tmp_path / name, files, links)
        kube.create(app(name, namespace, git_fetch(url), [{"helmTemplate": {"path": "chart"}}]))
    serve(controllers, "helm")

    reported = outcomes(kube, namespace, *attacks)
    canary.assert_whole()
    assert_nowhere(kube, namespace, controllers, canary.token, identity.token)
    assert config_map_data(kube, namespace, "stolen") is None
    for name, (_, links) in attacks.items():
        (link,) = links
        expected = f"Fetching resources: Checking symlinks: Expected symlink '{link}' to point within the fetched"
        assert_refused(reported[name], expected)
        assert reported[name]["fetch"]["exitCode"] != 0 and "template" not in reported[name]  # before helm ran


def test_ytt_data_read_of_a_symlink_reads_nothing(
    controllers: Controllers, kube: Client, namespace: str, tmp_path: Path, canary: Canary
):
    config = '#@ load("@ytt:data", "data")\n' + stolen_config_map('  stolen: #@ data.read("stolen.txt")')
    url = repository(tmp_path / "repo", {"config.yml": config}, {"stolen.txt": str(canary.token_file)})
    kube.create(app("data-read", namespace, git_fetch(url)))
    serve(controllers)

    reported = outcomes(kube, namespace, "data-read")
    assert_nowhere(kube, namespace, controllers, canary.token)
    assert_refused(reported["data-read"], "Checking symlinks: Expected symlink 'stolen.txt' to point within")


# --- kustomize --------------------------------------------------------------------------------------------------------


@dataclass
class Web:
    url: str
    requests: list[str]


@pytest.fixture
def web(canary: Canary) -> Iterator[Web]:
    """An HTTP server on loopback serving a ConfigMap with the canary's token (what a remote kustomize resource
    would GET), recording every request."""
    requests: list[str] = []
    body = config_map("canary-web", stolen=canary.token).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            requests.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Web(f"http://127.0.0.1:{server.server_port}/cm.yaml", requests)
    finally:
        server.shutdown()
        server.server_close()


def test_kustomize_builds_nothing_from_outside_the_fetched_files(
    controllers: Controllers, kube: Client, namespace: str, canary: Canary, web: Web
):
    # kustomize's own load restrictor lets a base leave the kustomization's directory, and it clones git URLs and
    # GETs http ones itself: every one would deploy the canary's token.
    bases = {
        "out-of-tree": climb(canary.kustomization),
        "file-url": f"file://{canary.repo}",
        "http-url": web.url,
        "git-url": "git::https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.0.0",
    }
    for name, base in bases.items():
        files = {
            "overlay/kustomization.yaml": yaml.safe_dump({"resources": ["../base"]}),  # within: fine
            "base/kustomization.yaml": yaml.safe_dump({"resources": [base]}),
        }
        kube.create(App(**inline_app(name, namespace, files, template=[{"kustomize": {"path": "overlay"}}])))
    serve(controllers, "kustomize")

    reported = outcomes(kube, namespace, *bases)
    assert web.requests == []
    canary.assert_whole()
    assert_nowhere(kube, namespace, controllers, canary.token)
    for name, base in bases.items():
        why = "to stay within the fetch directory" if name == "out-of-tree" else "to be a path (remote bases"
        expected = f"Templating dir: Expected kustomization 'base/kustomization.yaml' resources[0] '{base}' {why}"
        assert_refused(reported[name], expected)


# --- git --------------------------------------------------------------------------------------------------------------


def test_git_refs_and_urls_never_become_options_or_commands(
    controllers: Controllers, kube: Client, namespace: str, tmp_path: Path, canary: Canary
):
    url = repository(tmp_path / "repo", {"cm.yml": config_map("plain", a="b")})
    pwned = canary.root / "pwned"
    attacks = {
        # name: (url, ref, message)
        "pathspec-ref": (
            url,
            f"--pathspec-from-file={canary.token_file}",
            "Fetching resources: Expected spec.fetch[0].git.ref not to start with '-'",
        ),
        "upload-pack-url": (
            f"--upload-pack=touch {pwned}",
            "main",
            "Fetching resources: Expected spec.fetch[0].git.url not to start with '-'",
        ),
        "ext-url": (
            f"ext::sh -c touch% {pwned}",
            "main",
            "Fetching resources: Expected spec.fetch[0].git.url not to name a git remote helper",
        ),
        "ssh-option-host": (
            f"ssh://-oProxyCommand=touch%20{pwned}/repo",
            "main",
            "Expected spec.fetch[0].git.url to have no host or user starting with '-'",
        ),
    }
    for name, (source, ref, _) in attacks.items():
        kube.create(app(name, namespace, git_fetch(source, ref)))
    serve(controllers)

    reported = outcomes(kube, namespace, *attacks)
    assert not pwned.exists()
    canary.assert_whole()
    assert_nowhere(kube, namespace, controllers, canary.token)
    for name, (_, _, message) in attacks.items():
        assert_refused(reported[name], message)


def test_without_the_flag_file_urls_and_local_paths_are_refused(
    controllers: Controllers, kube: Client, namespace: str, canary: Canary
):
    kube.create(app("file-url", namespace, git_fetch(f"file://{canary.repo}"), [{"kustomize": {}}]))
    kube.create(app("local-path", namespace, git_fetch(str(canary.repo)), [{"kustomize": {}}]))
    kube.create(App(**inline_app("plain", namespace, {"cm.yml": config_map("plain", a="b")})))
    serve(controllers, "kustomize", flags=())

    reported = outcomes(kube, namespace, "file-url", "local-path")
    assert_nowhere(kube, namespace, controllers, canary.token)
    message = "Expected spec.fetch[0].git.url to be an https, http or ssh URL: file:// URLs and local paths read"
    for name in ("file-url", "local-path"):
        assert_refused(reported[name], message)
    succeeded(kube, namespace, "plain")


def test_submodules_are_never_fetched(
    controllers: Controllers, kube: Client, namespace: str, tmp_path: Path, canary: Canary
):
    main = tmp_path / "main"
    url = repository(main, {"cm.yml": config_map("main", a="b")})
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", f"file://{canary.repo}", "sub", cwd=main)
    git("commit", "-q", "-m", "submodule", cwd=main)
    assert (main / "sub" / "cm.yml").exists()  # the submodule is there for whoever recurses into it
    kube.create(app("with-submodule", namespace, git_fetch(url)))
    serve(controllers)

    succeeded(kube, namespace, "with-submodule")
    assert config_map_data(kube, namespace, "main") == {"a": "b"}
    assert config_map_data(kube, namespace, "canary-repo") is None
    assert_nowhere(kube, namespace, controllers, canary.token)


# --- paths ------------------------------------------------------------------------------------------------------------

CHART = {
    "chart/Chart.yaml": CHART_YAML,
    "chart/templates/cm.yaml": stolen_config_map("  stolen: {{ .Values.stolen | quote }}"),
    "chart/values.yaml": "stolen: nothing\n",
}


def test_paths_that_leave_the_fetch_directory_are_refused(
    controllers: Controllers, kube: Client, namespace: str, tmp_path: Path, canary: Canary
):
    plain = {"cm.yml": config_map("plain", a="b")}
    url = repository(tmp_path / "repo", plain)
    linked_chart = repository(tmp_path / "linked-chart", plain, links={"charts": str(canary.chart)})
    linked_values = repository(tmp_path / "linked-values", CHART, links={"vals": str(canary.values)})
    planted = canary.directory / "planted"
    attacks = {
        # name: (fetch, template, message)
        "fetch-path-up": (
            [{"path": climb(planted), "inline": {"paths": plain}}],
            None,
            f"Fetching resources: Invalid path: {climb(planted)}",
        ),
        "fetch-path-absolute": (
            [{"path": str(planted), "inline": {"paths": plain}}],
            None,
            f"Fetching resources: Invalid path: {planted}",
        ),
        "sub-path-up": (
            git_fetch(url, sub_path=climb(canary.directory)),
            None,
            f"Invalid path: {climb(canary.directory)}",
        ),
        "ytt-paths-up": (
            [{"inline": {"paths": plain}}],
            [{"ytt": {"paths": [climb(canary.kustomization)]}}],
            f"Templating dir: Invalid path: {climb(canary.kustomization)}",
        ),
        "values-path-up": (
            [{"inline": {"paths": CHART}}],
            [{"helmTemplate": {"path": "chart", "valuesFrom": [{"path": climb(canary.values / "values.yml")}]}}],
            f"Templating helm chart: Invalid path: {climb(canary.values / 'values.yml')}",
        ),
        "helm-path-through-link": (
            git_fetch(linked_chart),
            [{"helmTemplate": {"path": "charts"}}],
            "Checking symlinks: Expected symlink 'charts' to point within the fetched directory",
        ),
        "values-through-link": (
            git_fetch(linked_values),
            [{"helmTemplate": {"path": "chart", "valuesFrom": [{"path": "vals/values.yml"}]}}],
            "Checking symlinks: Expected symlink 'vals' to point within the fetched directory",
        ),
    }
    for name, (fetch, template, _) in attacks.items():
        kube.create(app(name, namespace, fetch, template))
    serve(controllers, "helm")

    reported = outcomes(kube, namespace, *attacks)
    assert not planted.exists()
    canary.assert_whole()
    assert_nowhere(kube, namespace, controllers, canary.token)
    assert config_map_data(kube, namespace, "stolen") is None
    for name, (_, _, message) in attacks.items():
        assert_refused(reported[name], message)


# --- limits -----------------------------------------------------------------------------------------------------------


def test_fetches_over_the_limits_fail_naming_the_limit_and_the_controller_serves_the_others(
    controllers: Controllers, kube: Client, namespace: str, tmp_path: Path
):
    limits = {"KAPPLY_FETCH_MAX_BYTES": "65536", "KAPPLY_FETCH_MAX_FILES": "50", "KAPPLY_FETCH_MAX_DEPTH": "8"}
    big = "#" + "x" * 100_000 + "\n"
    url = repository(tmp_path / "big", {"cm.yml": config_map("big-git", a="b"), "zeros.txt": "0" * 200_000})
    apps = {
        "big-inline": ({"cm.yml": config_map("big-inline", a="b"), "big.yml": big}, "KAPPLY_FETCH_MAX_BYTES"),
        "many-files": ({f"f{i}.yml": config_map(f"f{i}", a="b") for i in range(60)}, "KAPPLY_FETCH_MAX_FILES"),
        "deep": ({"/".join(["d"] * 10) + "/cm.yml": config_map("deep", a="b")}, "KAPPLY_FETCH_MAX_DEPTH"),
    }
    for name, (files, _) in apps.items():
        kube.create(App(**inline_app(name, namespace, files)))
    kube.create(app("big-git", namespace, git_fetch(url)))
    kube.create(App(**inline_app("fine", namespace, {"cm.yml": config_map("fine", a="b")})))
    process = serve(controllers, **limits)

    reported = outcomes(kube, namespace, *apps, "big-git")
    for name, (_, limit) in apps.items():
        assert_refused(reported[name], "Fetching resources: Checking size: ")
        assert limit in reported[name]["friendlyDescription"]
    assert_refused(reported["big-git"], "Checking size: Expected at most 65536 bytes of files (KAPPLY_FETCH_MAX_BYTES)")
    succeeded(kube, namespace, "fine")
    for name in (*apps, "big-git"):
        assert config_map_data(kube, namespace, name) is None
    assert process.poll() is None
