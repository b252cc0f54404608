"""`kapply dev` against the real `kctrl dev` (issue 31): the same files reconciled by each, in a namespace of its own,
comparing what a user sees (stdout and stderr normalised as tests/compat/kctrl_harness.py normalises them, exit
status) and what is deployed (the objects, the kapp record `<app>.app`), and that the App or PackageInstall itself
is never created on the cluster. Neither needs a controller.

kctrl dev runs vendir, ytt and kapp from PATH: the real ones ($KAPPLY_VENDIR, built by hack/tools.py; $KAPPLY_YTT,
$KAPPLY_KAPP). Left
out of the comparison: kctrl's `==> Executing <tool> [...]` lines (kapply runs no vendir or kapp), the blank lines
around them, and what the harness leaves out (the output quoted under a stage, `Fetch started`)."""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import ConfigMap, Namespace

from tests.compat.kctrl_harness import TOOLS, CarvelApp, CarvelInstall, Clients, Result
from tests.e2e.controller_harness import create_all, deployer, tool_env
from tests.e2e.harness import Cluster, external_tool

pytestmark = [pytest.mark.compat, pytest.mark.e2e, pytest.mark.timeout(300)]
# kctrl's cmd runner's lines (the tools it runs), and the blank line after each
_EXECUTING = re.compile(r"^==> (Executing|Finished executing) ")

TEMPLATE = """#@ load("@ytt:data", "data")
apiVersion: v1
kind: ConfigMap
metadata:
  name: dev-cm
data:
  greeting: #@ data.values.greeting
"""
VALUES = "#@data/values\n---\ngreeting: default\n"


def app(name: str, fetch: list[Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kappctrl.k14s.io/v1alpha1",
        "kind": "App",
        "metadata": {"name": name, **meta},
        "spec": {
            "serviceAccountName": "deployer",
            "fetch": fetch,
            "template": [{"ytt": {"valuesFrom": [{"secretRef": {"name": "dev-values"}}]}}],
            "deploy": [{"kapp": {}}],
        },
    }


VALUES_SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "dev-values"},
    "stringData": {"values.yml": "greeting: hello\n"},
}
INLINE = [{"inline": {"paths": {"config.yml": TEMPLATE, "values.yml": VALUES}}}]


@pytest.fixture(scope="module")
def clients(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clients]:
    """The two namespaces, each with the `deployer` service account the Apps name; kctrl's tools on a PATH of its
    own (the real vendir, ytt and kapp)."""
    suffix = uuid.uuid4().hex[:5]
    namespaces = {"kctrl": f"c-dev-kctl-{suffix}", "kapply": f"c-dev-kply-{suffix}"}
    for namespace in namespaces.values():
        kube.create(Namespace.from_dict({"metadata": {"name": namespace}}))  # type: ignore[call-overload]
        create_all(kube, deployer(namespace))
    try:
        yield Clients(external_tool("kctrl", "KAPPLY_KCTRL"), cluster.kubeconfig, namespaces)
    finally:
        for namespace in namespaces.values():
            kube.delete(Namespace, namespace)


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """kctrl's environment (its tools on PATH) and kapply's (its ytt)."""
    bin_dir = tmp_path_factory.mktemp("kctrl-tools")
    (bin_dir / "vendir").symlink_to(external_tool("vendir", "KAPPLY_VENDIR"))
    (bin_dir / "ytt").symlink_to(external_tool("ytt", "KAPPLY_YTT"))
    (bin_dir / "kapp").symlink_to(external_tool("kapp", "KAPPLY_KAPP"))
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **tool_env("ytt")}


def dev(clients: Clients, tools: dict[str, str], cwd: Path, *args: str, input: str | None = None) -> list[Result]:
    """`dev ARGS` with each tool at once, each with `-n` its namespace, from `cwd`: kctrl's result, then kapply's."""

    def one(tool: str) -> Result:
        env = {**os.environ, **tools, "KUBECONFIG": str(clients.kubeconfig)}
        for variable in ("KAPP_NAMESPACE", "KCTRL_NAMESPACE", "KCTRL_KUBECONFIG", "KAPP_KUBECONFIG"):
            env.pop(variable, None)
        argv = [*clients.command(tool), "dev", *args, "-n", clients.ns[tool]]
        done = subprocess.run(argv, input=input, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
        return Result(tool, done.returncode, done.stdout, done.stderr)

    with ThreadPoolExecutor(len(TOOLS)) as pool:
        return list(pool.map(one, TOOLS))


def seen(clients: Clients, result: Result) -> list[str]:
    """What a user sees, normalised (kctrl_harness), without the tools' lines and the blank lines."""
    kept = "\n".join(line for line in result.stdout.splitlines() if not _EXECUTING.match(line))
    lines = clients.seen(Result(result.tool, result.code, kept, result.stderr))
    return [line for line in lines if line.strip()]


# kctrl's informer race: its tail gives up when the reconcile ended before its informer's cache was seen synced
# (within kctrl's 100 ms), and says this in place of the tail's last line: kctrl's timing, not behaviour
CACHE_RACE = "App tailing error: Timed out waiting for caches to sync"


def same(clients: Clients, results: list[Result]) -> None:
    theirs, ours = (seen(clients, r) for r in results)
    shown = "\n".join(("kctrl:", *theirs, "", "kapply:", *ours))
    if CACHE_RACE in theirs:  # what kctrl said before the race is compared, and what it said after
        cut = theirs.index(CACHE_RACE)
        assert ours[:cut] == theirs[:cut] and ours[cut].startswith("App tailing error: "), shown
        assert ours[cut + 1 :] == theirs[cut + 1 :], shown
        return
    assert ours == theirs, shown


def write(directory: Path, *docs: Any) -> str:
    path = directory / f"{uuid.uuid4().hex[:6]}.yml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def absent(kube: Client, kind: Any, name: str, namespace: str) -> bool:
    """No such object: a 404 for it, or for its type (kapp-controller's CRDs need not be installed here)."""
    try:
        kube.get(kind, name, namespace=namespace)
    except ApiError as e:
        return e.status.code == 404
    except Exception as e:  # lightkube's HTTP error for a path the API server does not serve
        return getattr(getattr(e, "response", None), "status_code", None) == 404
    return False


def deployed(kube: Client, clients: Clients, name: str, config_map: str) -> list[Any]:
    """Each namespace's ConfigMap `config_map`'s data and whether the kapp record `<name>.app` is there; the App
    and PackageInstall of that name are not."""
    found = []
    for tool in TOOLS:
        namespace = clients.ns[tool]
        assert all(absent(kube, kind, name, namespace) for kind in (CarvelApp, CarvelInstall))
        try:
            data = kube.get(ConfigMap, config_map, namespace=namespace).data
        except ApiError:
            data = None
        record = any(
            cm.metadata and cm.metadata.name == f"{name}.app" for cm in kube.list(ConfigMap, namespace=namespace)
        )
        found.append((data, record))
    return found


def test_an_app_with_its_values_secret_then_delete(
    clients: Clients, tools: dict[str, str], kube: Client, tmp_path: Path
) -> None:
    """`--delete`: kctrl 0.53 panics there (`Not implemented`: its in-memory core client has no Namespaces, which
    kapp-controller reads before deleting) and leaves everything; kapply deletes what the App deployed and its record
    (docs/compatibility.md, Known differences). The lines before kctrl's panic are the same."""
    path = write(tmp_path, app("dev-app", INLINE), VALUES_SECRET)
    same(clients, dev(clients, tools, tmp_path, "-f", path, "--tty"))
    theirs, ours = deployed(kube, clients, "dev-app", "dev-cm")
    assert ours == theirs == ({"greeting": "hello"}, True)
    kctrl, kapply = dev(clients, tools, tmp_path, "-f", path, "--delete", "--tty")
    assert kctrl.code == 2 and "panic: Not implemented" in kctrl.stderr, kctrl
    kctrl_lines = seen(clients, kctrl)
    told = kctrl_lines.index("Reconciling in-memory app/dev-app (namespace: NS) ...") + 1
    assert seen(clients, kapply) == ["exit 0", *kctrl_lines[1:told], "Succeeded", "== stderr"]
    theirs, ours = deployed(kube, clients, "dev-app", "dev-cm")
    assert theirs == ({"greeting": "hello"}, True) and ours == (None, False)


def test_a_package_install_with_its_package(
    clients: Clients, tools: dict[str, str], kube: Client, tmp_path: Path
) -> None:
    """And `--delete`: kctrl 0.53 deletes nothing there (its PackageInstall finds no App in memory, a TODO of its
    code) and says it succeeded, as kapply says it; kapply deletes what the install deployed."""
    fetch = [{"inline": {"paths": {"config.yml": TEMPLATE.replace("dev-cm", "dev-cm-pkgi"), "values.yml": VALUES}}}]
    package = {
        "apiVersion": "data.packaging.carvel.dev/v1alpha1",
        "kind": "Package",
        "metadata": {"name": "dev.example.com.1.0.0"},
        "spec": {
            "refName": "dev.example.com",
            "version": "1.0.0",
            "template": {"spec": {**app("x", fetch)["spec"], "template": [{"ytt": {}}]}},
        },
    }
    install = {
        "apiVersion": "packaging.carvel.dev/v1alpha1",
        "kind": "PackageInstall",
        "metadata": {"name": "dev-pkgi"},
        "spec": {
            "serviceAccountName": "deployer",
            "packageRef": {"refName": "dev.example.com", "versionSelection": {"constraints": "1.0.0"}},
            "values": [{"secretRef": {"name": "dev-values"}}],
        },
    }
    path = write(tmp_path, install, package, VALUES_SECRET)
    same(clients, dev(clients, tools, tmp_path, "-f", path, "--tty"))
    theirs, ours = deployed(kube, clients, "dev-pkgi", "dev-cm-pkgi")
    assert ours == theirs == ({"greeting": "hello"}, True)
    same(clients, dev(clients, tools, tmp_path, "-f", path, "--tty", "--delete"))
    theirs, ours = deployed(kube, clients, "dev-pkgi", "dev-cm-pkgi")
    assert theirs == ({"greeting": "hello"}, True) and ours == (None, False)
    missing = {**install, "spec": {**install["spec"], "packageRef": {"refName": "missing.example.com"}}}  # type: ignore[dict-item]
    same(clients, dev(clients, tools, tmp_path, "-f", write(tmp_path, missing, package), "--tty"))


def test_local_directories_replace_the_fetch_steps(
    clients: Clients, tools: dict[str, str], kube: Client, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "config.yml").write_text(TEMPLATE.replace("dev-cm", "dev-cm-local"))
    (source / "values.yml").write_text(VALUES)
    fetch = [{"git": {"url": "https://example.invalid/nothing.git", "ref": "origin/main"}}]
    local = app("dev-local", fetch, annotations={"kctrl.carvel.dev/local-fetch-0": "src"})
    path = write(tmp_path, local, VALUES_SECRET)
    same(clients, dev(clients, tools, tmp_path, "-f", path, "--local", "--tty"))
    theirs, ours = deployed(kube, clients, "dev-local", "dev-cm-local")
    assert ours == theirs == ({"greeting": "hello"}, True)


def test_a_failing_template(clients: Clients, tools: dict[str, str], tmp_path: Path) -> None:
    failing = [{"inline": {"paths": {"config.yml": TEMPLATE.replace(".greeting", ".nope"), "values.yml": VALUES}}}]
    path = write(tmp_path, app("dev-fail", failing), VALUES_SECRET)
    same(clients, dev(clients, tools, tmp_path, "-f", path, "--tty"))


def test_files_that_hold_no_app(clients: Clients, tools: dict[str, str], tmp_path: Path) -> None:
    same(clients, dev(clients, tools, tmp_path, "-f", write(tmp_path, VALUES_SECRET)))
    same(clients, dev(clients, tools, tmp_path, "-f", write(tmp_path, {"apiVersion": "v1", "kind": "Pod"})))
    same(clients, dev(clients, tools, tmp_path, "-f", "missing.yml"))
