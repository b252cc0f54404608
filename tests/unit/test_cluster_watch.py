"""The one list-then-watch loop (kapply.resources.cluster.list_then_watch), against a scripted transport (the LISTs'
pages and the watch streams' lines, as the API server sends them): the watch starts from the list's version and each
event and bookmark moves it; a watch the server ends, or that breaks, starts again from there without a new list; 410
Gone lists again; 401, 403 and 404 are the caller's policy (stop, or wait and list again)."""

from __future__ import annotations

import asyncio
import unittest.mock

import orjson
import pytest

from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, Events, Refusal, ResourceType, list_then_watch
from tests.unit.cluster_fakes import Scripted, event

PODS = ResourceType("", "v1", "Pod", "pods", True, frozenset({"list", "watch"}))


def pod(name: str, version: str) -> Obj:
    return {"metadata": {"name": name, "namespace": "ns", "uid": name, "resourceVersion": version}}


class Recorded:
    """A follower that records what it is told."""

    def __init__(self) -> None:
        self.version = ""
        self.told: list[str] = []

    def replace(self, listed: list[Obj], version: str) -> None:
        self.version = version
        self.told.append(f"listed {[o['metadata']['name'] for o in listed]} at {version}")

    def apply(self, kind: str, obj: Obj) -> None:
        self.version = obj["metadata"].get("resourceVersion") or self.version
        self.told.append(f"{kind} {obj['metadata'].get('name', '')}".strip())

    def lost(self) -> None:
        self.told.append("lost")


def follow(
    cluster: Scripted, refusals: dict[Refusal, float | None] | None = None
) -> tuple[Recorded, list[float], list[Refusal]]:
    """Run the loop until it stops or waits on a watch the script does not end; the waits it made and the refusals it
    reported."""
    follower, sleeps, refused = Recorded(), [], []

    def policy(refusal: Refusal, error: ClusterError) -> float | None:
        refused.append(refusal)
        return (refusals or {}).get(refusal)

    async def no_sleep(delay: float) -> None:
        sleeps.append(delay)

    async def run() -> None:
        loop = asyncio.create_task(
            list_then_watch(cluster, PODS, follower, namespace="ns", label_selector="app=a", refused=policy, retry=2.0)
        )
        idle = asyncio.create_task(cluster.idle.wait())
        await asyncio.wait({loop, idle}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
        assert loop.done() or idle.done(), "the loop neither stopped nor settled"
        for task in (loop, idle):
            task.cancel()
        await asyncio.gather(loop, idle, return_exceptions=True)

    with unittest.mock.patch("asyncio.sleep", no_sleep):
        asyncio.run(run())
    return follower, sleeps, refused


def test_the_watch_starts_from_the_lists_version_and_each_event_and_bookmark_moves_it() -> None:
    cluster = Scripted(
        [([pod("a", "5")], "10")],
        [([event("MODIFIED", pod("a", "11")), event("BOOKMARK", {"metadata": {"resourceVersion": "15"}})], None)],
    )
    follower, sleeps, _ = follow(cluster)
    assert cluster.sent == ["LIST app=a", "WATCH from 10", "WATCH from 15"]  # the server ended the first watch
    assert follower.told == ["listed ['a'] at 10", "MODIFIED a", "BOOKMARK", "lost"]  # lost: cancelled at the end
    assert sleeps == []


def test_a_watch_too_old_lists_again_at_once() -> None:
    gone = orjson.dumps({"type": "ERROR", "object": {"code": 410, "message": "too old resource version"}})
    cluster = Scripted([([pod("a", "5")], "10"), ([pod("b", "30")], "40")], [([gone], None)])
    follower, sleeps, refused = follow(cluster)
    assert cluster.sent == ["LIST app=a", "WATCH from 10", "LIST app=a", "WATCH from 40"]
    assert follower.told[:3] == ["listed ['a'] at 10", "lost", "listed ['b'] at 40"]
    assert sleeps == [] and refused == []


def test_a_dropped_stream_starts_again_from_the_last_version_after_the_retry_delay_without_a_list() -> None:
    cluster = Scripted([([], "10")], [([event("ADDED", pod("a", "12"))], 0)])
    follower, sleeps, refused = follow(cluster)
    assert cluster.sent == ["LIST app=a", "WATCH from 10", "WATCH from 12"]
    assert follower.told[:3] == ["listed [] at 10", "ADDED a", "lost"]
    assert sleeps == [2.0] and refused == []


def test_a_failed_list_is_tried_again_after_the_retry_delay() -> None:
    cluster = Scripted([500, ([], "10")], [])
    _, sleeps, refused = follow(cluster)
    assert cluster.sent == ["LIST app=a", "LIST app=a", "WATCH from 10"]
    assert sleeps == [2.0] and refused == []


@pytest.mark.parametrize(
    ("status", "refusal"), [(401, Refusal.UNAUTHORIZED), (403, Refusal.FORBIDDEN), (404, Refusal.NOT_FOUND)]
)
def test_a_refusal_is_the_callers_to_stop_on(status: int, refusal: Refusal) -> None:
    cluster = Scripted([status], [])
    follower, sleeps, refused = follow(cluster)
    assert refused == [refusal] and cluster.sent == ["LIST app=a"] and sleeps == [] and follower.told == []


def test_a_refusal_the_caller_waits_out_lists_again_after_the_wait() -> None:
    """A watch refused (the type's CRD deleted meanwhile) after a list: the wait, then a new list."""
    cluster = Scripted([([], "10"), ([pod("a", "50")], "60")], [([], 404)])
    follower, sleeps, refused = follow(cluster, {Refusal.NOT_FOUND: 60.0})
    assert refused == [Refusal.NOT_FOUND] and sleeps == [60.0]
    assert cluster.sent == ["LIST app=a", "WATCH from 10", "LIST app=a", "WATCH from 60"]


def test_a_connection_is_asked_for_before_each_list_and_watch() -> None:
    cluster = Scripted([([], "10")], [([], None)])
    asked: list[str] = []

    async def connect() -> Cluster:
        asked.append("connect")
        return cluster

    async def run() -> None:
        task = asyncio.create_task(
            list_then_watch(connect, PODS, Recorded(), namespace="ns", refused=lambda r, e: None, retry=2.0)
        )
        await asyncio.wait_for(cluster.idle.wait(), 5)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(run())
    assert asked == ["connect", "connect"]  # the first list and watch, then the watch after the server ended it
    assert cluster.sent == ["LIST ", "WATCH from 10", "WATCH from 10"]


def test_events_tells_each_listed_object_as_added_and_each_event_but_bookmarks_and_what_each_list_found() -> None:
    gone = orjson.dumps({"type": "ERROR", "object": {"code": 410, "message": "too old resource version"}})
    cluster = Scripted(
        [([pod("a", "5")], "10"), ([pod("b", "30")], "40")],
        [([event("DELETED", pod("a", "11")), event("BOOKMARK", {"metadata": {"resourceVersion": "15"}})], None)]
        + [([gone], None)],
    )
    told: list[str] = []
    follower = Events(lambda kind, obj: told.append(f"{kind} {obj['metadata']['name']}"))
    follower.relisted = lambda listed: told.append(f"listed {[o['metadata']['name'] for o in listed]}")

    async def run() -> None:
        task = asyncio.create_task(list_then_watch(cluster, PODS, follower, refused=lambda r, e: None, retry=2.0))
        await asyncio.wait_for(cluster.idle.wait(), 5)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(run())
    assert cluster.sent == ["LIST ", "WATCH from 10", "WATCH from 15", "LIST ", "WATCH from 40"]
    assert told == ["ADDED a", "listed ['a']", "DELETED a", "ADDED b", "listed ['b']"]
    assert follower.version == "40"
