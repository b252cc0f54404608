"""Kubernetes Events about an App, de-duplicated as client-go's correlator: one Event per App, reason and message,
whose count grows; failing to write one never fails the reconcile."""

from __future__ import annotations

import asyncio
import copy
import re
from typing import Any

import pytest

from kapply.controller import events
from kapply.controller import status as app_status
from kapply.controller.events import EVENTS, MAX_MESSAGE, Recorder, event, event_name
from kapply.controller.vocabulary import CARVEL, KAPPLY
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType


class FakeEvents:
    """The Event API as the API server answers it: create (409 when the name exists), get (None when gone) and
    merge-patch; `fail` makes a verb raise the given status."""

    def __init__(self) -> None:
        self.stored: dict[tuple[str, str], Obj] = {}
        self.calls: list[tuple[str, str]] = []
        self.fail: dict[str, int] = {}
        self.vanish_before_get = False  # the Event expires between the create's 409 and the get

    def _maybe_fail(self, verb: str) -> None:
        if verb in self.fail:
            raise ClusterError(f"API server says: {verb} failed", status=self.fail[verb])

    async def create(self, rtype: ResourceType, obj: Obj) -> Obj:
        assert rtype == EVENTS
        meta = obj["metadata"]
        self.calls.append(("create", meta["name"]))
        self._maybe_fail("create")
        key = (meta["namespace"], meta["name"])
        if key in self.stored:
            raise ClusterError("API server says: already exists (reason: AlreadyExists)", status=409)
        self.stored[key] = copy.deepcopy(obj)
        return copy.deepcopy(obj)

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        self.calls.append(("get", name))
        self._maybe_fail("get")
        if self.vanish_before_get:
            self.stored.pop((namespace, name), None)
            self.vanish_before_get = False
        found = self.stored.get((namespace, name))
        return copy.deepcopy(found) if found is not None else None

    async def patch(self, rtype: ResourceType, namespace: str, name: str, patch: Any, patch_type: str = "") -> Obj:
        self.calls.append(("patch", name))
        self._maybe_fail("patch")
        assert patch_type == "application/merge-patch+json"
        obj = self.stored.get((namespace, name))
        if obj is None:
            raise ClusterError("API server says: not found", status=404)
        obj.update(patch)
        return copy.deepcopy(obj)


def app(name: str = "web", uid: str = "uid-1") -> Obj:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid}}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    times = [f"2026-01-01T00:00:{s:02d}Z" for s in range(60)]
    shown: list[str] = []

    def now() -> str:
        shown.append(times[len(shown)])
        return shown[-1]

    monkeypatch.setattr(app_status, "now", now)
    return shown


def emit(cluster: FakeEvents, *calls: tuple[Obj, str, str, bool]) -> None:
    recorder = Recorder(cluster, KAPPLY.app)  # type: ignore[arg-type]

    async def run() -> None:
        for target, reason, message, warning in calls:
            await recorder.emit(target, reason, message, warning=warning)

    asyncio.run(run())


def only(cluster: FakeEvents) -> Obj:
    assert len(cluster.stored) == 1
    return next(iter(cluster.stored.values()))


def test_an_events_name_is_the_apps_name_and_a_digest() -> None:
    name = event_name(app(), "Deployed", "Applied 3 changes")
    assert re.fullmatch(r"web\.[0-9a-f]{16}", name)
    assert event_name(app(), "Deployed", "Applied 3 changes") == name


@pytest.mark.parametrize(
    ("other_app", "reason", "message"),
    [
        (app(uid="uid-2"), "Deployed", "Applied 3 changes"),  # another App of the same name (re-created)
        (app(), "ReconcileFailed", "Applied 3 changes"),
        (app(), "Deployed", "Applied 4 changes"),
    ],
)
def test_another_app_reason_or_message_is_another_event(other_app: Obj, reason: str, message: str) -> None:
    assert event_name(other_app, reason, message) != event_name(app(), "Deployed", "Applied 3 changes")


def test_a_long_app_name_still_makes_a_valid_event_name() -> None:
    name = event_name(app("a" * 253), "Deployed", "x")
    assert len(name) == 200 + 1 + 16
    assert name.startswith("a" * 200 + ".")


def test_an_event_is_about_the_app(clock: list[str]) -> None:
    body = event(app(), "ReconcileFailed", "Fetching: boom", warning=True, about=KAPPLY.app)
    assert body == {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name(app(), "ReconcileFailed", "Fetching: boom"), "namespace": "ns"},
        "involvedObject": {
            "apiVersion": "kapply.dev/v1alpha1",
            "kind": "App",
            "name": "web",
            "namespace": "ns",
            "uid": "uid-1",
        },
        "reason": "ReconcileFailed",
        "message": "Fetching: boom",
        "type": "Warning",
        "source": {"component": "kapply-controller"},
        "reportingComponent": "kapply-controller",
        "firstTimestamp": clock[0],
        "lastTimestamp": clock[0],
        "count": 1,
    }
    assert event(app(), "Deployed", "ok", warning=False, about=KAPPLY.app)["type"] == "Normal"


def test_a_first_event_is_created(clock: list[str]) -> None:
    cluster = FakeEvents()
    emit(cluster, (app(), "Deployed", "Applied 3 changes", False))
    stored = only(cluster)
    assert stored["count"] == 1
    assert stored["type"] == "Normal"
    assert [verb for verb, _ in cluster.calls] == ["create"]


def test_the_same_event_again_counts_one_more_on_the_existing_one(clock: list[str]) -> None:
    cluster = FakeEvents()
    same = (app(), "ReconcileFailed", "Fetching: boom", True)
    emit(cluster, same, same, same)
    stored = only(cluster)
    assert stored["count"] == 3
    assert stored["firstTimestamp"] == clock[0]
    assert stored["lastTimestamp"] == clock[2]
    assert [verb for verb, _ in cluster.calls] == ["create", "patch", "patch"]  # its count remembered, as client-go's


def test_an_event_another_recorder_wrote_is_counted_on_after_its_create_is_refused(clock: list[str]) -> None:
    cluster = FakeEvents()
    same = (app(), "ReconcileFailed", "Fetching: boom", True)
    emit(cluster, same)
    emit(cluster, same, same)  # a new process: it remembers nothing
    assert only(cluster)["count"] == 3
    assert [verb for verb, _ in cluster.calls] == ["create", "create", "get", "patch", "patch"]


def test_a_remembered_event_that_expired_is_created_again(clock: list[str]) -> None:
    cluster = FakeEvents()
    recorder = Recorder(cluster, KAPPLY.app)  # type: ignore[arg-type]

    async def run() -> None:
        await recorder.emit(app(), "Deployed", "x")
        cluster.stored.clear()  # the API server's event TTL
        await recorder.emit(app(), "Deployed", "x")
        await recorder.emit(app(), "Deployed", "x")

    asyncio.run(run())
    assert only(cluster)["count"] == 2
    assert only(cluster)["firstTimestamp"] == clock[1]
    assert [verb for verb, _ in cluster.calls] == ["create", "patch", "create", "patch"]


def test_the_recorder_remembers_only_the_latest_events(clock: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "CACHE_SIZE", 2)
    cluster = FakeEvents()
    a, b, c = ((app(), "Deployed", m, False) for m in "abc")
    emit(cluster, a, b, c, a)  # a was forgotten when c came: created, refused, counted on
    assert sorted(e["count"] for e in cluster.stored.values()) == [1, 1, 2]
    assert [verb for verb, _ in cluster.calls][-3:] == ["create", "get", "patch"]


def test_different_messages_are_different_events(clock: list[str]) -> None:
    cluster = FakeEvents()
    emit(cluster, (app(), "Deployed", "Applied 1 changes", False), (app(), "Deployed", "Applied 2 changes", False))
    assert sorted(e["message"] for e in cluster.stored.values()) == ["Applied 1 changes", "Applied 2 changes"]
    assert all(e["count"] == 1 for e in cluster.stored.values())


def test_an_event_that_expired_in_between_is_created_again(clock: list[str]) -> None:
    cluster = FakeEvents()
    emit(cluster, (app(), "Deployed", "x", False))
    cluster.vanish_before_get = True
    emit(cluster, (app(), "Deployed", "x", False))
    stored = only(cluster)
    assert stored["count"] == 1
    assert stored["firstTimestamp"] == clock[1]
    assert [verb for verb, _ in cluster.calls] == ["create", "create", "get", "create"]


def test_a_long_message_is_cut(clock: list[str]) -> None:
    cluster = FakeEvents()
    emit(cluster, (app(), "ReconcileFailed", "x" * (MAX_MESSAGE + 500), True))
    assert only(cluster)["message"] == "x" * MAX_MESSAGE


@pytest.mark.parametrize(("verb", "status"), [("create", 403), ("create", 500), ("get", 403), ("patch", 422)])
def test_failing_to_write_an_event_is_not_an_error(clock: list[str], verb: str, status: int) -> None:
    cluster = FakeEvents()
    if verb != "create":
        emit(cluster, (app(), "Deployed", "x", False))
    cluster.fail[verb] = status
    emit(cluster, (app(), "Deployed", "x", False))  # does not raise


def test_a_missing_count_counts_as_one(clock: list[str]) -> None:
    cluster = FakeEvents()
    emit(cluster, (app(), "Deployed", "x", False))
    del only(cluster)["count"]
    emit(cluster, (app(), "Deployed", "x", False))
    assert only(cluster)["count"] == 2


def test_events_go_to_the_apps_namespace() -> None:
    cluster = FakeEvents()
    emit(cluster, ({"metadata": {"name": "web", "namespace": "team-a", "uid": "u"}}, "Deployed", "x", False))
    assert [ns for ns, _ in cluster.stored] == ["team-a"]
    assert events.COMPONENT == "kapply-controller"


def test_in_carvel_mode_an_event_is_about_kapp_controllers_app() -> None:
    body = event(app(), "Deployed", "ok", warning=False, about=CARVEL.app)
    assert (body["involvedObject"]["apiVersion"], body["involvedObject"]["kind"]) == (
        "kappctrl.k14s.io/v1alpha1",
        "App",
    )
