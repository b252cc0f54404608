"""kapp-controller's per-App reconcile counters (`kappctrl_app_reconcile_*_total`): their exposition (names, labels:
`controller` is the kind, `App`; all five from an App's first count, gone with the App), and where the App reconciler
counts: an attempt where a pass starts (a paused App's counters are there at 0, as kapp-controller's InitMetrics makes
them), success and failure once the status is written, delete attempt and failure, forgotten when the App is gone.
The e2e tests wait on these counters instead of sleeping (tests/e2e/controller_harness.py)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kapply.controller.cache import Cache
from kapply.controller.deploy import Deployed
from kapply.controller.main import Controller, ControllerOptions
from kapply.controller.metrics import APP, AppCount, KindSeries, Metrics
from kapply.controller.reconciler import Done, Failed, Reconciler
from kapply.controller.spec import FINALIZER, parse_spec
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj

NAMES = [
    f"kappctrl_app_reconcile_{c}_total" for c in ("attempt", "success", "failure", "delete_attempt", "delete_failed")
]


def exposed(metrics: Metrics) -> dict[tuple[str, str, str], dict[str, float]]:
    """The counters' samples: by (controller, namespace, name), each counter's value by its name."""
    text = generate_latest(metrics.registry).decode()
    found: dict[tuple[str, str, str], dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.startswith("kappctrl_app_reconcile_"):
                key = (s.labels["controller"], s.labels["namespace"], s.labels["name"])
                found.setdefault(key, {})[s.name] = s.value
    return found


def test_an_apps_five_counters_appear_at_its_first_count_and_go_with_it() -> None:
    metrics = Metrics()
    assert exposed(metrics) == {}
    apps = metrics.kappctrl.of(APP)
    apps.count("team", "web", AppCount.ATTEMPT)
    apps.count("team", "web", AppCount.ATTEMPT)
    apps.count("team", "web", AppCount.SUCCESS)
    apps.count("other", "db", AppCount.DELETE_ATTEMPT)
    found = exposed(metrics)
    assert found[("App", "team", "web")] == dict(zip(NAMES, [2.0, 1.0, 0.0, 0.0, 0.0], strict=True))
    assert found[("App", "other", "db")] == dict(zip(NAMES, [0.0, 0.0, 0.0, 1.0, 0.0], strict=True))
    text = generate_latest(metrics.registry).decode()
    assert "kappctrl_app_reconcile_attempt_created" not in text  # no second series per App
    apps.forget("team", "web")
    apps.forget("team", "never-counted")
    assert set(exposed(metrics)) == {("App", "other", "db")}


class Cluster:
    """Records the status writes; holds the App `stored` (or none), whose finalizer cannot be removed (500)."""

    def __init__(self) -> None:
        self.writes: list[Obj] = []
        self.stored: Obj | None = None

    async def write_status(self, rtype: Any, obj: Obj, status: Obj, **_: Any) -> None:
        self.writes.append(status)

    async def get(self, *_: Any) -> Obj | None:
        return self.stored

    async def remove_finalizer(self, *_: Any) -> None:
        if self.stored is not None:
            raise ClusterError("the API server failed", 500)


class Api:
    def __init__(self) -> None:
        self.cluster = Cluster()


class Events:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    async def emit(self, app: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        self.reasons.append(reason)


VALID: Obj = {
    "serviceAccountName": "sa",
    "fetch": [{"inline": {}}],
    "template": [{"ytt": {}}],
    "deploy": [{"kapp": {}}],
}


def app(spec: Obj, **metadata: Any) -> Obj:
    return {
        "apiVersion": "kapply.dev/v1alpha1",
        "kind": "App",
        "metadata": {"name": "web", "namespace": "team", "generation": 1, "resourceVersion": "1", **metadata},
        "spec": spec,
    }


def reconciler(*apps: Obj) -> tuple[Reconciler, Cluster, Events]:
    cache = Cache()
    for each in apps:
        cache.apps.put(each)
    api = Api()
    r = Reconciler(api, cache=cache, counts=KindSeries())  # type: ignore[arg-type]
    events = r.events = Events()  # type: ignore[assignment]
    return r, api.cluster, events


def counted(r: Reconciler) -> dict[tuple[str, str], list[float]]:
    """Each App's five counters, in NAMES' order."""
    found: dict[tuple[str, str], list[float]] = {}
    for family in r.counts.metrics.collect():
        for s in family.samples if family.type == "counter" else ():
            found.setdefault((s.labels["namespace"], s.labels["name"]), []).append(s.value)
    return found


def test_a_failed_pass_counts_an_attempt_and_a_failure_once_its_status_is_written() -> None:
    r, cluster, events = reconciler(app({"serviceAccountName": "sa"}))  # nothing to fetch: an invalid spec
    asyncio.run(r.reconcile("team", "web"))
    assert counted(r) == {("team", "web"): [1, 0, 1, 0, 0]}
    assert cluster.writes[-1]["friendlyDescription"].startswith("Reconcile failed")
    assert events.reasons == ["ReconcileFailed"]


def test_a_pass_that_deployed_counts_a_success_once_its_status_is_written() -> None:
    r, cluster, _ = reconciler()
    the_app = app(VALID)
    deployed = Deployed(1, True, "applied", "digest", (), ())
    asyncio.run(r._succeeded(the_app, parse_spec(the_app), {"observedGeneration": 1}, {}, Done(deployed, "now")))
    assert counted(r) == {("team", "web"): [0, 1, 0, 0, 0]}
    assert cluster.writes[-1]["friendlyDescription"] == "Reconcile succeeded"


def test_a_paused_app_counts_nothing_and_a_gone_one_is_forgotten() -> None:
    r, cluster, _ = reconciler(app({**VALID, "paused": True}))
    asyncio.run(r.reconcile("team", "web"))
    assert counted(r) == {("team", "web"): [0, 0, 0, 0, 0]}
    assert cluster.writes[-1]["friendlyDescription"] == "Canceled/paused"
    r.counts.count("team", "gone", AppCount.ATTEMPT)
    assert asyncio.run(r.reconcile("team", "gone")) is None  # neither in the cache nor on the API server
    assert counted(r) == {("team", "web"): [0, 0, 0, 0, 0]}


def test_a_delete_counts_its_attempt_and_the_counters_go_with_the_app() -> None:
    deleting = app({**VALID, "noopDelete": True}, deletionTimestamp="2026-01-01T00:00:00Z", finalizers=[FINALIZER])
    r, cluster, _ = reconciler(deleting)
    cluster.stored = deleting  # its finalizer cannot be removed (500): the pass raises, its attempt counted
    with pytest.raises(ClusterError):
        asyncio.run(r.reconcile("team", "web"))
    assert counted(r) == {("team", "web"): [0, 0, 0, 1, 0]}
    cluster.stored = None  # then it is gone: its counters with it
    asyncio.run(r.reconcile("team", "web"))
    assert counted(r) == {}


def test_a_failed_delete_counts_a_delete_failure_once_its_status_is_written() -> None:
    deleting = app({**VALID}, deletionTimestamp="2026-01-01T00:00:00Z", finalizers=[FINALIZER])
    r, cluster, events = reconciler()
    asyncio.run(r._delete_failed(deleting, parse_spec(deleting), KapplyError("forbidden")))
    assert counted(r) == {("team", "web"): [0, 0, 0, 0, 1]}
    assert cluster.writes[-1]["friendlyDescription"].startswith("Delete failed") and events.reasons == ["DeleteFailed"]


def test_the_controllers_app_reconciler_counts_into_its_metrics() -> None:
    c = Controller(SimpleNamespace(cluster=SimpleNamespace()), ControllerOptions())  # type: ignore[arg-type]
    assert c.reconciler.counts == c.metrics.kappctrl.of("App") and c.reconciler.counts.metrics is c.metrics.kappctrl


def test_a_failed_stage_s_entries_are_in_the_status_it_fails_with() -> None:
    r, cluster, _ = reconciler()
    the_app = app(VALID)
    fetch = {"exitCode": 1, "error": "Fetching resources: no"}
    again = asyncio.run(
        r._fail(the_app, {"observedGeneration": 1}, parse_spec(the_app), Failed("no", "err", {"fetch": fetch}))
    )
    written = cluster.writes[-1]
    assert written["fetch"] == fetch and written["friendlyDescription"] == "Reconcile failed: no"
    assert written["usefulErrorMessage"] == "err" and again > 0
