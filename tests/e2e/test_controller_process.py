"""The App controller as it is installed and run: the manifests of config/controller/ (CRD, RBAC, Deployment) applied
with kapply, the controller in cluster (service-account token files and KUBERNETES_SERVICE_* pointed at the local
API server) with exactly the rights of rbac.yml, and two controllers electing a leader on a Lease, the leader killed
in the middle of a deploy. The tests of failover elect with short leases (controller_harness.SHORT_LEASES); the
Lease released on SIGTERM is taken well within the default lease duration."""

from __future__ import annotations

import base64
import os
import re
import signal
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import ConfigMap, Event, Secret, ServiceAccountToken
from lightkube.types import PatchType

from kapply.controller.leader import DURATION  # the default Lease duration: a released Lease is taken well within it
from tests.e2e.controller_harness import (
    CONFIG,
    CONTROLLER_NAMESPACE,
    SHORT_LEASES,
    App,
    Controllers,
    app_changes,
    condition,
    config_map,
    config_map_data,
    create_all,
    deployer,
    inline_app,
    installed_controller,
    kapply,
    lease_flags,
    status,
    strict_validation_errors,
    tool_env,
)
from tests.e2e.harness import Cluster, eventually, parse_json_output

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def installed(cluster: Cluster, kube: Client) -> Iterator[None]:
    with installed_controller(cluster.kubeconfig, kube):
        yield


# --- the install manifests ------------------------------------------------------------------------------------------


def test_the_install_manifests_are_accepted_and_the_deployment_rolls_out_on_simulated_nodes(
    installed: None, cluster: Cluster, kube: Client, namespace: str
):
    crd = kube.get(CustomResourceDefinition, "apps.kapply.dev")
    assert {c.type: c.status for c in crd.status.conditions}["Established"] == "True"
    inspected = kapply(cluster.kubeconfig, "inspect", "-a", "kapply-controller", "-n", CONTROLLER_NAMESPACE, "--json")
    kinds = sorted(parse_json_output(inspected.stdout).tables[0].column("kind"))
    assert kinds == [
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "Role",
        "RoleBinding",
        "ServiceAccount",
    ]
    # A field the API server does not know is dropped with a warning by a plain write: strict validation finds it.
    for manifest in ("crd.yml", "rbac.yml", "deployment.yml"):
        assert strict_validation_errors(cluster.kubeconfig, CONFIG / manifest) == []
    # kwok's node "runs" any pod without pulling its image (test_controller_image.py runs the image's kapply): the
    # rollout completes. It goes in as an app of its own, deleted at once.
    try:
        kapply(
            cluster.kubeconfig,
            "deploy",
            "-a",
            "controller-deployment",
            "-n",
            namespace,
            "-y",
            "--wait-check-interval=0.5s",
            "-f",
            str(CONFIG / "deployment.yml"),
        )
        deployment = kube.get(Deployment, "kapply-controller", namespace=CONTROLLER_NAMESPACE)
        assert deployment.status.availableReplicas == 2
        assert deployment.spec.template.spec.serviceAccountName == "kapply-controller"
        assert deployment.spec.template.spec.containers[0].args[:2] == ["controller", "--in-cluster"]
    finally:
        kapply(cluster.kubeconfig, "delete", "-a", "controller-deployment", "-n", namespace, "-y")


# --- in cluster -----------------------------------------------------------------------------------------------------


def mounted_service_account(kube: Client, kubeconfig: Path, directory: Path) -> dict[str, str]:
    """What a pod of the kapply-controller ServiceAccount has: its token (a TokenRequest one, as the kubelet mounts),
    the cluster's CA and its namespace, in `directory`; and the environment that points at the API server."""
    request = ServiceAccountToken(metadata=ObjectMeta(), spec=TokenRequestSpec(audiences=[], expirationSeconds=3600))
    token = kube.create(request, "kapply-controller", namespace=CONTROLLER_NAMESPACE).status.token
    cluster = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    directory.mkdir()
    (directory / "token").write_text(token)
    (directory / "ca.crt").write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    (directory / "namespace").write_text(CONTROLLER_NAMESPACE)
    server = urlsplit(cluster["server"])
    return {
        "KUBERNETES_SERVICE_HOST": str(server.hostname),
        "KUBERNETES_SERVICE_PORT": str(server.port),
        "KAPPLY_SERVICE_ACCOUNT_DIR": str(directory),
        "KUBECONFIG": str(directory / "no-kubeconfig-in-a-pod"),  # not there: the in-cluster identity is all it has
    }


def env_token(env: dict[str, str]) -> str:
    return (Path(env["KAPPLY_SERVICE_ACCOUNT_DIR"]) / "token").read_text()


def as_token(kubeconfig: Path, token: str, path: str) -> int:
    """The HTTP status of a GET of `path` with a bearer token (TLS checked against the cluster's CA)."""
    cluster = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    context = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    request = urllib.request.Request(cluster["server"] + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_in_cluster_with_the_rbac_manifest_the_controller_reconciles_reports_watches_and_deletes(
    installed: None, cluster: Cluster, kube: Client, namespace: str, tmp_path: Path
):
    create_all(
        kube,
        deployer(namespace)
        + "---\n"
        + yaml.safe_dump_all(
            [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "files", "namespace": namespace},
                    "data": {"from-config-map.yml": config_map("from-config-map", a="b")},
                },
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "values", "namespace": namespace},
                    "stringData": {"values.yml": "greeting: from-secret\n"},
                },
            ]
        ),
    )
    template = (
        '#@ load("@ytt:data", "data")\n'
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeting}\ndata:\n  text: #@ data.values.greeting\n"
        "---\napiVersion: v1\nkind: Secret\nmetadata: {name: deployed}\nstringData: {password: s3cret}\n"
    )
    app = inline_app(
        "hello",
        namespace,
        {"greeting.yml": template, "values.yml": "#@data/values\n---\ngreeting: default\n"},
        syncPeriod="10m",  # drift is acted on at once, not at the next sync
        template=[{"ytt": {"valuesFrom": [{"secretRef": {"name": "values"}}]}}],
    )
    app["spec"]["fetch"][0]["inline"]["pathsFrom"] = [{"configMapRef": {"name": "files"}}]
    kube.create(App(**app))
    env = mounted_service_account(kube, cluster.kubeconfig, tmp_path / "serviceaccount")
    lease = "kapply-controller"  # the one name rbac.yml's Role lets the controller use
    controllers = Controllers(cluster.kubeconfig, kube, namespace, tmp_path)
    try:
        process = controllers.start(
            "--in-cluster",
            "--leader-elect=true",
            f"--lease-namespace={CONTROLLER_NAMESPACE}",
            env={**tool_env("ytt"), **env},
        )
        eventually(lambda: condition(kube, namespace, "hello") == "ReconcileSucceeded", timeout=30, what="success")
        assert config_map_data(kube, namespace, "greeting") == {"text": "from-secret"}  # a Secret read (valuesFrom)
        assert config_map_data(kube, namespace, "from-config-map") == {"a": "b"}  # a ConfigMap read (pathsFrom)
        holder = kube.get(Lease, lease, namespace=CONTROLLER_NAMESPACE).spec.holderIdentity
        assert holder.split("_")[-2] == str(process.pid)  # the Lease taken
        events = [e for e in kube.list(Event, namespace=namespace) if e.involvedObject.name == "hello"]
        assert any(e.reason == "Deployed" for e in events), [e.reason for e in events]

        # Drift is seen through the controller's own watch of ConfigMaps (cluster-wide list and watch).
        kube.patch(ConfigMap, "greeting", {"data": {"text": "edited"}}, namespace=namespace, field_manager="kubectl")
        eventually(
            lambda: config_map_data(kube, namespace, "greeting") == {"text": "from-secret"},
            timeout=10,
            what="drift reverted",
        )
        # The controller may not watch Secrets (rbac.yml leaves them out): the App's own account watches them in its
        # namespace, so drift of a deployed Secret is reverted at once too.
        kube.patch(
            Secret, "deployed", {"stringData": {"password": "edited"}}, namespace=namespace, field_manager="kubectl"
        )
        eventually(
            lambda: (
                (kube.get(Secret, "deployed", namespace=namespace).data or {}).get("password")
                == base64.b64encode(b"s3cret").decode()
            ),
            timeout=10,
            what="Secret drift reverted",
        )
        token = env_token(env)
        for path in ("/api/v1/secrets", f"/api/v1/namespaces/{namespace}/secrets/values"):
            assert as_token(cluster.kubeconfig, token, path) == 403, f"the controller may read {path}"
        # Deleted with its resources: the finalizer removed through an update of the App.
        kube.delete(App, "hello", namespace=namespace)
        eventually(lambda: not list(kube.list(App, namespace=namespace)), timeout=30, what="the App deleted")
        assert config_map_data(kube, namespace, "greeting") is None
        log = controllers.logs_by_name["controller"].read_text()
        assert "forbidden" not in log.lower() and " 403" not in log, log
        assert process.poll() is None
    finally:
        controllers.close()  # before the Lease goes, or the controller would take it anew
        try:
            kube.delete(Lease, lease, namespace=CONTROLLER_NAMESPACE)
        except ApiError as e:
            if e.status.code != 404:
                raise


# --- leader election ------------------------------------------------------------------------------------------------


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def syncs(log: Path, namespace: str) -> int:
    """How many App reconciles of `namespace` a controller's log tells of (each ends with a line `<ns>/<app>: no
    changes` or `<ns>/<app>: deployed N changes`, or a failure's line): every reconcile templates, so this counts the
    reconciles of the controller that wrote it. (A ytt wrapper counting its runs in a file would not do: the sandbox
    shows a template tool only its job's files.)"""
    text = log.read_text() if log.exists() else ""
    return len(re.findall(rf"{re.escape(namespace)}/[a-z0-9-]+: (no changes|deployed |Deploying: |Templating )", text))


SLOW = yaml.safe_dump(
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "slow"},
        "spec": {
            "replicas": 1,
            "minReadySeconds": 60,  # available only a minute after its pod is ready: the deploy waits that long
            "selector": {"matchLabels": {"app": "slow"}},
            "template": {
                "metadata": {"labels": {"app": "slow"}},
                "spec": {"containers": [{"name": "app", "image": "registry.invalid/kapply-test:slow"}]},
            },
        },
    }
)


def deploying(kube: Client, namespace: str, app: str) -> bool:
    """Whether a deploy of the App holds its kapp app record and has created its Deployment (and now waits on it)."""
    try:
        record = kube.get(ConfigMap, f"{app}.app", namespace=namespace)
        kube.get(Deployment, app, namespace=namespace)
    except ApiError as e:
        if e.status.code == 404:
            return False
        raise
    return "kapply.dev/deploy-lock" in (record.metadata.annotations or {})


def test_two_controllers_elect_one_leader_and_the_other_takes_over_when_it_is_killed_mid_deploy(
    installed: None, cluster: Cluster, kube: Client, namespace: str, tmp_path: Path
):
    create_all(kube, deployer(namespace))
    controllers = Controllers(cluster.kubeconfig, kube, namespace, tmp_path)
    election = ("--leader-elect=true", f"--lease-namespace={namespace}", "--lease-name=leader", *lease_flags())
    duration, retry = SHORT_LEASES.lease_duration, SHORT_LEASES.retry_period
    processes = {}
    for name in ("a", "b"):
        processes[name] = controllers.start(*election, name=name, env=tool_env("ytt"))
    by_pid = {str(p.pid): name for name, p in processes.items()}
    try:
        kube.create(App(**inline_app("steady", namespace, {"cm.yml": config_map("steady", v="1")}, syncPeriod="1s")))
        eventually(lambda: condition(kube, namespace, "steady") == "ReconcileSucceeded", timeout=30, what="success")
        holder = kube.get(Lease, "leader", namespace=namespace).spec.holderIdentity
        leader = by_pid[holder.split("_")[-2]]
        follower = "b" if leader == "a" else "a"
        # Several syncs (one a second) by the leader; none by the other.
        logs = controllers.logs_by_name
        eventually(lambda: syncs(logs[leader], namespace) >= 3, timeout=15, what="three reconciles by the leader")
        assert "leading as" in logs[leader].read_text() and "leading as" not in logs[follower].read_text()

        # The leader deploys an App whose Deployment it waits a minute for; it is killed in the middle of that.
        slow = inline_app("slow", namespace, {"deployment.yml": SLOW}, syncPeriod="1s")
        slow["spec"]["deploy"] = [{"kapp": {"rawOptions": ["--wait-check-interval=0.5s"]}}]
        kube.create(App(**slow))
        eventually(lambda: deploying(kube, namespace, "slow"), timeout=30, what="the leader waiting on the Deployment")
        assert syncs(logs[follower], namespace) == 0, "the follower reconciled while the leader held the Lease"
        assert namespace not in logs[follower].read_text()  # nor did anything else about the namespace's Apps
        os.kill(processes[leader].pid, signal.SIGKILL)
        killed_at = datetime.now(UTC)
        processes[leader].wait()
        last = kube.get(Lease, "leader", namespace=namespace).spec  # the dead leader's last renewal
        assert last.holderIdentity == holder

        eventually(
            lambda: (
                by_pid.get(kube.get(Lease, "leader", namespace=namespace).spec.holderIdentity.split("_")[-2])
                == follower
            ),
            timeout=duration + 2 * retry + 5,
            interval=0.2,
            what="the other controller to take the Lease",
        )
        taken = kube.get(Lease, "leader", namespace=namespace).spec
        waited = (taken.acquireTime - last.renewTime).total_seconds()
        print(f"leader {leader} killed at {killed_at}; {follower} took the Lease {waited:.1f}s after its last renewal")
        # Not before a lease duration (the dead leader might have been alive, and deploying); the follower saw the last
        # renewal at most one retry period after it was made, and took the Lease at most one retry period after that
        # had lasted a lease duration.
        assert last.leaseDurationSeconds == duration
        assert last.leaseDurationSeconds <= waited <= last.leaseDurationSeconds + 2 * retry + 1, waited
        assert taken.leaseTransitions == (last.leaseTransitions or 0) + 1

        # The new leader reconciles: a change to an App is deployed by it.
        kube.patch(
            App,
            "steady",
            {"spec": {"fetch": [{"inline": {"paths": {"cm.yml": config_map("steady", v="2")}}}]}},
            namespace=namespace,
            patch_type=PatchType.MERGE,
        )
        eventually(
            lambda: config_map_data(kube, namespace, "steady") == {"v": "2"}, timeout=20, what="the change deployed"
        )
        assert syncs(logs[follower], namespace) > 0

        # No two changes of an App overlapped: the steady App's second change started after its first finished, and
        # after the kill; the slow App has one change, the one the killed leader started and never finished.
        changes = app_changes(cluster.kubeconfig, namespace, "steady.app")
        assert len(changes) == 2 and all(c["finished_at"] for c in changes), changes
        assert _time(changes[0]["finished_at"]) <= _time(changes[1]["started_at"]), changes
        assert _time(changes[1]["started_at"]) >= killed_at.replace(microsecond=0), changes
        slow_changes = app_changes(cluster.kubeconfig, namespace, "slow.app")
        assert [c["finished_at"] for c in slow_changes] == [""], slow_changes  # the killed one, no other

        # The dead leader's hold on the slow App's record stands until it lapses: the new leader does not deploy a
        # change of the App meanwhile, and says who holds it.
        files = {"deployment.yml": SLOW, "cm.yml": config_map("late", v="1")}
        patch = {"spec": {"fetch": [{"inline": {"paths": files}}]}}
        kube.patch(App, "slow", patch, namespace=namespace, patch_type=PatchType.MERGE)
        eventually(
            lambda: f"/{processes[leader].pid}/" in status(kube, namespace, "slow").get("usefulErrorMessage", ""),
            timeout=20,
            what="the new leader to be refused by the dead leader's hold",
        )
        assert config_map_data(kube, namespace, "late") is None
        assert [c["finished_at"] for c in app_changes(cluster.kubeconfig, namespace, "slow.app")] == [""]
    finally:
        # Deleting the slow App would wait for the dead leader's hold to lapse (a minute): it is let go without
        # deleting its Deployment (the namespace takes that).
        if any(app.metadata.name == "slow" for app in kube.list(App, namespace=namespace)):
            kube.patch(App, "slow", {"spec": {"noopDelete": True}}, namespace=namespace, patch_type=PatchType.MERGE)
        controllers.close()


def test_a_stopped_leader_releases_the_lease_so_the_other_takes_over_at_once(
    installed: None, cluster: Cluster, kube: Client, namespace: str, tmp_path: Path
):
    """SIGTERM (a pod being stopped, a rollout) ends the controller cleanly: exit status 0, the Lease released, and
    the other process leads within a retry period instead of a lease duration."""
    create_all(kube, deployer(namespace))
    controllers = Controllers(cluster.kubeconfig, kube, namespace, tmp_path)
    election = ("--leader-elect=true", f"--lease-namespace={namespace}", "--lease-name=stopping")
    try:
        processes = {name: controllers.start(*election, name=name) for name in ("a", "b")}
        by_pid = {str(p.pid): name for name, p in processes.items()}

        def lease_holder() -> str:
            try:
                return str(kube.get(Lease, "stopping", namespace=namespace).spec.holderIdentity or "")
            except ApiError as e:
                if e.status.code != 404:
                    raise
                return ""

        holder = eventually(lease_holder, timeout=30, what="a leader")
        leader = by_pid[str(holder).split("_")[-2]]
        follower = "b" if leader == "a" else "a"
        processes[leader].send_signal(signal.SIGTERM)
        stopped_at = time.monotonic()
        assert processes[leader].wait(timeout=15) == 0
        log = controllers.logs_by_name[leader].read_text()
        assert "released the lease" in log and "stopped (SIGTERM)" in log, log
        eventually(
            lambda: by_pid.get((lease_holder() or "_x_").split("_")[-2]) == follower,
            timeout=DURATION,
            interval=0.2,
            what="the other controller to take the released Lease",
        )
        assert time.monotonic() - stopped_at < DURATION - 1, "taken only after a lease duration: not released"
    finally:
        controllers.close()


def _micro(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_a_lease_renewed_by_a_holder_whose_clock_lags_is_not_taken_until_the_renewals_stop(
    installed: None, cluster: Cluster, kube: Client, namespace: str, tmp_path: Path
):
    """Another machine holds the Lease and renews it, but its clock is an hour behind, so the times it writes look long
    expired. Taking the Lease by those times would make two leaders; the controller must judge by its own clock, from
    when it saw the Lease last change, and take it only a lease duration after the renewals stop."""
    create_all(kube, deployer(namespace))
    duration, retry = SHORT_LEASES.lease_duration, SHORT_LEASES.retry_period
    behind = datetime.now(UTC) - timedelta(hours=1)
    spec = {"holderIdentity": "elsewhere_1_abcdef", "leaseDurationSeconds": int(duration), "leaseTransitions": 0}
    lease = {"metadata": {"name": "leader", "namespace": namespace}, "spec": spec}
    lease["spec"] |= {"acquireTime": _micro(behind), "renewTime": _micro(behind)}
    kube.create(Lease.from_dict(lease))
    controllers = Controllers(cluster.kubeconfig, kube, namespace, tmp_path)
    election = ("--leader-elect=true", f"--lease-namespace={namespace}", "--lease-name=leader", *lease_flags())
    try:
        process = controllers.start(*election, env=tool_env("ytt"))
        kube.create(App(**inline_app("hello", namespace, {"cm.yml": config_map("hello", a="b")})))
        started = time.monotonic()
        while time.monotonic() - started < duration + retry + 1:  # renewed for more than a duration
            last_renewal = time.monotonic()
            renewed = _micro(behind + timedelta(seconds=last_renewal - started))
            kube.patch(Lease, "leader", {"spec": {"renewTime": renewed}}, namespace=namespace)
            assert kube.get(Lease, "leader", namespace=namespace).spec.holderIdentity == "elsewhere_1_abcdef"
            assert condition(kube, namespace, "hello") == "", "reconciled while another process held the Lease"
            time.sleep(retry)  # the other holder renews every retry period, as the controller would
        eventually(
            lambda: (
                kube.get(Lease, "leader", namespace=namespace).spec.holderIdentity.split("_")[-2] == str(process.pid)
            ),
            timeout=duration + 2 * retry + 5,
            interval=0.2,
            what="the controller to take the Lease",
        )
        took = time.monotonic() - last_renewal
        # The last renewal is seen at most one retry period after it was made, and the Lease taken a lease duration
        # after it was seen, at most one retry period late.
        assert duration <= took <= duration + 2 * retry + 1, took
        eventually(lambda: condition(kube, namespace, "hello") == "ReconcileSucceeded", timeout=20, what="success")
    finally:
        controllers.close()
