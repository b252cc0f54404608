"""Running the kapply controller as a real process against the test cluster, and writing Apps for it."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Namespace, ServiceAccountToken
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from kapply.controller.leader import Timing
from tests.e2e.faults import http_client
from tests.e2e.harness import Cluster, eventually, external_tool, parse_json_output

REPO = Path(__file__).resolve().parents[2]
App = create_namespaced_resource("kapply.dev", "v1alpha1", "App", "apps")
FlowSchema = create_global_resource("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas")


@contextmanager
def controller(
    kubeconfig: Path, log: Path, *args: str, env: dict[str, str] | None = None, local_sources: bool = True
) -> Iterator[subprocess.Popen]:
    """`kapply controller` with short sync periods, logging to `log`, its /metrics and probes on a free loopback port
    (`endpoint` finds it); stopped (SIGTERM) afterwards. Its Apps may fetch from loopback (the tests' servers) unless
    `local_sources` is false."""
    with log.open("ab") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kapply",
                "controller",
                "--min-sync-period=1s",
                "--metrics-bind-address=127.0.0.1:0",
                *(["--dangerous-allow-local-sources"] if local_sources else []),
                *args,
            ],
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


ENDPOINTS = re.compile(r"serving /metrics, /healthz and /readyz on (http://[^\s,\"]+)")


def endpoint(log: Path, timeout: float = 30) -> str:
    """The URL of a controller's /metrics and probes, from its log (it listens on a free port)."""

    def found() -> str | None:
        match = ENDPOINTS.search(log.read_text()) if log.exists() else None
        return match.group(1) if match else None

    return str(eventually(found, timeout=timeout, what=f"the endpoints named in {log.name}"))


def samples(url: str) -> list[Sample]:
    """The samples the controller at `url` serves at /metrics."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def app_syncs(urls: str | Sequence[str], namespace: str) -> dict[str, tuple[int, int]]:
    """The namespace's Apps' reconciles started and ended (succeeded or failed), by App name, summed over the
    controllers at `urls`: their kapp-controller counters `kappctrl_app_reconcile_{attempt,success,failure}_total`
    (`controller="App"`: a PackageRepository's are counted too, attempts only)."""
    found: dict[str, tuple[int, int]] = {}
    for url in [urls] if isinstance(urls, str) else urls:
        for sample in samples(url):
            if not sample.name.startswith("kappctrl_app_reconcile_") or sample.labels["controller"] != "App":
                continue
            if sample.labels["namespace"] != namespace:
                continue
            started, ended = found.get(sample.labels["name"], (0, 0))
            if sample.name == "kappctrl_app_reconcile_attempt_total":
                started += int(sample.value)
            elif sample.name in ("kappctrl_app_reconcile_success_total", "kappctrl_app_reconcile_failure_total"):
                ended += int(sample.value)
            found[sample.labels["name"]] = (started, ended)
    return found


def wait_syncs(
    urls: str | Sequence[str], namespace: str, names: str | Sequence[str], n: int = 1, timeout: float = 60
) -> None:
    """Wait until `n` syncs of each App `names` that started after this call have ended, their writes (status,
    Events, app-changes) done: what a test means by "n syncs have happened", where a sleep of n sync periods would
    guess. (Of an App's syncs ended, at most as many as had started at the call started before it.)"""
    apps = [names] if isinstance(names, str) else list(names)
    started = {name: count[0] for name, count in app_syncs(urls, namespace).items()}

    def waiting() -> list[str]:
        ended = {name: count[1] for name, count in app_syncs(urls, namespace).items()}
        return [name for name in apps if ended.get(name, 0) < started.get(name, 0) + n]

    eventually(lambda: not waiting(), timeout=timeout, what=f"{n} syncs of each of {apps}")


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


def create_if_missing(kube: Client, obj: Any) -> None:
    """Create `obj`; one that already exists is kept as it is."""
    try:
        kube.create(obj)
    except ApiError as e:
        if e.status.code != 409:
            raise


def _ensure_namespace(kube: Client, name: str) -> None:
    create_if_missing(kube, Namespace.from_dict({"metadata": {"name": name}}))


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
    kapply(
        kubeconfig,
        *("deploy", "-a", CRD_APP, "-n", CONTROLLER_NAMESPACE, "-y", "--wait-check-interval=0.5s"),
        *("-f", str(CONFIG / "crd.yml")),
    )


@contextmanager
def running_controller(
    cluster: Cluster, kube: Client, kubeconfig: Path, directory: Path, *flags: str
) -> Iterator[subprocess.Popen]:
    """The CRD installed (`install_crd`) and `kapply controller --leader-elect=false FLAGS` running as `kubeconfig`'s
    user, with ytt, logging to `directory`/controller.log (the process's `log`); stopped afterwards."""
    install_crd(cluster.kubeconfig, kube)
    ytt = external_tool("ytt", "KAPPLY_YTT")
    log = directory / "controller.log"
    with controller(kubeconfig, log, "--leader-elect=false", *flags, env={"KAPPLY_YTT": str(ytt)}) as process:
        process.log = log  # type: ignore[attr-defined]
        yield process


def delete_apps_and_show_log(kube: Client, namespace: str, running: subprocess.Popen) -> None:
    """After a test: its Apps deleted while the controller runs (their finalizer needs it), and the controller's log
    lines about the namespace printed (shown when the test fails)."""
    delete_apps(kube, namespace)
    print(log_lines(running.log, namespace))  # type: ignore[attr-defined]


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


@dataclass(frozen=True)
class Identity:
    """A controller's own identity: a kubeconfig file holding a bearer token, and the token."""

    kubeconfig: Path
    token: str


@contextmanager
def controller_identity(kube: Client, admin_kubeconfig: Path, directory: Path, rbac: str = "") -> Iterator[Identity]:
    """An identity for a controller with exactly the rights of config/controller/rbac.yml (or of the ClusterRole in
    the YAML `rbac`: `kapply controller manifests --api-groups carvel`'s), without installing it (other modules
    install the CRD as an app of their own): a ServiceAccount in a namespace of its own, bound to a copy of that
    ClusterRole, and a kubeconfig in `directory` with a TokenRequest token of it. Removed afterwards."""
    name = f"kapply-controller-{uuid.uuid4().hex[:6]}"
    rbac = rbac or (CONFIG / "rbac.yml").read_text()
    rules = next(d for d in yaml.safe_load_all(rbac) if d and d["kind"] == "ClusterRole")["rules"]
    kube.create(Namespace.from_dict({"metadata": {"name": name}}))
    try:
        create_all(
            kube,
            yaml.safe_dump_all(
                [
                    {
                        "apiVersion": "v1",
                        "kind": "ServiceAccount",
                        "metadata": {"name": "controller", "namespace": name},
                    },
                    {
                        "apiVersion": "rbac.authorization.k8s.io/v1",
                        "kind": "ClusterRole",
                        "metadata": {"name": name},
                        "rules": rules,
                    },
                    {
                        "apiVersion": "rbac.authorization.k8s.io/v1",
                        "kind": "ClusterRoleBinding",
                        "metadata": {"name": name},
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                        "subjects": [{"kind": "ServiceAccount", "name": "controller", "namespace": name}],
                    },
                ]
            ),
        )
        request = ServiceAccountToken(
            metadata=ObjectMeta(), spec=TokenRequestSpec(audiences=[], expirationSeconds=3600)
        )
        token = kube.create(request, "controller", namespace=name).status.token
        cluster = yaml.safe_load(admin_kubeconfig.read_text())["clusters"][0]["cluster"]
        kubeconfig = directory / "controller.kubeconfig"
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "test", "cluster": cluster}],
                    "users": [{"name": "controller", "user": {"token": token}}],
                    "contexts": [{"name": "test", "context": {"cluster": "test", "user": "controller"}}],
                    "current-context": "test",
                }
            )
        )
        yield Identity(kubeconfig, token)
    finally:
        for kind in (ClusterRoleBinding, ClusterRole, Namespace):
            try:
                kube.delete(kind, name)
            except ApiError as e:
                if e.status.code != 404:
                    raise


TOOL_VARIABLES = {
    "ytt": "KAPPLY_YTT",
    "helm": "KAPPLY_HELM",
    "kustomize": "KAPPLY_KUSTOMIZE",
    "kbld": "KAPPLY_KBLD",
    "cue": "KAPPLY_CUE",
    "sops": "KAPPLY_SOPS",
}


def tool_env(*tools: str) -> dict[str, str]:
    """$KAPPLY_YTT, $KAPPLY_HELM, $KAPPLY_KUSTOMIZE, $KAPPLY_KBLD, $KAPPLY_CUE, $KAPPLY_SOPS (those of `tools`) for a
    controller: the tool the environment names (a named file that is missing fails the test), else the one on PATH;
    skips the test when one is nowhere."""
    return {TOOL_VARIABLES[tool]: str(external_tool(tool, TOOL_VARIABLES[tool])) for tool in tools}


# --- Apps and what they leave behind -------------------------------------------------------------------------------


def create_all(kube: Client, text: str) -> None:
    """Create each document of a YAML stream (Apps included)."""
    for doc in yaml.safe_load_all(text):
        kube.create(App(**doc) if doc["kind"] == "App" else from_dict(doc))


def create_missing(kube: Client, text: str) -> None:
    """create_all, keeping each object that already exists as it is."""
    for doc in yaml.safe_load_all(text):
        create_if_missing(kube, App(**doc) if doc["kind"] == "App" else from_dict(doc))


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


# The leader election's timing of the tests of failover and sharding (`lease_flags`): a lease lapses in 4 s rather
# than the controller's 15 s. Tests of the default timing itself start their controllers without these flags.
SHORT_LEASES = Timing(lease_duration=4.0, renew_deadline=3.0, retry_period=1.0)


def lease_flags(timing: Timing = SHORT_LEASES) -> tuple[str, ...]:
    """`kapply controller`'s flags for `timing` (the leader Lease's, and with --shards every Lease's)."""
    return (
        f"--leader-elect-lease-duration={timing.lease_duration:g}s",
        f"--leader-elect-renew-deadline={timing.renew_deadline:g}s",
        f"--leader-elect-retry-period={timing.retry_period:g}s",
    )


class Controllers:
    """Controller processes for one test's namespace (`-n NAMESPACE`, so that they leave every other test's Apps
    alone), each logging to its own file. On close, the namespace's Apps are deleted while they still run, then they
    stop; their logs' lines about the namespace are printed (pytest shows them when the test fails)."""

    def __init__(self, kubeconfig: Path, kube: Client, namespace: str, logs: Path) -> None:
        self.kubeconfig, self.kube, self.namespace, self.logs = kubeconfig, kube, namespace, logs
        self._stack = ExitStack()
        self.logs_by_name: dict[str, Path] = {}

    def start(
        self, *args: str, name: str = "controller", env: dict[str, str] | None = None, local_sources: bool = True
    ) -> subprocess.Popen:
        log = self.logs / f"{name}.log"
        self.logs_by_name[name] = log
        return self._stack.enter_context(
            controller(self.kubeconfig, log, "-n", self.namespace, *args, env=env, local_sources=local_sources)
        )

    def close(self) -> None:
        with self._stack:
            delete_apps(self.kube, self.namespace)
        for name, log in self.logs_by_name.items():
            print(f"--- {name} ---\n{log.read_text() if log.exists() else ''}")


@contextmanager
def module_controller(
    kubeconfig: Path, kube: Client, namespace: str, logs: Path, *flags: str, env: dict[str, str] | None = None
) -> Iterator[Controllers]:
    """One controller for a module's namespace (`conftest.module_namespace`): the App CRD installed, the namespace's
    `deployer` account made, no leader election; its Apps deleted while it still runs, when the module is done."""
    install_crd(kubeconfig, kube)
    create_all(kube, deployer(namespace))
    running = Controllers(kubeconfig, kube, namespace, logs)
    running.start("--leader-elect=false", *flags, env=env)
    try:
        yield running
    finally:
        running.close()


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


def gone_if_terminating(kube: Client, namespace: str, timeout: float = 120) -> None:
    """Wait until `namespace` is gone if it is being deleted (an earlier run's, just ended): nothing can be created
    in it meanwhile."""

    def terminating() -> bool:
        try:
            return kube.get(Namespace, namespace).status.phase == "Terminating"  # type: ignore[union-attr]
        except ApiError as e:
            if e.status.code == 404:
                return False
            raise

    eventually(lambda: not terminating(), timeout=timeout, what=f"namespace {namespace} deleted")


@contextmanager
def admin_identity(kubeconfig: Path, kube: Client, namespace: str, directory: Path) -> Iterator[Path]:
    """A kubeconfig for a ServiceAccount `controller` of `namespace` bound to cluster-admin (what a controller runs as
    when it may do anything); the namespace and the binding go afterwards."""
    from lightkube.models.authentication_v1 import TokenRequestSpec
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import ServiceAccount
    from lightkube.resources.rbac_authorization_v1 import ClusterRoleBinding

    gone_if_terminating(kube, namespace)
    create = partial(create_if_missing, kube)
    create(Namespace.from_dict({"metadata": {"name": namespace}}))
    create(ServiceAccount.from_dict({"metadata": {"name": "controller", "namespace": namespace}}))
    binding = ClusterRoleBinding.from_dict(
        {
            "metadata": {"name": f"{namespace}-controller"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "controller", "namespace": namespace}],
        }
    )
    create(binding)
    token = kube.create(
        ServiceAccount.Token(metadata=ObjectMeta(), spec=TokenRequestSpec(audiences=[], expirationSeconds=7200)),
        "controller",
        namespace=namespace,
    ).status.token
    admin = yaml.safe_load(kubeconfig.read_text())
    path = directory / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": admin["clusters"][:1],
                "users": [{"name": "controller", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": admin["clusters"][0]["name"], "user": "controller"}}],
                "current-context": "c",
            }
        )
    )
    try:
        yield path
    finally:
        kube.delete(ClusterRoleBinding, binding.metadata.name)
        kube.delete(Namespace, namespace)


@contextmanager
def counted(
    kube: Client,
    name: str,
    subjects: list[dict[str, Any]],
    verbs: list[str],
    *,
    namespace: str | None = None,
    non_resource: bool = False,
) -> Iterator[None]:
    """A FlowSchema counting the requests of `subjects` with `verbs`: it sends them to the `exempt` priority level,
    where the API server counts them by flow schema in `apiserver_flowcontrol_dispatched_requests_total`
    (`dispatched`), apart from everyone else's. With `namespace`, only the requests in that namespace (not the
    cluster-wide ones, such as the controller's own informers listing again after a watch's 410 Gone); with
    `non_resource`, their non-resource requests too (discovery, `/version`, `/openapi`), whatever `verbs` says."""
    scope = (
        {"namespaces": [namespace], "clusterScope": False} if namespace else {"namespaces": ["*"], "clusterScope": True}
    )
    rule = {
        "subjects": subjects,
        "resourceRules": [{"verbs": verbs, "apiGroups": ["*"], "resources": ["*"]} | scope],
    } | ({"nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]} if non_resource else {})
    schema = {
        "metadata": {"name": name},
        "spec": {"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 2, "rules": [rule]},
    }
    kube.create(FlowSchema.from_dict(schema))
    try:
        yield
    finally:
        kube.delete(FlowSchema, name)


def dispatched(cluster: Cluster, flow_schema: str) -> int:
    """The requests the flow schema has counted so far (refused ones included: they are dispatched first)."""
    with http_client(cluster.kubeconfig) as http:
        text = http.get("/metrics").raise_for_status().text
    prefix = "apiserver_flowcontrol_dispatched_requests_total{"
    return int(
        sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(prefix) and f'flow_schema="{flow_schema}"' in line
        )
    )
