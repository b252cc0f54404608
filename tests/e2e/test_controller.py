"""The App controller as a real process: Apps reconciled on their sync period, reported as kapp-controller reports
them, deleted with their resources, and failures that name their cause while other Apps go on."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import ConfigMap
from lightkube.types import PatchType

from tests.e2e.controller_harness import (
    App,
    condition,
    delete_apps_and_show_log,
    deployer,
    endpoint,
    inline_app,
    running_controller,
    status,
    wait_syncs,
)
from tests.e2e.harness import Cluster, eventually

pytestmark = pytest.mark.e2e

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeting}\ndata: {text: hi}\n"


@pytest.fixture(scope="module")
def running(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen]:
    """The CRD installed with kapply itself, and one controller for the module's tests."""
    # --dangerous-allow-file-urls: test_bad_input_fails_the_app_with_a_useful_message_and_others_go_on fetches a
    # file:// URL that names no repository, to see git's failure reported.
    directory = tmp_path_factory.mktemp("controller")
    with running_controller(cluster, kube, cluster.kubeconfig, directory, "--dangerous-allow-file-urls") as process:
        yield process


@pytest.fixture(autouse=True)
def apps_deleted_first(running: subprocess.Popen, kube: Client, namespace: str) -> Iterator[None]:
    """Afterwards the test's Apps are deleted while the controller runs (their finalizer needs it), and the
    controller's log lines about the namespace are printed (shown when the test fails)."""
    yield
    delete_apps_and_show_log(kube, namespace, running)


def apply(kube: Client, text: str) -> None:
    for doc in yaml.safe_load_all(text):
        kube.apply(App(**doc) if doc["kind"] == "App" else _resource(doc), field_manager="test")


def _resource(doc: dict):
    from lightkube.codecs import from_dict

    return from_dict(doc)


def test_an_app_is_deployed_reported_and_deleted_with_its_resources(running, kube: Client, namespace: str):
    apply(kube, deployer(namespace))
    kube.create(App(**inline_app("hello", namespace, {"cm.yml": CM})))
    eventually(lambda: condition(kube, namespace, "hello") == "ReconcileSucceeded", timeout=30, what="success")
    assert kube.get(ConfigMap, "greeting", namespace=namespace).data == {"text": "hi"}
    reported = status(kube, namespace, "hello")
    assert reported["friendlyDescription"] == "Reconcile succeeded" and reported["observedGeneration"] == 1
    assert reported["deploy"]["exitCode"] == 0 and "create configmap/greeting (v1)" in reported["deploy"]["stdout"]
    assert reported["fetch"]["exitCode"] == 0 and "LockConfig" in reported["fetch"]["stdout"]
    assert kube.get(App, "hello", namespace=namespace).metadata.finalizers == ["finalizers.kapply.dev/delete"]
    record = kube.get(ConfigMap, "hello.app", namespace=namespace)  # the kapp app, named as kapp-controller names it
    assert "kapp.k14s.io/is-app" in record.metadata.labels

    kube.delete(App, "hello", namespace=namespace)

    def gone() -> bool:
        try:
            kube.get(App, "hello", namespace=namespace)
        except ApiError as e:
            return e.status.code == 404
        return False

    eventually(gone, timeout=30, what="the App to be deleted")
    with pytest.raises(ApiError):
        kube.get(ConfigMap, "greeting", namespace=namespace)


def test_a_change_to_the_spec_is_deployed_and_a_paused_app_is_left_alone(running, kube: Client, namespace: str):
    apply(kube, deployer(namespace))
    kube.create(App(**inline_app("hello", namespace, {"cm.yml": CM})))
    witness = CM.replace("greeting", "witness")  # an App on the same 2 s period, not paused: its syncs tell the time
    kube.create(App(**inline_app("witness", namespace, {"cm.yml": witness})))
    eventually(lambda: condition(kube, namespace, "hello") == "ReconcileSucceeded", timeout=30, what="success")
    kube.patch(
        App,
        "hello",
        {"spec": {"fetch": [{"inline": {"paths": {"cm.yml": CM.replace("hi", "hey")}}}]}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )
    eventually(
        lambda: kube.get(ConfigMap, "greeting", namespace=namespace).data == {"text": "hey"},
        timeout=30,
        what="the change deployed",
    )
    kube.patch(App, "hello", {"spec": {"paused": True}}, namespace=namespace, patch_type=PatchType.MERGE)
    eventually(
        lambda: status(kube, namespace, "hello").get("friendlyDescription") == "Canceled/paused",
        timeout=30,
        what="paused",
    )
    kube.patch(ConfigMap, "greeting", {"data": {"text": "changed by hand"}}, namespace=namespace)
    wait_syncs(endpoint(running.log), namespace, "witness", 2)  # two sync periods: a paused App is not reconciled
    assert kube.get(ConfigMap, "greeting", namespace=namespace).data == {"text": "changed by hand"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"fetch": [{"git": {"url": "file:///nonexistent/repo.git"}}]}, "Fetching resources: Fetching git"),
        ({"template": [{"ytt": {"paths": ["missing.yml"]}}]}, "Templating dir: ytt failed"),
        ({"fetch": [{"inline": {"paths": {"cm.yml": "kind: [broken"}}}]}, "Templating dir"),
        (
            {"fetch": [{"inline": {"paths": {"cm.yml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n"}}}]},
            "Deploying: Validation errors",
        ),
        (
            {"fetch": [{"svn": {"url": "https://example.invalid/x"}}]},
            "Fetching (0): Unsupported way to fetch templates",
        ),
    ],
)
def test_bad_input_fails_the_app_with_a_useful_message_and_others_go_on(
    running, kube: Client, namespace: str, spec: dict, message: str
):
    apply(kube, deployer(namespace))
    kube.create(App(**inline_app("broken", namespace, {"cm.yml": CM}, **spec)))
    kube.create(App(**inline_app("fine", namespace, {"cm.yml": CM.replace("greeting", "fine")})))
    eventually(lambda: condition(kube, namespace, "broken") == "ReconcileFailed", timeout=30, what="the failure")
    reported = status(kube, namespace, "broken")
    assert message in reported["friendlyDescription"], reported
    assert reported["usefulErrorMessage"] and reported["consecutiveReconcileFailures"] >= 1
    eventually(lambda: condition(kube, namespace, "fine") == "ReconcileSucceeded", timeout=30, what="the other App")


def test_a_service_account_without_rights_fails_clearly_and_creates_nothing(running, kube: Client, namespace: str):
    apply(kube, deployer(namespace, rules=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]))
    kube.create(App(**inline_app("denied", namespace, {"cm.yml": CM})))
    eventually(lambda: condition(kube, namespace, "denied") == "ReconcileFailed", timeout=30, what="the failure")
    reported = status(kube, namespace, "denied")
    assert (
        "forbidden" in reported["usefulErrorMessage"]
        and f"system:serviceaccount:{namespace}:deployer" in (reported["usefulErrorMessage"])
    )
    with pytest.raises(ApiError):
        kube.get(ConfigMap, "greeting", namespace=namespace)


def test_drift_on_a_watched_object_is_reverted_within_seconds(running, kube: Client, namespace: str):
    apply(kube, deployer(namespace))
    kube.create(App(**inline_app("steady", namespace, {"cm.yml": CM}, syncPeriod="10m")))
    eventually(lambda: condition(kube, namespace, "steady") == "ReconcileSucceeded", timeout=30, what="success")
    kube.patch(ConfigMap, "greeting", {"data": {"text": "edited"}}, namespace=namespace, field_manager="kubectl-edit")
    eventually(
        lambda: kube.get(ConfigMap, "greeting", namespace=namespace).data == {"text": "hi"},
        timeout=5,
        interval=0.2,
        what="the edit reverted",
    )
