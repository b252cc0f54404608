"""The controller in operation: what an App reads it reads with its own service account, a failing App is retried
with growing delays and never spins, an App that never deployed goes at once, and a pass says `Reconciling` when it
starts and shows a long deploy's progress in the status while it runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Event, Namespace, Secret, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import Role
from lightkube.types import PatchType

from tests.e2e.controller_harness import (
    App,
    admin_identity,
    condition,
    config_map,
    controller,
    create_missing,
    deployer,
    inline_app,
    status,
)
from tests.e2e.harness import Cluster, eventually, external_tool

pytestmark = pytest.mark.e2e
PROGRESS_INTERVAL = 1  # seconds: the controller's --progress-interval here


@pytest.fixture(scope="module")
def running(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A controller (cluster-admin: it could read every Secret itself) reconciling with short periods; its log."""
    log = tmp_path_factory.mktemp("controller") / "controller.log"
    ytt = external_tool("ytt", "KAPPLY_YTT")
    identity = admin_identity(cluster.kubeconfig, kube, "kapply-operations-tests", tmp_path_factory.mktemp("identity"))
    with (
        identity as kubeconfig,
        controller(
            kubeconfig,
            log,
            "--leader-elect=false",
            f"--progress-interval={PROGRESS_INTERVAL}s",
            env={"KAPPLY_YTT": str(ytt)},
        ),
    ):
        yield log


def gone(kube: Client, namespace: str, name: str) -> bool:
    try:
        kube.get(App, name, namespace=namespace)
    except ApiError as e:
        if e.status.code == 404:
            return True
        raise
    return False


def failures(kube: Client, namespace: str, name: str) -> int:
    return int(status(kube, namespace, name).get("consecutiveReconcileFailures") or 0)


def test_an_app_reads_secrets_with_its_own_service_account_not_the_controllers(
    running: Path, kube: Client, namespace: str
) -> None:
    """The controller may read every Secret, the App's account may not read this one: the App cannot either, and the
    Secret's content appears nowhere."""
    create_missing(kube, deployer(namespace, rules=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]))
    token = "CANARY-secret-the-app-may-not-read"
    kube.create(
        Secret.from_dict({"metadata": {"name": "other", "namespace": namespace}, "stringData": {"a.yml": token}})
    )
    app = inline_app("reader", namespace, {"cm.yml": config_map("cm", a="b")})
    app["spec"]["fetch"][0]["inline"]["pathsFrom"] = [{"secretRef": {"name": "other"}}]
    kube.create(App(**app))
    eventually(lambda: condition(kube, namespace, "reader") == "ReconcileFailed", timeout=30, what="a failure")
    reported = status(kube, namespace, "reader")
    message = reported["usefulErrorMessage"]
    assert "forbidden" in message and f"system:serviceaccount:{namespace}:deployer" in message, reported
    assert reported["friendlyDescription"].startswith("Reconcile failed: Fetching resources:"), reported
    assert token not in yaml.safe_dump(reported)
    assert all(token not in (e.message or "") for e in kube.list(Event, namespace=namespace))
    assert token not in running.read_text()


def test_a_name_that_is_not_an_object_name_fails_the_app_with_its_field(
    running: Path, kube: Client, namespace: str
) -> None:
    create_missing(kube, deployer(namespace))
    app = inline_app("badref", namespace, {"cm.yml": config_map("cm", a="b")})
    app["spec"]["fetch"][0]["inline"]["pathsFrom"] = [{"configMapRef": {"name": "../../secrets/x"}}]
    kube.create(App(**app))
    eventually(lambda: condition(kube, namespace, "badref") == "ReconcileFailed", timeout=30, what="a failure")
    assert (
        "spec.fetch[0].inline.pathsFrom[0].configMapRef.name" in status(kube, namespace, "badref")["usefulErrorMessage"]
    )


def test_an_app_whose_service_account_is_missing_backs_off_and_is_deleted_at_once(
    running: Path, kube: Client, namespace: str
) -> None:
    app = inline_app("orphan", namespace, {"cm.yml": config_map("cm", a="b")}, serviceAccountName="nobody")
    app["spec"]["syncPeriod"] = "1m"  # retries back off up to the sync period: 2, 4, 8, 16 s
    kube.create(App(**app))
    eventually(lambda: failures(kube, namespace, "orphan") >= 1, timeout=30, interval=0.2, what="the first failure")
    first = time.monotonic()
    assert 'serviceaccounts "nobody" not found' in status(kube, namespace, "orphan")["usefulErrorMessage"]
    eventually(lambda: failures(kube, namespace, "orphan") >= 3, timeout=30, interval=0.2, what="two retries")
    waited = time.monotonic() - first
    assert waited >= 5, f"the third failure {waited:.1f} s after the first: the delays do not grow as 2, 4 s"
    assert not (kube.get(App, "orphan", namespace=namespace).metadata.finalizers or []), "a finalizer before a deploy"
    kube.delete(App, "orphan", namespace=namespace)
    eventually(lambda: gone(kube, namespace, "orphan"), timeout=5, interval=0.2, what="the App gone at once")


def test_a_failing_delete_backs_off_instead_of_spinning_and_ends_when_the_account_is_back(
    running: Path, kube: Client, namespace: str
) -> None:
    create_missing(kube, deployer(namespace))
    app = inline_app("leaving", namespace, {"cm.yml": config_map("cm", a="b")})
    app["spec"]["syncPeriod"] = "1m"
    kube.create(App(**app))
    eventually(lambda: condition(kube, namespace, "leaving") == "ReconcileSucceeded", timeout=30, what="deployed")
    kube.delete(Role, "deployer", namespace=namespace)  # the account may delete nothing any more
    kube.delete(App, "leaving", namespace=namespace)
    eventually(
        lambda: condition(kube, namespace, "leaving") == "DeleteFailed", timeout=30, interval=0.2, what="DeleteFailed"
    )
    first = time.monotonic()
    eventually(lambda: failures(kube, namespace, "leaving") >= 3, timeout=30, interval=0.2, what="two retries")
    waited = time.monotonic() - first
    assert waited >= 5, f"the third failed delete {waited:.1f} s after the first: not backing off as 2, 4 s"
    create_missing(kube, deployer(namespace))
    eventually(lambda: gone(kube, namespace, "leaving"), timeout=30, what="the App deleted once it may delete")


class StatusWatcher:
    """Polls an App's status in the background, keeping every distinct (condition, deploy.finished, stdout) seen."""

    def __init__(self, kube: Client, namespace: str, name: str) -> None:
        self.seen: list[tuple[str, Any, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(kube, namespace, name), daemon=True)

    def _loop(self, kube: Client, namespace: str, name: str) -> None:
        while not self._stop.is_set():
            reported = status(kube, namespace, name)
            kind = str((reported.get("conditions") or [{}])[0].get("type", ""))
            deploy = reported.get("deploy") or {}
            entry = (kind, deploy.get("finished"), str(deploy.get("stdout", "")))
            if not self.seen or self.seen[-1] != entry:
                self.seen.append(entry)
            self._stop.wait(0.1)

    def __enter__(self) -> StatusWatcher:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


NEVER_READY = """apiVersion: kapp.k14s.io/v1alpha1
kind: Config
waitRules:
- supportsObservedGeneration: false
  conditionMatchers:
  - {type: Ready, status: "True", success: true}
  resourceMatchers:
  - kindNamespaceNameMatcher: {kind: ConfigMap, namespace: %s, name: slow}
"""


def test_a_pass_says_reconciling_at_once_and_a_long_deploy_shows_its_progress(
    running: Path, kube: Client, namespace: str
) -> None:
    create_missing(kube, deployer(namespace))
    files = {"cm.yml": config_map("quick", a="b")}
    app = inline_app("progress", namespace, files, syncPeriod="10m")
    app["spec"]["deploy"] = [{"kapp": {"rawOptions": ["--wait-timeout=6s", "--wait-check-interval=0.5s"]}}]
    kube.create(App(**app))
    eventually(lambda: condition(kube, namespace, "progress") == "ReconcileSucceeded", timeout=30, what="deployed")
    slow = {**files, "slow.yml": config_map("slow", a="b"), "config.yml": NEVER_READY % namespace}
    with StatusWatcher(kube, namespace, "progress") as watcher:
        kube.patch(
            App,
            "progress",
            {"spec": {"fetch": [{"inline": {"paths": slow}}]}},
            namespace=namespace,
            patch_type=PatchType.MERGE,
        )
        eventually(lambda: condition(kube, namespace, "progress") == "ReconcileFailed", timeout=60, what="timed out")
    kinds = [kind for kind, _, _ in watcher.seen]
    assert kinds[0] == "ReconcileSucceeded" and "Reconciling" in kinds and kinds[-1] == "ReconcileFailed", kinds
    running_outputs = [out for kind, finished, out in watcher.seen if kind == "Reconciling" and finished is False]
    assert len(running_outputs) >= 2, watcher.seen  # the plan, then progress while it waits
    assert "slow" in running_outputs[0] and "Op:      1 create" in running_outputs[0], running_outputs[0]
    assert any("waiting on 1 changes" in out for out in running_outputs[1:]), running_outputs
    final = status(kube, namespace, "progress")["deploy"]
    assert final["finished"] is True and final["exitCode"] == 1, final


def test_deleting_the_namespace_of_an_app_whose_account_went_with_it_is_logged(
    running: Path, kube: Client, namespace: str
) -> None:
    create_missing(kube, deployer(namespace))
    kube.create(App(**inline_app("doomed", namespace, {"cm.yml": config_map("cm", a="b")})))
    eventually(lambda: condition(kube, namespace, "doomed") == "ReconcileSucceeded", timeout=30, what="deployed")
    kube.delete(ServiceAccount, "deployer", namespace=namespace)
    kube.delete(App, "doomed", namespace=namespace)
    eventually(lambda: condition(kube, namespace, "doomed") == "DeleteFailed", timeout=30, what="DeleteFailed")
    kube.delete(Namespace, namespace)
    eventually(
        lambda: f"{namespace}/doomed: Namespace {namespace} is being deleted" in running.read_text(),
        timeout=60,
        what="the skipped delete logged",
    )


def test_the_controller_process_is_alive(running: Path) -> None:
    assert "Traceback" not in running.read_text()
