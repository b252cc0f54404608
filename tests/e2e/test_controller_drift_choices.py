"""The package consumer's and the operator's drift choices with a real controller process (issue 30): a PackageInstall's
`driftPolicy` reaches its App; `--default-drift-policy` is the policy of Apps that set none; `--drift-watches=off`
leaves drift to the sync period, with no watch of the Apps' objects.

One controller for the module (`--default-drift-policy=warn --drift-watches=off`, its own namespace): each test's App
says which of the choices it shows, and every claim is checked on what the controller reports (the policy named in
status.drift, its reconcile counters), never on a guess of time.
"""

from __future__ import annotations

import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap, Event, Namespace
from lightkube.types import PatchType
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.controller_harness import (
    App,
    app_syncs,
    condition,
    config_map,
    config_map_data,
    controller,
    create_all,
    delete_apps,
    deployer,
    endpoint,
    inline_app,
    log_lines,
    status,
    tool_env,
    wait_syncs,
)
from tests.e2e.harness import Cluster, eventually
from tests.e2e.packaging_harness import (
    PackageInstall,
    config_map_package,
    create,
    delete_and_wait,
    get,
    install,
    install_crds,
)

pytestmark = pytest.mark.e2e
REF = "choices.test.carvel.dev"


class Running:
    def __init__(self, namespace: str, log: Path, url: str) -> None:
        self.namespace, self.log, self.url = namespace, log, url


@pytest.fixture(scope="module")
def running(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """The module's controller, reconciling its own namespace's Apps and PackageInstalls."""
    install_crds(cluster, kube)
    namespace = f"t-drift-choices-{uuid.uuid4().hex[:5]}"
    kube.create(Namespace.from_dict({"metadata": {"name": namespace}}))
    create_all(kube, deployer(namespace))
    log = tmp_path_factory.mktemp("controller") / "controller.log"
    flags = ("-n", namespace, "--leader-elect=false", f"--packaging-global-namespace={namespace}-global")
    choices = ("--default-drift-policy=warn", "--drift-watches=off")
    try:
        with controller(cluster.kubeconfig, log, *flags, *choices, env=tool_env("ytt")):
            try:
                yield Running(namespace, log, endpoint(log))
            finally:
                delete_and_wait(kube, PackageInstall, namespace)
                delete_apps(kube, namespace)
                print(log_lines(log, namespace))
    finally:
        kube.delete(Namespace, namespace)


def edit(kube: Client, namespace: str, name: str, value: str) -> None:
    """What a person's `kubectl edit` of the ConfigMap's `hello_msg` does."""
    patch = {"data": {"hello_msg": value}}
    kube.patch(ConfigMap, name, patch, namespace=namespace, patch_type=PatchType.MERGE, field_manager="kubectl-edit")


def hello(kube: Client, namespace: str, name: str) -> str | None:
    return (config_map_data(kube, namespace, name) or {}).get("hello_msg")


def drift(kube: Client, namespace: str, app: str) -> dict[str, object]:
    return dict(status(kube, namespace, app).get("drift") or {})


def create_app(kube: Client, namespace: str, name: str, **spec: object) -> None:
    files = {"cm.yml": config_map(f"{name}-cm", hello_msg="desired")}
    kube.create(App(**inline_app(name, namespace, files, **spec)))
    eventually(lambda: condition(kube, namespace, name) == "ReconcileSucceeded", timeout=60, what="the first deploy")


def test_a_package_install_with_drift_policy_preserve_keeps_an_outside_edit(running: Running, kube: Client) -> None:
    namespace = running.namespace
    create(kube, namespace, config_map_package(REF, "1.0.0"), install("pkgi", REF, "1.0.0", driftPolicy="preserve"))
    eventually(lambda: hello(kube, namespace, "pkg-cm") == "stranger", timeout=60, what="the package deployed")
    assert (get(kube, App, namespace, "pkgi") or {})["spec"]["driftPolicy"] == "preserve"
    edit(kube, namespace, "pkg-cm", "edited")
    reported = eventually(lambda: drift(kube, namespace, "pkgi"), timeout=30, what="the edit reported")
    assert reported["policy"] == "preserve", reported  # the install's, not the controller's default (warn)
    assert [f["path"] for f in reported["fields"]] == ["data.hello_msg"], reported  # type: ignore[attr-defined]
    wait_syncs(running.url, namespace, "pkgi", 2)
    assert hello(kube, namespace, "pkg-cm") == "edited"
    assert not [e for e in kube.list(Event, namespace=namespace) if e.reason == "Drift" and "pkg-cm" in e.message]


def test_an_app_without_a_drift_policy_has_the_controllers_default(running: Running, kube: Client) -> None:
    namespace = running.namespace
    create_app(kube, namespace, "defaulted")
    edit(kube, namespace, "defaulted-cm", "edited")
    reported = eventually(lambda: drift(kube, namespace, "defaulted"), timeout=30, what="the edit reported")
    assert reported["policy"] == "warn", reported
    wait_syncs(running.url, namespace, "defaulted", 2)
    assert hello(kube, namespace, "defaulted-cm") == "edited"
    events = [e for e in kube.list(Event, namespace=namespace) if e.reason == "Drift"]
    assert [e.type for e in events if "defaulted-cm" in e.message] == ["Warning"], "reported once"


def drift_watches(url: str) -> float:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    return float(families["kapply_drift_watches"].samples[0].value)


def test_without_drift_watches_an_edit_waits_for_the_sync_period(running: Running, kube: Client) -> None:
    """With the watches (the default) the edit would be set back within about a second (main.DEBOUNCE); without them
    it holds until the App's next periodic sync, which sets it back."""
    namespace, name = running.namespace, "unwatched"
    create_app(kube, namespace, name, driftPolicy="enforce", syncPeriod="6s")
    assert drift_watches(running.url) == 0
    wait_syncs(running.url, namespace, name)  # one just ended: the next starts about 6 s from now
    started = app_syncs(running.url, namespace)[name][0]
    edit(kube, namespace, f"{name}-cm", "edited")
    edited = time.monotonic()
    held = 0.0
    while app_syncs(running.url, namespace)[name][0] == started:  # no reconcile has started since the edit
        assert hello(kube, namespace, f"{name}-cm") == "edited"
        held = time.monotonic() - edited
        assert held < 30, "the periodic sync never came"
        time.sleep(0.2)
    assert held > 2.5, f"a reconcile started {held:.1f}s after the edit: a drift event, not the sync period"
    eventually(lambda: hello(kube, namespace, f"{name}-cm") == "desired", timeout=15, what="set back by the sync")
