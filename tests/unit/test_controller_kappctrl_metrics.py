"""kapp-controller's reconcile time gauges (`kappctrl_reconcile_time_seconds` and its fetch, template and deploy
variants) and its counters of PackageRepositories: their exposition (kapp-controller's names, types, help texts and
labels: `controller` the kind, `name`, `namespace`, `firstReconcile`), the clock that sets them, and where the App and
PackageRepository reconcilers time each stage (a stage's time when it ends, failed or not; the overall time when the
deploy ended or a stage failed), against in-memory fakes of the sandbox, the deploy and the API server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kapply.controller.cache import Cache
from kapply.controller.deploy import Deployed
from kapply.controller.metrics import APP, PACKAGE_REPOSITORY, AppCount, Clock, Kappctrl, KindSeries, Metrics, Timed
from kapply.controller.reconciler import Reconciler
from kapply.controller.sandbox import SandboxFailed, Stage
from kapply.controller.settings import Settings
from kapply.objects import Obj
from kapply.packaging.repository import RepositoryReconciler
from kapply.packaging.repository_deploy import RepositoryDeployed, RepositoryDeployFailed
from tests.unit.cluster_fakes import Stored

GAUGES = {
    "kappctrl_reconcile_time_seconds": "Overall time taken to reconcile a CR",
    "kappctrl_reconcile_fetch_time_seconds": "Time taken to perform a fetch for a CR",
    "kappctrl_reconcile_template_time_seconds": "Time taken to perform a templating for a CR",
    "kappctrl_reconcile_deploy_time_seconds": "Time taken to perform a deploy for a CR",
}


def times(kappctrl: Kappctrl) -> dict[tuple[str, str, str, str, str], float]:
    """The gauges' samples as Prometheus reads them: by (metric, controller, namespace, name, firstReconcile)."""
    registry = Metrics(kappctrl).registry
    found = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        if family.name in GAUGES:
            for s in family.samples:
                labels = s.labels
                key = (s.name, labels["controller"], labels["namespace"], labels["name"], labels["firstReconcile"])
                found[key] = s.value
    return found


def test_the_gauges_have_kapp_controllers_names_types_help_and_labels() -> None:
    kappctrl = Kappctrl()
    obj = (APP, "team", "web")
    kappctrl.time(obj, True, Timed.RECONCILE, 3.5)
    kappctrl.time(obj, True, Timed.FETCH, 1.0)
    kappctrl.time(obj, False, Timed.RECONCILE, 0.25)
    kappctrl.time((PACKAGE_REPOSITORY, "global", "repo"), True, Timed.DEPLOY, 2.0)
    text = generate_latest(Metrics(kappctrl).registry).decode()
    for name, help_text in GAUGES.items():
        assert f"# HELP {name} {help_text}\n# TYPE {name} gauge\n" in text
    assert (
        'kappctrl_reconcile_time_seconds{controller="App",firstReconcile="true",name="web",namespace="team"} 3.5'
        in text
    )
    assert times(kappctrl) == {
        ("kappctrl_reconcile_time_seconds", "App", "team", "web", "true"): 3.5,
        ("kappctrl_reconcile_time_seconds", "App", "team", "web", "false"): 0.25,
        ("kappctrl_reconcile_fetch_time_seconds", "App", "team", "web", "true"): 1.0,
        ("kappctrl_reconcile_deploy_time_seconds", "PackageRepository", "global", "repo", "true"): 2.0,
    }
    kappctrl.of(APP).forget("team", "web")  # both firstReconcile series go with the object
    assert set(times(kappctrl)) == {
        ("kappctrl_reconcile_deploy_time_seconds", "PackageRepository", "global", "repo", "true")
    }


def test_a_clock_sets_each_stage_when_it_ends_and_the_overall_time_at_its_stop() -> None:
    kappctrl = Kappctrl()
    now = iter([11.0, 11.5, 14.0, 20.0, 21.0, 22.0])
    clock = Clock(kappctrl, (APP, "team", "web"), first=False, started=10.0, lap=10.0, now=lambda: next(now))
    clock.begin()  # 11.0: the fetch starts (after the pass's first second)
    asyncio.run(clock.fetched("lock"))  # 11.5: the sandbox says the fetch ended
    clock.end(Timed.TEMPLATE)  # 14.0
    clock.begin()  # 20.0: the deploy starts
    clock.end(Timed.DEPLOY)  # 21.0
    clock.stop()  # 22.0: the pass started at 10.0
    assert times(kappctrl) == {
        ("kappctrl_reconcile_fetch_time_seconds", "App", "team", "web", "false"): 0.5,
        ("kappctrl_reconcile_template_time_seconds", "App", "team", "web", "false"): 2.5,
        ("kappctrl_reconcile_deploy_time_seconds", "App", "team", "web", "false"): 1.0,
        ("kappctrl_reconcile_time_seconds", "App", "team", "web", "false"): 12.0,
    }


def test_first_reconcile_is_the_pass_whose_attempt_was_the_objects_first() -> None:
    series = KindSeries()
    series.count("team", "web", AppCount.ATTEMPT)
    assert series.clock("team", "web").first
    series.count("team", "web", AppCount.ATTEMPT)
    assert not series.clock("team", "web").first
    series.forget("team", "web")  # gone and made again: its first attempt again
    series.count("team", "web", AppCount.ATTEMPT)
    assert series.clock("team", "web").first


# --- the App reconciler -------------------------------------------------------------------------------------------


class AppCluster:
    async def write_status(self, *_: Any, **__: Any) -> None:
        return None

    async def add_finalizer(self, *_: Any) -> None:
        return None


class AppApi:
    def __init__(self) -> None:
        self.cluster = AppCluster()


class Events:
    async def emit(self, *_: Any, **__: Any) -> None:
        return None


class Sandbox:
    """Runs a job as the real sandbox reports it: the fetch's end, then the result; or fails in `failing`'s stage."""

    def __init__(self, failing: Stage | None = None) -> None:
        self.failing = failing

    async def run(self, job: str, request: Obj, read: Any, on_fetched: Any = None) -> Obj:
        if self.failing is Stage.FETCH:
            raise SandboxFailed(Stage.FETCH, "no such repository")
        assert on_fetched is not None  # the reconciler wants to know when the fetch ended
        await on_fetched("lock")
        if self.failing is Stage.TEMPLATE:
            raise SandboxFailed(Stage.TEMPLATE, "ytt: error", lock="lock")
        return {"lock": "lock", "manifests": "kind: ConfigMap"}


def the_app() -> Obj:
    return {
        "apiVersion": "kapply.dev/v1alpha1",
        "kind": "App",
        "metadata": {"name": "web", "namespace": "team", "generation": 1, "resourceVersion": "1"},
        "spec": {
            "serviceAccountName": "sa",
            "fetch": [{"inline": {}}],
            "template": [{"ytt": {}}],
            "deploy": [{"kapp": {}}],
        },
    }


def app_reconciler(monkeypatch: pytest.MonkeyPatch, sandbox: Sandbox, kappctrl: Kappctrl) -> Reconciler:
    cache = Cache()
    cache.apps.put(the_app())
    r = Reconciler(AppApi(), cache=cache, counts=kappctrl.of(APP))  # type: ignore[arg-type]
    r.events = Events()  # type: ignore[assignment]

    async def as_app(*_: Any, **__: Any) -> object:
        return object()

    async def deploy(*_: Any) -> Deployed:
        return Deployed(1, True, "applied", "digest", (), ())

    monkeypatch.setattr(r, "_as_app", as_app)
    monkeypatch.setattr(r, "_sandbox", lambda: sandbox)
    monkeypatch.setattr("kapply.controller.reconciler.deploy", deploy)
    return r


def stages(kappctrl: Kappctrl, first: str = "true") -> set[str]:
    return {name for (name, *_, f) in times(kappctrl) if f == first}


def test_an_apps_pass_sets_its_four_times_and_its_next_pass_is_not_its_first(monkeypatch: pytest.MonkeyPatch) -> None:
    kappctrl = Kappctrl()
    r = app_reconciler(monkeypatch, Sandbox(), kappctrl)
    asyncio.run(r.reconcile("team", "web"))
    assert stages(kappctrl) == set(GAUGES)
    assert all(v >= 0 for v in times(kappctrl).values())
    asyncio.run(r.reconcile("team", "web"))
    assert stages(kappctrl, "false") == set(GAUGES)
    assert {k[1:4] for k in times(kappctrl)} == {("App", "team", "web")}


@pytest.mark.parametrize(
    ("failing", "timed"),
    [
        (Stage.FETCH, {"kappctrl_reconcile_fetch_time_seconds"}),
        (Stage.TEMPLATE, {"kappctrl_reconcile_fetch_time_seconds", "kappctrl_reconcile_template_time_seconds"}),
    ],
    ids=["fetch", "template"],
)
def test_a_failed_stage_has_its_time_and_the_overall_time_and_no_later_stage_has(
    monkeypatch: pytest.MonkeyPatch, failing: Stage, timed: set[str]
) -> None:
    kappctrl = Kappctrl()
    r = app_reconciler(monkeypatch, Sandbox(failing), kappctrl)
    asyncio.run(r.reconcile("team", "web"))
    assert stages(kappctrl) == timed | {"kappctrl_reconcile_time_seconds"}


# --- the PackageRepository reconciler ---------------------------------------------------------------------------


def repository() -> Obj:
    return {
        "apiVersion": "packaging.kapply.dev/v1alpha1",
        "kind": "PackageRepository",
        "metadata": {"name": "repo", "namespace": "ns", "resourceVersion": "1", "generation": 1},
        "spec": {"fetch": {"inline": {"paths": {}}}},
    }


class RepositoryApi:
    def __init__(self, obj: Obj) -> None:
        self.cluster = Stored(obj)


def repository_reconciler(
    monkeypatch: pytest.MonkeyPatch, kappctrl: Kappctrl, deploy_fails: bool = False
) -> tuple[RepositoryReconciler, RepositoryApi]:
    async def fetch_and_read(*_: Any, on_fetched: Any = None, **__: Any) -> tuple[str, list[Obj]]:
        await on_fetched("lock")
        return "lock", []

    async def deploy(*_: Any) -> RepositoryDeployed:
        if deploy_fails:
            raise RepositoryDeployFailed("refused", "")
        return RepositoryDeployed(True, "applied", ())

    monkeypatch.setattr("kapply.packaging.repository.fetch_and_read", fetch_and_read)
    monkeypatch.setattr("kapply.packaging.repository.source_reader", lambda *_: None)
    monkeypatch.setattr("kapply.packaging.repository.deploy", deploy)
    api = RepositoryApi(repository())
    return RepositoryReconciler(api, Settings(), kappctrl.of(PACKAGE_REPOSITORY)), api  # type: ignore[arg-type]


def counters(kappctrl: Kappctrl) -> dict[tuple[str, str, str], list[float]]:
    found: dict[tuple[str, str, str], list[float]] = {}
    for family in kappctrl.collect():
        for s in family.samples if family.type == "counter" else ():
            found.setdefault((s.labels["controller"], s.labels["namespace"], s.labels["name"]), []).append(s.value)
    return found


@pytest.mark.parametrize("deploy_fails", [False, True], ids=["deployed", "deploy-failed"])
def test_a_repository_counts_its_attempts_only_and_times_its_stages(
    monkeypatch: pytest.MonkeyPatch, deploy_fails: bool
) -> None:
    kappctrl = Kappctrl()
    r, api = repository_reconciler(monkeypatch, kappctrl, deploy_fails)
    asyncio.run(r.reconcile("ns", "repo"))
    asyncio.run(r.reconcile("ns", "repo"))
    # kapp-controller counts a PackageRepository's attempts, and nothing else of it
    assert counters(kappctrl) == {(PACKAGE_REPOSITORY, "ns", "repo"): [2, 0, 0, 0, 0]}
    assert stages(kappctrl) == set(GAUGES) == stages(kappctrl, "false")
    status = api.cluster.stored[("ns", "repo")]["status"]
    assert status["friendlyDescription"].startswith("Reconcile failed" if deploy_fails else "Reconcile succeeded")
    del api.cluster.stored[("ns", "repo")]  # gone: its series with it
    assert asyncio.run(r.reconcile("ns", "repo")) is None
    assert counters(kappctrl) == {} and times(kappctrl) == {}


def test_a_paused_repository_has_its_counters_at_zero_and_no_times(monkeypatch: pytest.MonkeyPatch) -> None:
    kappctrl = Kappctrl()
    r, api = repository_reconciler(monkeypatch, kappctrl)
    api.cluster.stored[("ns", "repo")]["spec"]["paused"] = True
    asyncio.run(r.reconcile("ns", "repo"))
    assert counters(kappctrl) == {(PACKAGE_REPOSITORY, "ns", "repo"): [0, 0, 0, 0, 0]} and times(kappctrl) == {}
