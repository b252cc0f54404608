"""The controller process's own logic: which App watch events reconcile (not its own status writes, not the status
writes of a failing delete), drift notifications debounced, and the workers' backoff after errors; kinds registered by
a higher layer (their own queues, fingerprints and callbacks) and triggers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import unittest.mock
from types import SimpleNamespace
from typing import Any

from kapply.controller.apps import APPS
from kapply.controller.main import (
    DEBOUNCE,
    MAX_ERROR_DELAY,
    UNSERVED_RETRY,
    Controller,
    ControllerOptions,
    Kind,
    Trigger,
)
from kapply.errors import ClusterError, ConcurrencyError, KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType

KEY = ("team", "web")
OTHER = ("team", "api")


class SpyQueue:
    """Records what the controller asks of its queue; `keys` are handed to workers in order, then get() waits."""

    def __init__(self, *keys: tuple[str, str]) -> None:
        self.added: list[tuple[tuple[str, str], float]] = []
        self.forgotten: list[tuple[str, str]] = []
        self.done_with: list[tuple[tuple[str, str], float | None]] = []
        self.keys = list(keys)

    def add(self, key: tuple[str, str], delay: float = 0.0) -> None:
        self.added.append((key, delay))

    def forget(self, key: tuple[str, str]) -> None:
        self.forgotten.append(key)

    async def get(self) -> tuple[str, str]:
        if not self.keys:
            await asyncio.Event().wait()
        return self.keys.pop(0)

    def done(self, key: tuple[str, str], requeue_after: float | None) -> None:
        self.done_with.append((key, requeue_after))


def controller(queue: SpyQueue | None = None) -> tuple[Controller, SpyQueue]:
    api: Any = SimpleNamespace(cluster=SimpleNamespace())
    made = Controller(api, ControllerOptions())
    spy = queue or SpyQueue()
    made.queue = spy  # type: ignore[assignment]
    return made, spy


def app(generation: int = 1, *, deleting: bool = False, name: str = "web", **status: Any) -> Obj:
    meta: Obj = {"name": name, "namespace": "team", "generation": generation, "resourceVersion": "1"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        meta["finalizers"] = ["finalizers.kapply.dev/delete"]
    return {"metadata": meta, "spec": {}, "status": status}


def keys(queue: SpyQueue) -> list[tuple[str, str]]:
    return [key for key, _ in queue.added]


# Which App events reconcile.


def test_a_new_app_is_reconciled_at_once() -> None:
    c, queue = controller()
    c._app_event("ADDED", app())
    assert queue.added == [(KEY, 0.0)]


def test_a_status_only_event_does_not_enqueue() -> None:
    c, queue = controller()
    c._app_event("ADDED", app())
    c._app_event("MODIFIED", app(friendlyDescription="Reconciling"))
    c._app_event("MODIFIED", app(friendlyDescription="Reconcile succeeded"))
    assert keys(queue) == [KEY]


def test_a_metadata_only_change_does_not_enqueue() -> None:
    c, queue = controller()
    c._app_event("ADDED", app())
    labeled = app()
    labeled["metadata"]["labels"] = {"team": "a"}
    labeled["metadata"]["finalizers"] = ["finalizers.kapply.dev/delete"]  # our own finalizer write
    c._app_event("MODIFIED", labeled)
    assert keys(queue) == [KEY]


def test_a_spec_change_enqueues() -> None:
    c, queue = controller()
    c._app_event("ADDED", app(1))
    c._app_event("MODIFIED", app(2))
    c._app_event("MODIFIED", app(2, friendlyDescription="Reconciling"))
    c._app_event("MODIFIED", app(3))
    assert keys(queue) == [KEY, KEY, KEY]


def test_the_start_of_a_deletion_enqueues_once_and_its_status_writes_do_not() -> None:
    """A failing delete writes DeleteFailed every time: those writes must not reconcile again (that span at ~20
    reconciles a second), the delete comes back when its backoff says."""
    c, queue = controller()
    c._app_event("ADDED", app(1))
    c._app_event("MODIFIED", app(1, deleting=True))
    for failures in range(1, 6):
        c._app_event("MODIFIED", app(1, deleting=True, friendlyDescription="Deleting"))
        c._app_event("MODIFIED", app(1, deleting=True, consecutiveReconcileFailures=failures))
    assert keys(queue) == [KEY, KEY]


def test_a_deletion_that_also_bumps_the_generation_enqueues_once() -> None:
    c, queue = controller()
    c._app_event("ADDED", app(1))
    c._app_event("MODIFIED", app(2, deleting=True))
    c._app_event("MODIFIED", app(2, deleting=True, friendlyDescription="Delete failed"))
    assert keys(queue) == [KEY, KEY]


def test_an_app_listed_again_after_a_watch_gap_is_not_reconciled_again() -> None:
    c, queue = controller()
    c._app_event("ADDED", app(3))
    c._app_event("ADDED", app(3))  # the list after a 410
    assert keys(queue) == [KEY]


def test_an_app_without_a_generation_counts_as_generation_zero() -> None:
    c, queue = controller()
    bare = {"metadata": {"name": "web", "namespace": "team"}}
    c._app_event("ADDED", bare)
    c._app_event("MODIFIED", bare)
    assert keys(queue) == [KEY]


def test_apps_are_followed_each_on_their_own() -> None:
    c, queue = controller()
    c._app_event("ADDED", app(1))
    c._app_event("ADDED", app(1, name="api"))
    c._app_event("MODIFIED", app(2, name="api"))
    c._app_event("MODIFIED", app(1, friendlyDescription="x"))
    assert keys(queue) == [KEY, OTHER, OTHER]


def test_a_deleted_app_is_forgotten_everywhere() -> None:
    c, queue = controller()
    c._app_event("ADDED", app(1))
    c.drift.apps["label"] = {KEY}
    c._errors[KEY] = 3
    c._app_event("DELETED", app(1, deleting=True))
    assert queue.forgotten == [KEY]
    assert c.drift.apps == {}
    assert KEY not in c._errors
    c._app_event("ADDED", app(1))  # a new App of the same name and generation
    assert keys(queue) == [KEY, KEY]


def test_drift_of_an_apps_objects_is_debounced() -> None:
    c, queue = controller()
    c.drift.notify(KEY)
    assert queue.added == [(KEY, DEBOUNCE)]
    assert DEBOUNCE > 0


# Backoff after errors.


def test_errors_back_off_1_2_4_and_so_on_up_to_the_maximum() -> None:
    c, _ = controller()
    delays = [c._after_error(KEY) for _ in range(12)]
    assert delays[:9] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]
    assert delays[9:] == [MAX_ERROR_DELAY] * 3
    assert all(isinstance(d, float) for d in delays)


def test_errors_are_counted_per_app() -> None:
    c, _ = controller()
    c._after_error(KEY)
    c._after_error(KEY)
    assert c._after_error(OTHER) == 1.0
    assert c._after_error(KEY) == 4.0


def test_a_very_long_streak_stays_at_the_maximum() -> None:
    c, _ = controller()
    c._errors[KEY] = 5000
    assert c._after_error(KEY) == MAX_ERROR_DELAY


class FakeReconciler:
    """Each reconcile takes the next outcome: a delay to return, or an exception to raise."""

    def __init__(self, *outcomes: float | None | BaseException) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[str, str]] = []

    async def reconcile(self, namespace: str, name: str) -> float | None:
        self.calls.append((namespace, name))
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def work(*outcomes: float | None | BaseException) -> tuple[Controller, SpyQueue, FakeReconciler]:
    c, queue = controller(SpyQueue(*[KEY] * len(outcomes)))
    reconciler = FakeReconciler(*outcomes)
    c.reconciler = reconciler  # type: ignore[assignment]

    async def run() -> None:
        worker = asyncio.create_task(c._worker())
        for _ in range(200):
            if len(queue.done_with) == len(outcomes):
                break
            await asyncio.sleep(0)
        assert not worker.done(), "the worker stopped"
        worker.cancel()

    asyncio.run(run())
    return c, queue, reconciler


def test_the_worker_requeues_as_the_reconcile_says() -> None:
    _, queue, reconciler = work(30.0, None)
    assert queue.done_with == [(KEY, 30.0), (KEY, None)]
    assert reconciler.calls == [KEY, KEY]


def test_the_worker_backs_off_on_errors_and_starts_over_after_a_success() -> None:
    boom = KapplyError("writing the status: 500")
    _, queue, _ = work(boom, boom, boom, 30.0, boom)
    assert [delay for _, delay in queue.done_with] == [1.0, 2.0, 4.0, 30.0, 1.0]


def test_a_crashing_reconcile_backs_off_and_the_worker_goes_on() -> None:
    c, queue, _ = work(RuntimeError("bug"), ValueError("bug"), 30.0)
    assert [delay for _, delay in queue.done_with] == [1.0, 2.0, 30.0]
    assert KEY not in c._errors


def test_another_deploy_running_retries_soon_without_counting_as_an_error() -> None:
    c, queue, _ = work(KapplyError("x"), ConcurrencyError("another deploy is running"), KapplyError("x"))
    assert [delay for _, delay in queue.done_with] == [1.0, 2.0, 2.0]
    assert c._errors[KEY] == 2


def test_the_options_default_to_leader_election_in_kapply_system() -> None:
    options = ControllerOptions()
    assert options.leader_election is True
    assert options.lease_namespace == "kapply-system"
    assert options.namespace is None


class ListedApps:
    """The App list and watch as the API server answers after a watch gap: the list has `apps`, the watch waits."""

    def __init__(self, *apps: Obj) -> None:
        self.apps = list(apps)
        self.watching = asyncio.Event()

    async def list_with_version(self, rtype: Any, **_: Any) -> tuple[list[Obj], str]:
        return self.apps, "7"

    async def watch(self, rtype: Any, **kwargs: Any) -> Any:
        self.watching.set()
        await asyncio.Event().wait()
        yield  # pragma: no cover (an async generator that never yields)


def test_apps_deleted_while_no_watch_ran_are_forgotten_when_listed_again() -> None:
    c, queue = controller()
    c._app_event("ADDED", app(1, name="web"))
    c._app_event("ADDED", app(1, name="api"))
    c._errors[KEY] = 2
    cluster = ListedApps(app(1, name="api"))  # web was deleted during the gap
    c.api = SimpleNamespace(cluster=cluster)  # type: ignore[assignment]

    async def relist() -> None:
        task = asyncio.create_task(c._watch_apps())
        await asyncio.wait_for(cluster.watching.wait(), 1.0)
        task.cancel()

    asyncio.run(relist())
    assert queue.forgotten == [KEY]
    assert KEY not in c._errors and OTHER in c._generations


# Kinds registered by a higher layer (kapply.packaging), and triggers.

WIDGETS = ResourceType("example.dev", "v1", "Widget", "widgets", True, frozenset({"get", "list", "watch"}))


class Registered:
    """A registered kind's callbacks, recording what they were told."""

    def __init__(self, *outcomes: float | None | BaseException) -> None:
        self.outcomes = list(outcomes)
        self.reconciled: list[tuple[str, str]] = []
        self.observed: list[tuple[str, str]] = []
        self.forgotten: list[tuple[str, str]] = []

    async def reconcile(self, namespace: str, name: str) -> float | None:
        self.reconciled.append((namespace, name))
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def kind(self, **options: Any) -> Kind:
        return Kind(
            "Widget",
            WIDGETS,
            self.reconcile,
            observe=lambda event, obj: self.observed.append((event, obj["metadata"]["name"])),
            forget=self.forgotten.append,
            **options,
        )


def registered(kind: Kind, *triggers: Trigger) -> tuple[Controller, SpyQueue]:
    api: Any = SimpleNamespace(cluster=SimpleNamespace())
    made = Controller(api, ControllerOptions(), [kind], triggers)
    spy = SpyQueue()
    made.loops["Widget"].queue = spy  # type: ignore[assignment]
    return made, spy


def test_a_registered_kinds_events_reconcile_as_apps_do_and_each_is_observed() -> None:
    widgets = Registered()
    c, queue = registered(widgets.kind())
    loop = c.loops["Widget"]
    c._kind_event(loop, "ADDED", app(1))
    c._kind_event(loop, "MODIFIED", app(1, friendlyDescription="ours"))  # a status write
    c._kind_event(loop, "MODIFIED", app(2))
    c._kind_event(loop, "MODIFIED", app(2, deleting=True))
    assert keys(queue) == [KEY, KEY, KEY]
    assert [event for event, _ in widgets.observed] == ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED"]
    c._kind_event(loop, "DELETED", app(2, deleting=True))
    assert queue.forgotten == [KEY] and widgets.forgotten == [KEY] and KEY not in loop.seen


def test_a_kinds_fingerprint_decides_what_reconciles() -> None:
    widgets = Registered()
    c, queue = registered(widgets.kind(fingerprint=lambda obj: obj["metadata"].get("annotations")))
    loop = c.loops["Widget"]
    labeled = app(1)
    c._kind_event(loop, "ADDED", labeled)
    labeled = app(1)
    labeled["metadata"]["annotations"] = {"x": "y"}
    c._kind_event(loop, "MODIFIED", labeled)
    c._kind_event(loop, "MODIFIED", app(5))  # a new generation, the same (no) annotations as at first
    assert keys(queue) == [KEY, KEY, KEY]


def test_the_apps_and_every_kind_keep_their_own_queues() -> None:
    c, queue = registered(Registered().kind())
    c.request("Widget", KEY, 1.5)
    c.request("App", OTHER)
    assert queue.added == [(KEY, 1.5)]
    assert len(c.queue) == 1


def test_triggers_on_apps_see_every_app_event_and_ask_for_reconciles() -> None:
    seen: list[str] = []

    def event(kind: str, obj: Obj) -> list[tuple[str, tuple[str, str], float]]:
        seen.append(kind)
        return [("Widget", ("team", "owner"), 0.5)]

    c, queue = registered(Registered().kind(), Trigger(APPS, event))
    c.queue = SpyQueue()  # type: ignore[assignment]
    c._app_event("ADDED", app(1))
    c._app_event("MODIFIED", app(1, friendlyDescription="status"))
    c._app_event("DELETED", app(1))
    assert seen == ["ADDED", "MODIFIED", "DELETED"]
    assert queue.added == [(("team", "owner"), 0.5)] * 3
    assert keys(c.queue) == [KEY], "the App itself still reconciles only on its own rule"  # type: ignore[arg-type]


def test_a_registered_kinds_worker_backs_off_on_errors_with_its_own_counts() -> None:
    widgets = Registered(KapplyError("x"), KapplyError("x"), None)
    c, queue = registered(widgets.kind())
    queue.keys = [KEY, KEY, KEY]
    loop = c.loops["Widget"]

    async def run() -> None:
        worker = asyncio.create_task(c._worker(loop))
        for _ in range(200):
            if len(queue.done_with) == 3:
                break
            await asyncio.sleep(0)
        worker.cancel()

    asyncio.run(run())
    assert queue.done_with == [(KEY, 1.0), (KEY, 2.0), (KEY, None)]
    assert widgets.reconciled == [KEY] * 3 and KEY not in loop.errors and c._errors == {}


class Unserved:
    """A cluster that serves no Widgets (their CRD is not installed)."""

    def __init__(self) -> None:
        self.requests = 0

    async def list_with_version(self, rtype: ResourceType, **_: Any) -> tuple[list[Obj], str]:
        self.requests += 1
        raise ClusterError("the server could not find the requested resource", status=404)


def test_a_kind_that_is_not_served_is_looked_at_again_slowly_and_said_once(caplog: Any) -> None:
    c, _ = registered(Registered().kind())
    cluster = Unserved()
    c.api = SimpleNamespace(cluster=cluster)  # type: ignore[assignment]
    sleeps: list[float] = []

    async def no_sleep(delay: float) -> None:
        sleeps.append(delay)
        if len(sleeps) == 3:
            raise asyncio.CancelledError

    async def watch() -> None:
        with contextlib.suppress(asyncio.CancelledError), unittest.mock.patch("asyncio.sleep", no_sleep):
            await c._watch_kind(c.loops["Widget"])

    with caplog.at_level(logging.WARNING, logger="kapply.controller"):
        asyncio.run(watch())
    assert sleeps == [UNSERVED_RETRY] * 3 and cluster.requests == 3
    assert [r.getMessage() for r in caplog.records if "widgets" in r.getMessage()] == [
        "watching widgets.example.dev: the server could not find the requested resource (looking again every 60s)"
    ]


def test_a_failing_trigger_is_logged_and_the_app_watch_goes_on(caplog: Any) -> None:
    def event(kind: str, obj: Obj) -> list[tuple[str, tuple[str, str], float]]:
        raise ValueError("a bug in a trigger")

    c, _ = registered(Registered().kind(), Trigger(APPS, event))
    c.queue = SpyQueue()  # type: ignore[assignment]
    with caplog.at_level(logging.ERROR, logger="kapply.controller"):
        c._app_event("ADDED", app(1))
    assert keys(c.queue) == [KEY]  # type: ignore[arg-type]
    assert "a trigger failed" in caplog.text and "a bug in a trigger" in caplog.text
