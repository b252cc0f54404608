"""The one status and finalizer writer (kapply.resources.cluster's Cluster.write_status, add_finalizer and
remove_finalizer), for Apps and packages alike: status writes through the status subresource (read again on a
conflict, skipped when the caller's `unchanged` says so), finalizers added and removed, and the one conflict policy
(ConcurrencyError after CONFLICT_ATTEMPTS conflicts; an object gone is left alone), against an in-memory API
server."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable
from typing import Any, TypeVar

import pytest

from kapply.controller.apps import APPS
from kapply.controller.spec import FINALIZER
from kapply.controller.status import same_but_times
from kapply.errors import ClusterError, ConcurrencyError
from kapply.objects import Obj
from kapply.packaging import names, store
from kapply.resources.cluster import CONFLICT_ATTEMPTS, ResourceType
from tests.unit.cluster_fakes import Stored

T = TypeVar("T")


def fake_apps(*stored: Obj, rtype: ResourceType = APPS) -> Stored:
    """Apps as the API server keeps them (tests/unit/cluster_fakes.py's Stored)."""
    return Stored(*stored, rtype=rtype)


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


# The App's policy, as the reconciler binds it: its type, its finalizer, a status differing only in times unchanged.


async def write_status(cluster: Stored, obj: Obj, status: Obj) -> None:
    await cluster.write_status(APPS, obj, status, unchanged=same_but_times)


async def add_finalizer(cluster: Stored, obj: Obj) -> None:
    await cluster.add_finalizer(APPS, obj, FINALIZER)


async def remove_finalizer(cluster: Stored, namespace: str, name: str) -> None:
    await cluster.remove_finalizer(APPS, namespace, name, FINALIZER)


SUCCEEDED = {"friendlyDescription": "Reconcile succeeded", "deploy": {"exitCode": 0, "updatedAt": "t1"}}


# Status writes.


def test_a_status_is_written_through_the_status_subresource_and_the_app_kept_current() -> None:
    cluster = fake_apps(app())
    ours = app()
    run(write_status(cluster, ours, SUCCEEDED))
    assert cluster.verbs() == ["status"]
    assert cluster.stored[("ns", "web")]["status"] == SUCCEEDED
    assert ours["metadata"]["resourceVersion"] == cluster.stored[("ns", "web")]["metadata"]["resourceVersion"]
    assert ours["status"] == SUCCEEDED


def test_a_status_that_differs_only_in_times_is_not_written() -> None:
    cluster = fake_apps(app(status=SUCCEEDED))
    later = {**SUCCEEDED, "deploy": {"exitCode": 0, "updatedAt": "t2", "startedAt": "t2"}}
    run(write_status(cluster, app(status=SUCCEEDED), later))
    assert cluster.writes == []


def test_a_status_that_differs_otherwise_is_written() -> None:
    cluster = fake_apps(app(status=SUCCEEDED))
    failed = {**SUCCEEDED, "friendlyDescription": "Reconcile failed"}
    run(write_status(cluster, app(status=SUCCEEDED), failed))
    assert cluster.verbs() == ["status"]
    assert cluster.stored[("ns", "web")]["status"] == failed


def test_a_conflict_reads_the_app_again_and_writes_over_the_latest_version() -> None:
    cluster = fake_apps(app())
    ours = app()
    cluster.touch(metadata={**app()["metadata"], "labels": {"new": "label"}})
    latest = cluster.stored[("ns", "web")]["metadata"]["resourceVersion"]
    run(write_status(cluster, ours, SUCCEEDED))
    assert cluster.verbs() == ["status", "status"]
    assert cluster.writes[1][1]["metadata"]["resourceVersion"] == latest
    assert cluster.writes[1][1]["metadata"]["labels"] == {"new": "label"}  # the latest App, not ours
    assert cluster.stored[("ns", "web")]["status"] == SUCCEEDED
    assert ours["metadata"]["resourceVersion"] == cluster.stored[("ns", "web")]["metadata"]["resourceVersion"]


def test_after_a_conflict_nothing_is_written_when_the_latest_status_already_says_it() -> None:
    cluster = fake_apps(app())
    cluster.touch(status={**SUCCEEDED, "deploy": {"exitCode": 0, "updatedAt": "t0"}})
    run(write_status(cluster, app(), SUCCEEDED))
    assert cluster.verbs() == ["status"]  # the one that conflicted


def test_an_app_deleted_after_a_conflict_is_left_alone() -> None:
    cluster = fake_apps(app())

    def conflict_then_gone() -> None:
        cluster.fail.append(409)
        cluster.stored.clear()

    cluster.before_write = conflict_then_gone
    run(write_status(cluster, app(), SUCCEEDED))
    assert cluster.verbs() == ["status"]


def test_an_object_gone_before_its_status_write_is_left_alone() -> None:
    cluster = fake_apps(app())
    cluster.fail = [404]
    ours = app()
    run(write_status(cluster, ours, SUCCEEDED))
    assert cluster.verbs() == ["status"] and "status" not in ours


@pytest.mark.parametrize("status", [403, 422, 500])
def test_other_errors_of_a_status_write_are_raised(status: int) -> None:
    cluster = fake_apps(app())
    cluster.fail = [status]
    with pytest.raises(ClusterError) as e:
        run(write_status(cluster, app(), SUCCEEDED))
    assert e.value.status == status


@pytest.mark.parametrize("rtype", [APPS, store.INSTALLS, store.REPOSITORIES], ids=lambda t: t.kind)
def test_a_status_others_keep_changing_fails_with_a_concurrency_error_after_a_bounded_number_of_conflicts(
    rtype: ResourceType,
) -> None:
    """The one conflict policy, for Apps and packages alike: never a status dropped silently (the worker tries the
    reconcile again within seconds)."""
    cluster = fake_apps(app(), rtype=rtype)
    cluster.before_write = lambda: cluster.touch()
    with pytest.raises(ConcurrencyError, match=f"Writing the status of {rtype.kind} ns/web: changed by others 5 times"):
        asyncio.run(cluster.write_status(rtype, app(), SUCCEEDED))
    assert cluster.verbs() == ["status"] * CONFLICT_ATTEMPTS == ["status"] * 5


def test_without_a_policy_a_status_equal_to_the_stored_one_is_not_written_and_any_other_is() -> None:
    cluster = fake_apps(app(status=SUCCEEDED), rtype=store.INSTALLS)
    asyncio.run(cluster.write_status(store.INSTALLS, app(status=SUCCEEDED), SUCCEEDED))
    assert cluster.writes == []
    later = {**SUCCEEDED, "deploy": {"exitCode": 0, "updatedAt": "t2"}}
    asyncio.run(cluster.write_status(store.INSTALLS, app(status=SUCCEEDED), later))
    assert cluster.verbs() == ["status"]


def test_a_packages_finalizer_is_added_and_removed_by_the_same_writer() -> None:
    cluster = fake_apps(app(), rtype=store.INSTALLS)
    ours = app()
    asyncio.run(cluster.add_finalizer(store.INSTALLS, ours, names.INSTALL_FINALIZER))
    assert ours["metadata"]["finalizers"] == [names.INSTALL_FINALIZER]
    asyncio.run(cluster.remove_finalizer(store.INSTALLS, "ns", "web", names.INSTALL_FINALIZER))
    assert cluster.stored[("ns", "web")]["metadata"]["finalizers"] == []


# The finalizer.


def test_adding_the_finalizer_keeps_the_others_and_the_app_current() -> None:
    cluster = fake_apps(app(metadata={**app()["metadata"], "finalizers": ["other/one"]}))
    ours = cluster.stored[("ns", "web")]
    ours = copy.deepcopy(ours)
    run(add_finalizer(cluster, ours))
    assert cluster.stored[("ns", "web")]["metadata"]["finalizers"] == ["other/one", FINALIZER]
    assert ours["metadata"]["finalizers"] == ["other/one", FINALIZER]
    assert ours["metadata"]["resourceVersion"] == cluster.stored[("ns", "web")]["metadata"]["resourceVersion"]
    assert FINALIZER in ours["metadata"]["finalizers"]


def test_adding_the_finalizer_when_present_writes_nothing() -> None:
    with_ours = app(metadata={**app()["metadata"], "finalizers": [FINALIZER]})
    cluster = fake_apps(with_ours)
    run(add_finalizer(cluster, copy.deepcopy(with_ours)))
    assert cluster.writes == []


def test_adding_the_finalizer_keeps_the_status() -> None:
    cluster = fake_apps(app(status=SUCCEEDED))
    run(add_finalizer(cluster, app(status={"stale": True})))
    assert cluster.stored[("ns", "web")]["status"] == SUCCEEDED


def test_adding_the_finalizer_on_a_conflict_adds_it_to_the_app_read_afresh() -> None:
    """The reconcile starts from the App as the watch last showed it, which may be older than the stored one."""
    cluster = fake_apps(app())
    cluster.touch(metadata={**app()["metadata"], "labels": {"by": "someone"}})
    ours = app()
    run(add_finalizer(cluster, ours))
    stored = cluster.stored[("ns", "web")]
    assert stored["metadata"]["finalizers"] == [FINALIZER] and stored["metadata"]["labels"] == {"by": "someone"}
    assert ours["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert cluster.verbs() == ["update", "update"] and cluster.gets == 1


def test_adding_the_finalizer_to_an_app_others_keep_changing_gives_up() -> None:
    cluster = fake_apps(app())
    cluster.before_write = cluster.touch
    with pytest.raises(ConcurrencyError):
        run(add_finalizer(cluster, app()))
    assert len(cluster.writes) == CONFLICT_ATTEMPTS


def test_adding_the_finalizer_to_a_failing_server_raises() -> None:
    cluster = fake_apps(app())
    cluster.fail = [500]
    with pytest.raises(ClusterError) as e:
        run(add_finalizer(cluster, app()))
    assert e.value.status == 500


def test_removing_the_finalizer_removes_only_ours() -> None:
    cluster = fake_apps(app(metadata={**app()["metadata"], "finalizers": ["other/one", FINALIZER, "other/two"]}))
    run(remove_finalizer(cluster, "ns", "web"))
    assert cluster.stored[("ns", "web")]["metadata"]["finalizers"] == ["other/one", "other/two"]
    assert cluster.verbs() == ["update"]


@pytest.mark.parametrize("finalizers", [None, [], ["other/one"]])
def test_removing_an_absent_finalizer_writes_nothing(finalizers: list[str] | None) -> None:
    cluster = fake_apps(app(metadata={**app()["metadata"], "finalizers": finalizers}))
    run(remove_finalizer(cluster, "ns", "web"))
    assert cluster.writes == []


def test_removing_the_finalizer_of_a_gone_app_does_nothing() -> None:
    cluster = fake_apps()
    run(remove_finalizer(cluster, "ns", "web"))
    assert cluster.writes == []


def test_removing_the_finalizer_reads_the_app_again_after_a_conflict() -> None:
    cluster = fake_apps(app(metadata={**app()["metadata"], "finalizers": [FINALIZER]}))
    first = [True]

    def other_writer() -> None:
        if first.pop() if first else False:
            cluster.touch(metadata={**cluster.stored[("ns", "web")]["metadata"], "labels": {"x": "y"}})

    cluster.before_write = other_writer
    run(remove_finalizer(cluster, "ns", "web"))
    assert cluster.verbs() == ["update", "update"]
    stored = cluster.stored[("ns", "web")]["metadata"]
    assert stored["finalizers"] == []
    assert stored["labels"] == {"x": "y"}  # the other writer's change survives


@pytest.mark.parametrize("status", [403, 500])
def test_other_errors_of_removing_the_finalizer_are_raised(status: int) -> None:
    cluster = fake_apps(app(metadata={**app()["metadata"], "finalizers": [FINALIZER]}))
    cluster.fail = [status]
    with pytest.raises(ClusterError):
        run(remove_finalizer(cluster, "ns", "web"))


def test_removing_the_finalizer_under_persistent_conflicts_fails_rather_than_giving_up_silently() -> None:
    cluster = fake_apps(app(metadata={**app()["metadata"], "finalizers": [FINALIZER]}))
    cluster.before_write = lambda: cluster.touch()
    with pytest.raises(ConcurrencyError):
        run(remove_finalizer(cluster, "ns", "web"))
