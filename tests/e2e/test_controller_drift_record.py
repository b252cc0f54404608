"""Drift is never laundered (seed 004 extended): a field left drifted under `warn` stays reported after a deploy of
another desired change, the real kapp's diff shows it as the true difference, and `enforce` reverts it; with the
real controller process, and with `kapply deploy --drift-policy` alone.

Before, such a deploy recorded the desired state as last applied with an MD5 that absorbed the drifted value, so
that the record "certified" the drifted object: nothing reported the drift again, `enforce` reverted nothing, and
kapp's `--diff-run` showed no change.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.resources.apps_v1 import Deployment
from lightkube.types import PatchType

from kapply.objects import DRIFT_KEPT
from tests.e2e.controller_harness import (
    App,
    admin_identity,
    condition,
    create_if_missing,
    delete_apps_and_show_log,
    deployer,
    endpoint,
    inline_app,
    running_controller,
    status,
    wait_syncs,
)
from tests.e2e.harness import Cluster, KapplyRunner, KappRun, eventually
from tests.e2e.web_drift import deployed, deployment, events, scale, set_files

pytestmark = pytest.mark.e2e

IDENTITY_NAMESPACE = "kapply-drift-record-tests"
RAW_OPTIONS = ["--app-changes-max-to-keep=100", "--wait-check-interval=0.5s"]
NEW_IMAGE = "registry.k8s.io/pause:3.9"  # the desired change (deployment()'s image is pause:3.10)


@pytest.fixture(scope="module")
def controller_kubeconfig(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A kubeconfig for the ServiceAccount the controller runs as (cluster-admin), as in test_controller_drift.py but
    in a namespace of this module's own (that module deletes its own when it ends)."""
    with admin_identity(cluster.kubeconfig, kube, IDENTITY_NAMESPACE, tmp_path_factory.mktemp("identity")) as path:
        yield path


@pytest.fixture(scope="module")
def running(
    cluster: Cluster, kube: Client, controller_kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[subprocess.Popen]:
    directory = tmp_path_factory.mktemp("controller")
    with running_controller(cluster, kube, controller_kubeconfig, directory) as process:
        yield process


@pytest.fixture
def apps_deleted(running: subprocess.Popen, kube: Client, namespace: str) -> Iterator[None]:
    """Afterwards the test's Apps are deleted while the controller runs, and the controller's log lines about the
    namespace are printed (shown when the test fails)."""
    yield
    delete_apps_and_show_log(kube, namespace, running)


_CHANGED_LINE = re.compile(r"\s*\d+\s+([-+]) (.*)")  # `` 95     -   replicas: 0``; context lines have `95, 95`


def kapp_diff(kapp: KappRun, app: str, namespace: str, manifest: Path) -> list[tuple[str, str]]:
    """The lines the real kapp's `deploy --diff-run --diff-changes` shows as removed and added, as (`-`/`+`, text)."""
    result = kapp("deploy", "-a", app, "-n", namespace, "-f", str(manifest), "--diff-run", "--diff-changes")
    assert result.returncode == 0, result.stdout + result.stderr
    changed = [m.groups() for line in result.stdout.splitlines() if (m := _CHANGED_LINE.fullmatch(line))]
    return [(sign, text.strip()) for sign, text in changed]


def kapp_sees_no_changes(kapp: KappRun, app: str, namespace: str, manifest: Path) -> None:
    result = kapp("deploy", "-a", app, "-n", namespace, "-f", str(manifest), "--diff-run", "--diff-exit-status", "-c")
    assert result.returncode == 2, f"kapp found changes (exit {result.returncode}):\n{result.stdout}{result.stderr}"


def live(kube: Client, namespace: str) -> Deployment:
    return kube.get(Deployment, "web", namespace=namespace)


def image(kube: Client, namespace: str) -> str:
    return str(live(kube, namespace).spec.template.spec.containers[0].image)


def drift(kube: Client, namespace: str, name: str) -> list[tuple[str, str, str]]:
    fields = (status(kube, namespace, name).get("drift") or {}).get("fields") or []
    return [(f["path"], f["desired"], f["live"]) for f in fields]


REPLICAS_REVERTED = [("-", "replicas: 0"), ("+", "replicas: 2")]


def test_seed_004_warn_keeps_reporting_drift_after_a_desired_change_and_enforce_then_reverts_it(
    running: subprocess.Popen, apps_deleted: None, kube: Client, namespace: str, kapp: KappRun, tmp_path: Path
) -> None:
    for doc in yaml.safe_load_all(deployer(namespace)):
        create_if_missing(kube, from_dict(doc))
    # 1 s syncs: the test counts syncs, not seconds
    spec = {"deploy": [{"kapp": {"rawOptions": RAW_OPTIONS}}], "driftPolicy": "warn", "syncPeriod": "1s"}
    kube.create(App(**inline_app("web", namespace, {"web.yml": deployment(2)}, **spec)))
    eventually(lambda: condition(kube, namespace, "web") == "ReconcileSucceeded", timeout=60, what="the first deploy")
    scale(kube, namespace, 0)
    eventually(lambda: drift(kube, namespace, "web") == [("spec.replicas", "2", "0")], timeout=30, what="the drift")

    generation = set_files(kube, namespace, "web", {"web.yml": deployment(2, NEW_IMAGE)})
    eventually(lambda: deployed(kube, namespace, "web", generation), timeout=60, what="the new image deployed")
    assert image(kube, namespace) == NEW_IMAGE
    wait_syncs(endpoint(running.log), namespace, "web", 2)  # type: ignore[attr-defined]
    assert live(kube, namespace).spec.replicas == 0, "warn reverts nothing"
    assert drift(kube, namespace, "web") == [("spec.replicas", "2", "0")], "the drift is still reported"
    assert [e.type for e in events(kube, namespace, "Drift")][:1] == ["Warning"]
    assert live(kube, namespace).metadata.annotations[DRIFT_KEPT] == '[[["spec","replicas"],2]]'

    desired = tmp_path / "web.yml"
    desired.write_text(deployment(2, NEW_IMAGE))
    assert kapp_diff(kapp, "web.app", namespace, desired) == REPLICAS_REVERTED  # the true difference, and only it

    kube.patch(App, "web", {"spec": {"driftPolicy": "enforce"}}, namespace=namespace, patch_type=PatchType.MERGE)
    eventually(lambda: live(kube, namespace).spec.replicas == 2, timeout=30, what="the replicas set back")
    eventually(lambda: "drift" not in status(kube, namespace, "web"), timeout=30, what="the drift report cleared")
    assert DRIFT_KEPT not in (live(kube, namespace).metadata.annotations or {})
    kapp_sees_no_changes(kapp, "web.app", namespace, desired)


def test_cli_warn_deploys_record_what_they_applied_and_enforce_reverts_the_drift(
    kube: Client, namespace: str, kapply: KapplyRunner, kapp: KappRun, tmp_path: Path
) -> None:
    kapply.deploy(namespace, deployment(2), "--drift-policy=warn", app="web")
    scale(kube, namespace, 0)
    note = "Fields changed on the cluster by others: left as is (drift policy warn)"
    field = "spec.replicas: desired 2, live 0, written by"

    changed = kapply.deploy(namespace, deployment(2, NEW_IMAGE), "--drift-policy=warn", app="web")
    assert note in changed.stdout and field in changed.stdout, changed.stdout
    assert (image(kube, namespace), live(kube, namespace).spec.replicas) == (NEW_IMAGE, 0)

    again = kapply.deploy(namespace, deployment(2, NEW_IMAGE), "--drift-policy=warn", app="web")
    assert "0 update" in again.stdout, again.stdout
    assert note in again.stdout and field in again.stdout, "the drift is still reported:\n" + again.stdout

    desired = tmp_path / "web.yml"
    desired.write_text(deployment(2, NEW_IMAGE))
    assert kapp_diff(kapp, "web", namespace, desired) == REPLICAS_REVERTED

    enforced = kapply.deploy(namespace, deployment(2, NEW_IMAGE), "--drift-policy=enforce", "-c", app="web")
    assert "Fields changed on the cluster by others: set back to the desired value" in enforced.stdout
    assert field in enforced.stdout, enforced.stdout
    assert live(kube, namespace).spec.replicas == 2
    kapp_sees_no_changes(kapp, "web", namespace, desired)


def test_kapp_deploying_over_a_kept_drift_reverts_it_and_leaves_nothing_drifted(
    kube: Client, namespace: str, kapply: KapplyRunner, kapp: KappRun, tmp_path: Path
) -> None:
    kapply.deploy(namespace, deployment(2), "--drift-policy=preserve", app="web")
    scale(kube, namespace, 0)
    kapply.deploy(namespace, deployment(2, NEW_IMAGE), "--drift-policy=preserve", app="web")
    assert DRIFT_KEPT in live(kube, namespace).metadata.annotations

    desired = tmp_path / "web.yml"
    desired.write_text(deployment(2, NEW_IMAGE))
    result = kapp("deploy", "-a", "web", "-n", namespace, "-f", str(desired), "-y", "--wait-check-interval=0.5s")
    assert result.returncode == 0, result.stdout + result.stderr
    obj = live(kube, namespace)
    assert obj.spec.replicas == 2 and DRIFT_KEPT not in obj.metadata.annotations

    after = kapply(
        "deploy", "-a", "web", "-n", namespace, "-f", str(desired),
        "--drift-policy=warn", "--diff-run", "--diff-exit-status",
    )  # fmt: skip
    assert after.returncode == 2, after.stdout + after.stderr
    assert "Fields changed on the cluster by others" not in after.stdout
