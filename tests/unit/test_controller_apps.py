"""The App resource's I/O: status writes through the status subresource (read again on a conflict, skipped when only
times would change) and the finalizer, against an in-memory API server."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from kapply.controller import apps
from kapply.controller.apps import APPS, ATTEMPTS
from kapply.controller.spec import FINALIZER
from kapply.errors import ClusterError, ConcurrencyError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType

T = TypeVar("T")
STATUS_PATH = "/apis/kapply.dev/v1alpha1/namespaces/ns/apps/web/status"


class FakeApps:
    """Apps as the API server keeps them: resourceVersion checked on every write (409), an update of the App leaves
    its status alone, a PUT to /status changes nothing but the status. `before_write` runs before each write (another
    writer getting in first); `fail` makes the next writes raise the given statuses."""

    def __init__(self, *stored: Obj) -> None:
        self.stored = {(o["metadata"]["namespace"], o["metadata"]["name"]): copy.deepcopy(o) for o in stored}
        self.versions = itertools.count(100)
        self.writes: list[tuple[str, Obj]] = []  # (verb, body)
        self.gets = 0
        self.before_write: Callable[[], None] = lambda: None
        self.fail: list[int] = []

    def touch(self, name: str = "web", **changes: Any) -> None:
        """Another writer changes the App (a new resourceVersion)."""
        obj = self.stored[("ns", name)]
        obj.update(copy.deepcopy(changes))
        obj["metadata"]["resourceVersion"] = str(next(self.versions))

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        assert rtype == APPS
        self.gets += 1
        found = self.stored.get((namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def _check(self, verb: str, body: Obj) -> Obj:
        self.writes.append((verb, copy.deepcopy(body)))
        self.before_write()
        if self.fail:
            raise ClusterError("API server says: failed", status=self.fail.pop(0))
        meta = body["metadata"]
        current = self.stored.get((meta["namespace"], meta["name"]))
        if current is None:
            raise ClusterError("API server says: not found (reason: NotFound)", status=404)
        if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ClusterError("API server says: conflict (reason: Conflict)", status=409)
        return current

    async def update(self, rtype: ResourceType, obj: Obj) -> Obj:
        assert rtype == APPS
        current = self._check("update", obj)
        stored = {**copy.deepcopy(obj), "status": current.get("status")}
        stored["metadata"]["resourceVersion"] = str(next(self.versions))
        self.stored[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = stored
        return copy.deepcopy(stored)

    async def request(self, method: str, path: str, *, body: Obj | None = None, **_: Any) -> Obj:
        assert (method, path) == ("PUT", STATUS_PATH)
        assert body is not None
        current = self._check("status", body)
        current["status"] = copy.deepcopy(body["status"])
        current["metadata"]["resourceVersion"] = str(next(self.versions))
        return copy.deepcopy(current)

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.writes]


def app(**extra: Any) -> Obj:
    return {
        "apiVersion": "kapply.dev/v1alpha1",
        "kind": "App",
        "metadata": {"name": "web", "namespace": "ns", "resourceVersion": "1", "generation": 1},
        "spec": {"serviceAccountName": "sa"},
        **extra,
    }


def run(coroutine: Awaitable[T]) -> T:
    async def wrapped() -> T:
        return await coroutine

    return asyncio.run(wrapped())


SUCCEEDED = {"friendlyDescription": "Reconcile succeeded", "deploy": {"exitCode": 0, "updatedAt": "t1"}}


# Status writes.


def test_a_status_is_written_through_the_status_subresource_and_the_app_kept_current() -> None:
    cluster = FakeApps(app())
    ours = app()
    run(apps.write_status(cluster, ours, SUCCEEDED))  # type: ignore[arg-type]
    assert cluster.verbs() == ["status"]
    assert cluster.stored[("ns", "web")]["status"] == SUCCEEDED
    assert ours["metadata"]["resourceVersion"] == cluster.stored[("ns", "web")]["metadata"]["resourceVersion"]
    assert ours["status"] == SUCCEEDED


def test_a_status_that_differs_only_in_times_is_not_written() -> None:
    cluster = FakeApps(app(status=SUCCEEDED))
    later = {**SUCCEEDED, "deploy": {"exitCode": 0, "updatedAt": "t2", "startedAt": "t2"}}
    run(apps.write_status(cluster, app(status=SUCCEEDED), later))  # type: ignore[arg-type]
    assert cluster.writes == []


def test_a_status_that_differs_otherwise_is_written() -> None:
    cluster = FakeApps(app(status=SUCCEEDED))
    failed = {**SUCCEEDED, "friendlyDescription": "Reconcile failed"}
    run(apps.write_status(cluster, app(status=SUCCEEDED), failed))  # type: ignore[arg-type]
    assert cluster.verbs() == ["status"]
    assert cluster.stored[("ns", "web")]["status"] == failed


def test_a_conflict_reads_the_app_again_and_writes_over_the_latest_version() -> None:
    cluster = FakeApps(app())
    ours = app()
    cluster.touch(metadata={**app()["metadata"], "labels": {"new": "label"}})
    latest = cluster.stored[("ns", "web")]["metadata"]["resourceVersion"]
    run(apps.write_status(cluster, ours, SUCCEEDED))  # type: ignore[arg-type]
    assert cluster.verbs() == ["status", "status"]
    assert cluster.writes[1][1]["metadata"]["resourceVersion"] == latest
    assert cluster.writes[1][1]["metadata"]["labels"] == {"new": "label"}  # the latest App, not ours
    assert cluster.stored[("ns", "web")]["status"] == SUCCEEDED
    assert ours["metadata"]["resourceVersion"] == cluster.stored[("ns", "web")]["metadata"]["resourceVersion"]


def test_after_a_conflict_nothing_is_written_when_the_latest_status_already_says_it() -> None:
    cluster = FakeApps(app())
    cluster.touch(status={**SUCCEEDED, "deploy": {"exitCode": 0, "updatedAt": "t0"}})
    run(apps.write_status(cluster, app(), SUCCEEDED))  # type: ignore[arg-type]
    assert cluster.verbs() == ["status"]  # the one that conflicted


def test_an_app_deleted_after_a_conflict_is_left_alone() -> None:
    cluster = FakeApps(app())

    def conflict_then_gone() -> None:
        cluster.fail.append(409)
        cluster.stored.clear()

    cluster.before_write = conflict_then_gone
    run(apps.write_status(cluster, app(), SUCCEEDED))  # type: ignore[arg-type]
    assert cluster.verbs() == ["status"]


@pytest.mark.parametrize("status", [404, 422, 500])
def test_other_errors_of_a_status_write_are_raised(status: int) -> None:
    cluster = FakeApps(app())
    cluster.fail = [status]
    with pytest.raises(ClusterError) as e:
        run(apps.write_status(cluster, app(), SUCCEEDED))  # type: ignore[arg-type]
    assert e.value.status == status


def test_conflicts_are_tried_again_a_bounded_number_of_times() -> None:
    cluster = FakeApps(app())
    cluster.before_write = lambda: cluster.touch()
    with contextlib.suppress(ClusterError):
        run(apps.write_status(cluster, app(), SUCCEEDED))  # type: ignore[arg-type]
    assert cluster.verbs() == ["status"] * ATTEMPTS


# The finalizer.


def test_adding_the_finalizer_keeps_the_others_and_the_app_current() -> None:
    cluster = FakeApps(app(metadata={**app()["metadata"], "finalizers": ["other/one"]}))
    ours = cluster.stored[("ns", "web")]
    ours = copy.deepcopy(ours)
    run(apps.add_finalizer(cluster, ours))  # type: ignore[arg-type]
    assert cluster.stored[("ns", "web")]["metadata"]["finalizers"] == ["other/one", FINALIZER]
    assert ours["metadata"]["finalizers"] == ["other/one", FINALIZER]
    assert ours["metadata"]["resourceVersion"] == cluster.stored[("ns", "web")]["metadata"]["resourceVersion"]
    assert apps.has_finalizer(ours)


def test_adding_the_finalizer_when_present_writes_nothing() -> None:
    with_ours = app(metadata={**app()["metadata"], "finalizers": [FINALIZER]})
    cluster = FakeApps(with_ours)
    run(apps.add_finalizer(cluster, copy.deepcopy(with_ours)))  # type: ignore[arg-type]
    assert cluster.writes == []


def test_adding_the_finalizer_keeps_the_status() -> None:
    cluster = FakeApps(app(status=SUCCEEDED))
    run(apps.add_finalizer(cluster, app(status={"stale": True})))  # type: ignore[arg-type]
    assert cluster.stored[("ns", "web")]["status"] == SUCCEEDED


def test_adding_the_finalizer_on_a_conflict_adds_it_to_the_app_read_afresh() -> None:
    """The reconcile starts from the App as the watch last showed it, which may be older than the stored one."""
    cluster = FakeApps(app())
    cluster.touch(metadata={**app()["metadata"], "labels": {"by": "someone"}})
    ours = app()
    run(apps.add_finalizer(cluster, ours))  # type: ignore[arg-type]
    stored = cluster.stored[("ns", "web")]
    assert stored["metadata"]["finalizers"] == [FINALIZER] and stored["metadata"]["labels"] == {"by": "someone"}
    assert ours["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert cluster.verbs() == ["update", "update"] and cluster.gets == 1


def test_adding_the_finalizer_to_an_app_others_keep_changing_gives_up() -> None:
    cluster = FakeApps(app())
    cluster.before_write = cluster.touch
    with pytest.raises(ConcurrencyError):
        run(apps.add_finalizer(cluster, app()))  # type: ignore[arg-type]
    assert len(cluster.writes) == ATTEMPTS


def test_adding_the_finalizer_to_a_failing_server_raises() -> None:
    cluster = FakeApps(app())
    cluster.fail = [500]
    with pytest.raises(ClusterError) as e:
        run(apps.add_finalizer(cluster, app()))  # type: ignore[arg-type]
    assert e.value.status == 500


def test_removing_the_finalizer_removes_only_ours() -> None:
    cluster = FakeApps(app(metadata={**app()["metadata"], "finalizers": ["other/one", FINALIZER, "other/two"]}))
    run(apps.remove_finalizer(cluster, "ns", "web"))  # type: ignore[arg-type]
    assert cluster.stored[("ns", "web")]["metadata"]["finalizers"] == ["other/one", "other/two"]
    assert cluster.verbs() == ["update"]


@pytest.mark.parametrize("finalizers", [None, [], ["other/one"]])
def test_removing_an_absent_finalizer_writes_nothing(finalizers: list[str] | None) -> None:
    cluster = FakeApps(app(metadata={**app()["metadata"], "finalizers": finalizers}))
    run(apps.remove_finalizer(cluster, "ns", "web"))  # type: ignore[arg-type]
    assert cluster.writes == []


def test_removing_the_finalizer_of_a_gone_app_does_nothing() -> None:
    cluster = FakeApps()
    run(apps.remove_finalizer(cluster, "ns", "web"))  # type: ignore[arg-type]
    assert cluster.writes == []


def test_removing_the_finalizer_reads_the_app_again_after_a_conflict() -> None:
    cluster = FakeApps(app(metadata={**app()["metadata"], "finalizers": [FINALIZER]}))
    first = [True]

    def other_writer() -> None:
        if first.pop() if first else False:
            cluster.touch(metadata={**cluster.stored[("ns", "web")]["metadata"], "labels": {"x": "y"}})

    cluster.before_write = other_writer
    run(apps.remove_finalizer(cluster, "ns", "web"))  # type: ignore[arg-type]
    assert cluster.verbs() == ["update", "update"]
    stored = cluster.stored[("ns", "web")]["metadata"]
    assert stored["finalizers"] == []
    assert stored["labels"] == {"x": "y"}  # the other writer's change survives


@pytest.mark.parametrize("status", [403, 500])
def test_other_errors_of_removing_the_finalizer_are_raised(status: int) -> None:
    cluster = FakeApps(app(metadata={**app()["metadata"], "finalizers": [FINALIZER]}))
    cluster.fail = [status]
    with pytest.raises(ClusterError):
        run(apps.remove_finalizer(cluster, "ns", "web"))  # type: ignore[arg-type]


def test_removing_the_finalizer_under_persistent_conflicts_fails_rather_than_giving_up_silently() -> None:
    cluster = FakeApps(app(metadata={**app()["metadata"], "finalizers": [FINALIZER]}))
    cluster.before_write = lambda: cluster.touch()
    with pytest.raises(ConcurrencyError):
        run(apps.remove_finalizer(cluster, "ns", "web"))  # type: ignore[arg-type]


def test_has_finalizer() -> None:
    assert not apps.has_finalizer(app())
    assert not apps.has_finalizer(app(metadata={"finalizers": None}))
    assert apps.has_finalizer(app(metadata={"finalizers": ["x", FINALIZER]}))


def test_get_reads_the_app() -> None:
    cluster = FakeApps(app())
    assert run(apps.get(cluster, "ns", "web")) == app()  # type: ignore[arg-type]
    assert run(apps.get(cluster, "ns", "other")) is None  # type: ignore[arg-type]
