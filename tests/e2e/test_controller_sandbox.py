"""The sandbox (kapply.controller.sandbox) against the controller process: an App whose template step is a bomb of
memory or CPU ends ReconcileFailed naming the limit it broke, the controller's own memory stays small (its peak RSS
is recorded and checked), and an App beside it in the same namespace keeps reconciling. And where fetchers may
connect: without --dangerous-allow-local-sources (which every other test's controller has, for its loopback servers),
a source on the controller's own machine, a link-local one or the API server is refused before any connection.

Issue 28's reproduction: a 400-byte helm chart doubling a string 25 times made helm allocate 1.6 GB, and the App
succeeded (the only bound was the 300 s timeout). Each tool is its own member of the class: helm's templates and
ytt's Starlark can each allocate and spin without end.
"""

from __future__ import annotations

import functools
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap

from tests.e2e import test_controller_hostile as hostile
from tests.e2e.controller_harness import Controllers, inline_app, tool_env
from tests.e2e.harness import Cluster
from tests.e2e.test_controller_hostile import App, assert_refused, outcomes, serve

pytestmark = pytest.mark.e2e
identity = hostile.identity  # the controllers' identity: rbac.yml's rights (a fixture)
controllers = hostile.controllers  # controllers for the test's namespace (a fixture)

MEMORY_MIB = 256
CPU = 3

HELM_BOMB = {
    "chart/Chart.yaml": "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
    "chart/templates/cm.yaml": (
        '{{- $s := "xxxxxxxxxxxxxxxx" }}{{- range $i := until 25 }}{{- $s = printf "%s%s" $s $s }}{{- end }}\n'
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata: {size: '{{ len $s }}'}\n"
    ),
}
YTT_BOMB = {
    "bomb.yml": '#@ s = "x" * 1048576\n#@ def grow(n):\n#@   out = []\n#@   for i in range(n):\n'
    "#@     out.append(s + str(i))\n#@   end\n#@   return out\n#@ end\nsize: #@ len(grow(2000))\n"
}
YTT_SPIN = {
    "spin.yml": "#@ def spin():\n#@   n = 0\n#@   for i in range(1000000000):\n#@     n = n + i\n#@   end\n"
    "#@   return n\n#@ end\nsum: #@ spin()\n"
}


def billion_laughs(levels: int = 30) -> str:
    """A ConfigMap of YAML aliases, each level 9 of the one below: 2 KB that mean 9**30 strings."""
    lines = ['a0: &a0 ["' + "x" * 64 + '"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs}\ndata:\n" + "".join(f"  {x}\n" for x in lines)


def kustomize_doubling(levels: int = 24) -> dict[str, str]:
    """Kustomizations each of which includes the one below twice (under two name prefixes): 2**24 ConfigMaps."""
    files = {
        "kustomization.yaml": f"resources: [l{levels}]\n",
        "l0/kustomization.yaml": "resources: [cm.yaml]\n",
        "l0/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    }
    for level in range(1, levels + 1):
        files[f"l{level}/kustomization.yaml"] = "resources: [a, b]\n"
        for half in "ab":
            files[f"l{level}/{half}/kustomization.yaml"] = f"resources: [../../l{level - 1}]\nnamePrefix: {half}-\n"
    return files


MEMORY = f"ran out of memory (the sandbox's limit is {MEMORY_MIB << 20} bytes per process, --sandbox-memory-mib)"


def peak_rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    assert found, status
    return int(found.group(1)) / 1024


@pytest.mark.parametrize(
    ("files", "template", "message"),
    [
        (HELM_BOMB, [{"helmTemplate": {"path": "chart"}}], f"Templating helm chart: helm {MEMORY}"),
        (YTT_BOMB, [{"ytt": {}}], f"Templating dir: ytt {MEMORY}"),
        (YTT_SPIN, [{"ytt": {}}], f"Templating dir: ytt used more than the sandbox's {CPU} s of CPU (--sandbox-cpu)"),
        ({"laughs.yml": billion_laughs()}, [{"ytt": {}}], f"Templating dir: ytt {MEMORY}"),
        (
            {"kustomization.yaml": "resources: [laughs.yml]\n", "laughs.yml": billion_laughs()},
            [{"kustomize": {}}],
            f"Templating dir: kustomize {MEMORY}",
        ),
        (
            kustomize_doubling(),
            [{"kustomize": {}}],
            f"Templating dir: kustomize used more than the sandbox's {CPU} s of CPU (--sandbox-cpu)",
        ),
        (
            {"laughs.yml": billion_laughs()},
            [{"kbld": {"paths": ["laughs.yml"]}}],
            "Templating dir: kbld failed (exit status 1)",  # kbld's own YAML reader refuses them, saying so:
        ),
    ],
    ids=["helm-memory", "ytt-memory", "ytt-cpu", "ytt-aliases", "kustomize-aliases", "kustomize-cpu", "kbld-aliases"],
)
def test_a_template_bomb_fails_naming_the_limit_and_the_controller_stays_small(
    controllers: Controllers, kube: Client, namespace: str, files: dict[str, str], template: list[dict], message: str
):
    running = serve(
        controllers,
        "helm",
        "kustomize",
        "kbld",
        flags=(f"--sandbox-memory-mib={MEMORY_MIB}", f"--sandbox-cpu={CPU}s", "--sandbox-timeout=60s"),
    )
    before = peak_rss_mib(running.pid)
    kube.create(App(**inline_app("bomb", namespace, files, template=template, syncPeriod="30s")))
    kube.create(
        App(
            **inline_app(
                "neighbour", namespace, {"cm.yml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: neighbour}\n"}
            )
        )
    )
    started = time.monotonic()
    reported = outcomes(kube, namespace, "bomb", "neighbour", timeout=90)
    assert_refused(reported["bomb"], message)
    if "kbld failed" in message:
        assert "document contains excessive aliasing" in reported["bomb"]["template"]["stderr"], reported["bomb"]
    assert reported["neighbour"]["friendlyDescription"] == "Reconcile succeeded"
    peak = peak_rss_mib(running.pid)
    took = time.monotonic() - started
    print(f"controller peak RSS {before:.0f} MiB before, {peak:.0f} MiB after; the bomb ended in {took:.1f}s")
    assert peak < 500, f"the controller's peak RSS was {peak:.0f} MiB"


@pytest.fixture
def listener() -> Iterator[tuple[int, list[str]]]:
    """An http server of the test's own on loopback, recording every request it gets (there must be none)."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], hits
    server.shutdown()
    server.server_close()


def test_sources_on_the_controllers_machine_link_local_ones_and_the_api_server_are_refused(
    controllers: Controllers, kube: Client, namespace: str, listener: tuple[int, list[str]], cluster: Cluster
):
    port, hits = listener
    api_server = urlsplit(yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]["server"])
    sources = {
        "loopback": (
            {"http": {"url": f"http://127.0.0.1:{port}/x.tgz"}},
            "127.0.0.1 is an address of the controller's own machine",
        ),
        "by-name": ({"http": {"url": f"http://localhost:{port}/x.tgz"}}, "localhost resolves to"),
        "metadata": (
            {"http": {"url": "http://169.254.169.254/latest/meta-data/"}},
            "169.254.169.254 is a link-local address",
        ),
        "git": ({"git": {"url": f"http://127.0.0.1:{port}/repo.git", "ref": "main"}}, "127.0.0.1 is an address of"),
        "image": (
            {"image": {"url": f"127.0.0.1:{port}/repo:1"}},
            "127.0.0.1 is an address of the controller's own machine",
        ),
        "api-server": (
            {"http": {"url": f"https://{api_server.hostname}:{api_server.port}/api"}},
            "is an address of the controller's own machine",
        ),
    }
    controllers.start(
        "--leader-elect=false", "--dangerous-allow-plain-http-registries", env=tool_env("ytt"), local_sources=False
    )
    for name, (source, _) in sources.items():
        kube.create(App(**inline_app(name, namespace, {}, fetch=[source], syncPeriod="30s")))
    reported = outcomes(kube, namespace, *sources, timeout=60)
    for name, (_, message) in sources.items():
        assert_refused(reported[name], message)
        assert reported[name]["fetch"]["exitCode"] != 0 and "template" not in reported[name], reported[name]
    assert hits == []  # nothing reached the server


@pytest.fixture
def files_server(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """An http server of the test's own on loopback serving the files of a directory (git's "dumb" protocol)."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield served, server.server_address[1]
    server.shutdown()
    server.server_close()


def test_git_fetches_over_http_in_the_fetch_stages_view_of_the_files(
    controllers: Controllers, kube: Client, namespace: str, files_server: tuple[Path, int], tmp_path: Path
):
    # Without --dangerous-allow-file-urls, git runs in the fetch stage's view of the files (the system's programs, the
    # tools, the job's directory, and of /etc only names and CA certificates: tests/unit/test_confine.py shows what
    # it sees), and still fetches over the network.
    served, port = files_server
    work = tmp_path / "work"
    hostile.repository(work, {"cm.yml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\n"})
    hostile.git("clone", "-q", "--bare", str(work), str(served / "repo.git"), cwd=tmp_path)
    hostile.git("update-server-info", cwd=served / "repo.git")
    running = controllers.start("--leader-elect=false", env=tool_env("ytt"))
    source = {"git": {"url": f"http://127.0.0.1:{port}/repo.git", "ref": "origin/main"}}
    kube.create(App(**inline_app("git", namespace, {}, fetch=[source], syncPeriod="30s")))
    reported = outcomes(kube, namespace, "git", timeout=60)
    assert reported["git"]["friendlyDescription"] == "Reconcile succeeded", reported["git"]
    assert kube.get(ConfigMap, "fetched", namespace=namespace).metadata.name == "fetched"
    assert "fetch-files: on" in controllers.logs_by_name["controller"].read_text(), running.pid


def zeros_repository(path: Path, mib: int) -> None:
    """A bare repository whose one commit holds `mib` MiB of zeros: a pack of a few hundred bytes."""
    hostile.git("init", "-q", "--bare", "--initial-branch=main", str(path), cwd=path.parent)
    zeros = subprocess.Popen(
        ["git", "hash-object", "-w", "--stdin"], cwd=path, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert zeros.stdin is not None and zeros.stdout is not None
    chunk = bytes(1 << 20)
    for _ in range(mib):
        zeros.stdin.write(chunk)
    zeros.stdin.close()
    blob = zeros.stdout.read().decode().strip()
    assert zeros.wait() == 0
    tree = subprocess.run(
        ["git", "mktree"],
        cwd=path,
        input=f"100644 blob {blob}\tzeros.yml\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    commit = subprocess.run(
        ["git", *identity, "commit-tree", tree, "-m", "zeros"], cwd=path, capture_output=True, text=True, check=True
    ).stdout.strip()
    hostile.git("update-ref", "refs/heads/main", commit, cwd=path)
    hostile.git("repack", "-q", "-a", "-d", cwd=path)
    hostile.git("update-server-info", cwd=path)


def test_a_git_blob_of_zeros_bigger_than_the_memory_limit_fails_naming_it(
    controllers: Controllers, kube: Client, namespace: str, files_server: tuple[Path, int]
):
    # 300 MiB of zeros packed in a few hundred bytes: git holds a blob whole in memory to check it out.
    served, port = files_server
    zeros_repository(served / "zeros.git", 300)
    running = controllers.start("--leader-elect=false", f"--sandbox-memory-mib={MEMORY_MIB}", env=tool_env("ytt"))
    before = peak_rss_mib(running.pid)
    source = {"git": {"url": f"http://127.0.0.1:{port}/zeros.git", "ref": "origin/main"}}
    kube.create(App(**inline_app("zeros", namespace, {}, fetch=[source], syncPeriod="30s")))
    reported = outcomes(kube, namespace, "zeros", timeout=60)
    assert_refused(reported["zeros"], f"git {MEMORY}")
    peak = peak_rss_mib(running.pid)
    print(f"controller peak RSS {before:.0f} MiB before, {peak:.0f} MiB after")
    assert peak < 500, f"the controller's peak RSS was {peak:.0f} MiB"
