"""Running the kapply controller as a real process against the test cluster, and writing Apps for it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import yaml
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.core_v1 import ConfigMap, Namespace

from tests.e2e.harness import eventually, external_tool, parse_json_output

REPO = Path(__file__).resolve().parents[2]
App = create_namespaced_resource("kapply.dev", "v1alpha1", "App", "apps")


@contextmanager
def controller(
    kubeconfig: Path, log: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen]:
    """`kapply controller` with short sync periods, logging to `log`; stopped (SIGTERM) afterwards."""
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "kapply", "controller", "--min-sync-period=1s", *args],
            env={**os.environ, "KUBECONFIG": str(kubeconfig), **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def deployer(namespace: str, name: str = "deployer", rules: list[dict[str, Any]] | None = None) -> str:
    """A ServiceAccount with a Role over its namespace (all of it unless `rules`), as YAML."""
    rules = rules or [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    return yaml.safe_dump_all(
        [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}},
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": name, "namespace": namespace},
                "rules": rules,
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": name, "namespace": namespace},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            },
        ]
    )


def inline_app(name: str, namespace: str, files: dict[str, str], **spec: Any) -> dict[str, Any]:
    """An App deploying `files` (inline) through ytt, with the `deployer` service account."""
    return {
        "apiVersion": "kapply.dev/v1alpha1",
        "kind": "App",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "serviceAccountName": "deployer",
            "syncPeriod": "2s",
            "fetch": [{"inline": {"paths": files}}],
            "template": [{"ytt": {}}],
            "deploy": [{"kapp": {}}],
            **spec,
        },
    }


def status(kube: Client, namespace: str, name: str) -> dict[str, Any]:
    return dict(kube.get(App, name, namespace=namespace).get("status") or {})


def condition(kube: Client, namespace: str, name: str) -> str:
    conditions = status(kube, namespace, name).get("conditions") or [{}]
    return str(conditions[0].get("type", ""))


# --- installing, and the tools the controller runs -------------------------------------------------------------------

CONTROLLER_NAMESPACE = "kapply-system"
CONTROLLER_APP = "kapply-controller"  # the app docs/reconciler.md installs the CRD and RBAC as
CRD_APP = "kapply-crds"  # the app test_controller.py installs the CRD alone as
CONFIG = REPO / "config" / "controller"


def kapply(kubeconfig: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`kapply ARGS` against the test cluster; it must succeed."""
    result = subprocess.run(
        [sys.executable, "-m", "kapply", *args],
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"kapply {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return result


def _ensure_namespace(kube: Client, name: str) -> None:
    try:
        kube.create(Namespace.from_dict({"metadata": {"name": name}}))
    except ApiError as e:
        if e.status.code != 409:
            raise


def _app_exists(kube: Client, name: str) -> bool:
    try:
        kube.get(ConfigMap, name, namespace=CONTROLLER_NAMESPACE)
    except ApiError as e:
        if e.status.code == 404:
            return False
        raise
    return True


def install_crd(kubeconfig: Path, kube: Client) -> None:
    """The CRD alone, as test_controller.py installs it (the app kapply-crds in kapply-system)."""
    _ensure_namespace(kube, CONTROLLER_NAMESPACE)
    kapply(kubeconfig, "deploy", "-a", CRD_APP, "-n", CONTROLLER_NAMESPACE, "-y", "-f", str(CONFIG / "crd.yml"))


@contextmanager
def installed_controller(kubeconfig: Path, kube: Client) -> Iterator[None]:
    """The CRD and the controller's RBAC installed as docs/reconciler.md says (`kapply deploy -a kapply-controller -n
    kapply-system -f crd.yml -f rbac.yml`); afterwards the CRD is left as the app kapply-crds and the RBAC removed.

    A CRD belongs to one app, and other test modules install it alone as kapply-crds: that app's record is renamed
    to kapply-controller first (the CRD goes with it, since ownership is the record's label value, not its name), and
    renamed back afterwards, then deployed with the CRD alone, which deletes the RBAC objects."""
    _ensure_namespace(kube, CONTROLLER_NAMESPACE)
    if _app_exists(kube, CRD_APP) and not _app_exists(kube, CONTROLLER_APP):
        kapply(kubeconfig, "rename", "-a", CRD_APP, "-n", CONTROLLER_NAMESPACE, "--new-name", CONTROLLER_APP, "-y")
    files = ("-f", str(CONFIG / "crd.yml"), "-f", str(CONFIG / "rbac.yml"))
    kapply(kubeconfig, "deploy", "-a", CONTROLLER_APP, "-n", CONTROLLER_NAMESPACE, "-y", *files)
    try:
        yield
    finally:
        kapply(kubeconfig, "rename", "-a", CONTROLLER_APP, "-n", CONTROLLER_NAMESPACE, "--new-name", CRD_APP, "-y")
        install_crd(kubeconfig, kube)


TOOL_VARIABLES = {"ytt": "KAPPLY_YTT", "helm": "KAPPLY_HELM", "kustomize": "KAPPLY_KUSTOMIZE"}


def tool_env(*tools: str) -> dict[str, str]:
    """$KAPPLY_YTT, $KAPPLY_HELM, $KAPPLY_KUSTOMIZE (those of `tools`) for a controller: the tool the environment
    names (a named file that is missing fails the test), else the one on PATH; skips the test when one is nowhere."""
    return {TOOL_VARIABLES[tool]: str(external_tool(tool, TOOL_VARIABLES[tool])) for tool in tools}


# --- Apps and what they leave behind -------------------------------------------------------------------------------


def create_all(kube: Client, text: str) -> None:
    """Create each document of a YAML stream (Apps included)."""
    for doc in yaml.safe_load_all(text):
        kube.create(App(**doc) if doc["kind"] == "App" else from_dict(doc))


def delete_apps(kube: Client, namespace: str, timeout: float = 60) -> None:
    """Delete the namespace's Apps and wait until they are gone (their finalizer needs a running controller)."""
    for app in kube.list(App, namespace=namespace):
        kube.delete(App, app.metadata.name, namespace=namespace)
    eventually(lambda: not list(kube.list(App, namespace=namespace)), timeout=timeout, what="the Apps deleted")


def config_map(name: str, **data: str) -> str:
    """A ConfigMap manifest (no namespace: the App's) as YAML."""
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})


def config_map_data(kube: Client, namespace: str, name: str) -> dict[str, str] | None:
    """A ConfigMap's data, or None when it does not exist."""
    try:
        return dict(kube.get(ConfigMap, name, namespace=namespace).data or {})
    except ApiError as e:
        if e.status.code == 404:
            return None
        raise


def exists(kube: Client, kind: type, name: str, namespace: str) -> bool:
    try:
        kube.get(kind, name, namespace=namespace)
    except ApiError as e:
        if e.status.code == 404:
            return False
        raise
    return True


def app_changes(kubeconfig: Path, namespace: str, app: str) -> list[dict[str, str]]:
    """The app-changes of a kapp app (`<App name>.app`), oldest first, as `kapply app-change list --json` gives them
    (name, started_at, finished_at, successful, description)."""
    out = kapply(kubeconfig, "app-change", "list", "-a", app, "-n", namespace, "--json")
    rows: list[dict[str, str]] = parse_json_output(out.stdout).table("app changes").rows
    return sorted(rows, key=lambda row: (row["started_at"], row["name"]))


def log_lines(path: Path, *needles: str) -> str:
    """The lines of a controller's log that mention any of `needles` (printed when a test fails)."""
    if not path.exists():
        return ""
    return "".join(line for line in path.read_text().splitlines(True) if any(n in line for n in needles))


class Controllers:
    """Controller processes for one test's namespace (`-n NAMESPACE`, so that they leave every other test's Apps
    alone), each logging to its own file. On close, the namespace's Apps are deleted while they still run, then they
    stop; their logs' lines about the namespace are printed (pytest shows them when the test fails)."""

    def __init__(self, kubeconfig: Path, kube: Client, namespace: str, logs: Path) -> None:
        self.kubeconfig, self.kube, self.namespace, self.logs = kubeconfig, kube, namespace, logs
        self._stack = ExitStack()
        self.logs_by_name: dict[str, Path] = {}

    def start(self, *args: str, name: str = "controller", env: dict[str, str] | None = None) -> subprocess.Popen:
        log = self.logs / f"{name}.log"
        self.logs_by_name[name] = log
        return self._stack.enter_context(controller(self.kubeconfig, log, "-n", self.namespace, *args, env=env))

    def close(self) -> None:
        with self._stack:
            delete_apps(self.kube, self.namespace)
        for name, log in self.logs_by_name.items():
            print(f"--- {name} ---\n{log.read_text() if log.exists() else ''}")


def strict_validation_errors(kubeconfig: Path, manifest: Path) -> list[str]:
    """What the API server's strict field validation says of each document of `manifest` (an unknown or duplicate
    field is an error, where a plain write only warns and drops it): a dry-run create with fieldValidation=Strict.
    A document whose object exists already passes when the answer is AlreadyExists: the body is decoded, strictly,
    before the server looks for the object."""
    from kapply import AsyncClient
    from kapply.errors import ClusterError

    async def check() -> list[str]:
        errors = []
        async with AsyncClient(str(kubeconfig)) as client:
            discovery = await client.cluster.discovery()
            for doc in yaml.safe_load_all(manifest.read_text()):
                rtype = discovery.find(doc["apiVersion"], doc["kind"])
                assert rtype is not None, f"{doc['kind']} is not served"
                path = rtype.path(doc["metadata"].get("namespace"))
                params = {"dryRun": "All", "fieldValidation": "Strict"}
                try:
                    await client.cluster.request("POST", path, body=doc, params=params)
                except ClusterError as e:
                    if e.status != 409:
                        errors.append(f"{doc['kind']} {doc['metadata']['name']}: {e}")
        return errors

    return asyncio.run(check())
