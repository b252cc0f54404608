"""A running controller observed as Prometheus and the kubelet would: /metrics with the reconcile counters and
durations of its Apps (kapply's, and kapp-controller's counters and time gauges with its names and labels), the API
requests of its own identity and of the Apps' service accounts, an App's drift gauge after an outside change under
`driftPolicy: warn`, a failing App counted as a failure; /healthz and /readyz; and its JSON log, one object per line
naming the App each line is about."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.controller_harness import (
    App,
    Controllers,
    condition,
    config_map,
    create_all,
    deployer,
    endpoint,
    inline_app,
    install_crd,
    status,
    tool_env,
)
from tests.e2e.harness import Cluster, eventually

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def crd(cluster: Cluster, kube: Client) -> None:
    install_crd(cluster.kubeconfig, kube)


@pytest.fixture
def controllers(cluster: Cluster, kube: Client, namespace: str, tmp_path: Path) -> Iterator[Controllers]:
    running = Controllers(cluster.kubeconfig, kube, namespace, tmp_path)
    try:
        yield running
    finally:
        running.close()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read().decode()


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    code, text = get(url + "/metrics")
    assert code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_probes_and_json_logs_of_a_running_controller(
    crd: None, kube: Client, namespace: str, controllers: Controllers
) -> None:
    create_all(kube, deployer(namespace))
    controllers.start("--leader-elect=false", "--log-format=json", env=tool_env("ytt"))
    url = endpoint(controllers.logs_by_name["controller"])
    assert get(url + "/healthz") == (200, "ok\n")
    eventually(lambda: get(url + "/readyz")[0] == 200, timeout=30, what="ready (the App watch listed)")

    kube.create(App(**inline_app("warned", namespace, {"cm.yml": config_map("warned", v="1")}, driftPolicy="warn")))
    broken = inline_app("broken", namespace, {"cm.yml": config_map("broken", v="1")})
    broken["spec"]["serviceAccountName"] = "missing"
    kube.create(App(**broken))
    eventually(lambda: condition(kube, namespace, "warned") == "ReconcileSucceeded", timeout=60, what="success")
    eventually(lambda: condition(kube, namespace, "broken") == "ReconcileFailed", timeout=60, what="failure")

    def value(metric: str, **labels: str) -> float:
        return scrape(url).get((metric, tuple(sorted(labels.items()))), 0.0)

    eventually(lambda: value("kapply_reconcile_total", kind="App", result="success") >= 2, timeout=20, what="syncs")
    found = scrape(url)
    assert value("kapply_reconcile_total", kind="App", result="failure") >= 1
    assert found[("kapply_reconcile_duration_seconds_count", (("kind", "App"),))] >= 3
    assert found[("kapply_deploy_duration_seconds_count", (("result", "success"),))] >= 1
    requests = {labels: n for (name, labels), n in found.items() if name == "kapply_api_requests_total"}
    clients = {dict(labels)["client"] for labels in requests}
    methods = {dict(labels)["method"] for labels in requests}
    assert clients == {"controller", "app"} and {"GET", "PUT", "WATCH"} <= methods, requests
    assert found[("kapply_shards_held", ())] == 1 and found[("kapply_objects", (("kind", "App"),))] == 2
    assert found[("kapply_queue_scheduled", (("kind", "App"),))] == 2
    assert not any(name == "kapply_app_drift_fields" for name, _ in found)

    # kapp-controller's series, as its dashboards read them: the counters, and the four time gauges of a first pass
    def labels(name: str, **more: str) -> tuple[tuple[str, str], ...]:
        return tuple(sorted({"controller": "App", "name": name, "namespace": namespace, **more}.items()))

    assert found[("kappctrl_app_reconcile_attempt_total", labels("warned"))] >= 1
    assert found[("kappctrl_app_reconcile_success_total", labels("warned"))] >= 1
    assert found[("kappctrl_app_reconcile_failure_total", labels("broken"))] >= 1
    for stage in ("", "fetch_", "template_", "deploy_"):
        assert found[(f"kappctrl_reconcile_{stage}time_seconds", labels("warned", firstReconcile="true"))] > 0
    assert found[("kappctrl_reconcile_time_seconds", labels("broken", firstReconcile="true"))] > 0

    # Drift under `warn`: kept, listed in the status, and a gauge for the App.
    kube.patch(ConfigMap, "warned", {"data": {"v": "edited"}}, namespace=namespace, field_manager="kubectl")
    eventually(lambda: (status(kube, namespace, "warned").get("drift") or {}).get("fields"), timeout=20, what="drift")
    eventually(
        lambda: value("kapply_app_drift_fields", namespace=namespace, name="warned") == 1,
        timeout=10,
        what="the drift gauge",
    )

    # The log: one JSON object per line; the lines about an App name it, and when its reconcile started.
    lines = [json.loads(line) for line in controllers.logs_by_name["controller"].read_text().splitlines()]
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    about = [line for line in lines if line.get("namespace") == namespace]
    assert {line["name"] for line in about} == {"warned", "broken"}
    assert all(line["kind"] == "App" and line["reconcileStarted"] <= line["time"] for line in about)
    failed = [line for line in about if line["name"] == "broken" and line["level"] == "warning"]
    assert failed and "retrying in" in failed[0]["message"]
