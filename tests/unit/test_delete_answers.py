"""Waiting on deletes the API server answered as done (issue 33: nothing polls where an answer says): a DELETE answered
with a Status (`status: Success`, the object's UID) or with the object as deleted (no deletionTimestamp) is gone, and
the wait check reads only what the answers left open; an object still held (finalizers), gone already (a 404) or not
answered for is read as kapp reads every deleted resource."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest

from kapply.apply.execute import gone_as_answered
from kapply.apply.options import WaitOptions
from kapply.apply.planning import cluster_changes
from kapply.config.config import Config
from kapply.diff.change import calculate
from kapply.objects import Obj
from kapply.resources.cluster import Discovery, ResourceType
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster
from tests.unit.test_apply_loop import Lines
from tests.unit.test_apply_round_trips import applied, reads

DISCOVERY = Discovery(BUILTIN_TYPES)
FAST = WaitOptions(check_interval=0.01)
Answer = Callable[[Obj], Obj | None]


def status(obj: Obj) -> Obj | None:
    """What the API server answers for an object it removed at once (a ConfigMap, a Secret)."""
    meta = obj["metadata"]
    details = {"name": meta["name"], "kind": "configmaps", "uid": meta["uid"]}
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def as_deleted(obj: Obj) -> Obj | None:
    """What it answers for a type whose deletion returns the object (a Service, a custom resource)."""
    return copy.deepcopy(obj)


def nothing(obj: Obj) -> Obj | None:
    return None


class Answering(FakeCluster):
    """Deletes answered by `answers[name]`; an object named in `held` stays, with a deletionTimestamp and a finalizer,
    for as many reads as `held` says (then its finalizer is off and it is gone)."""

    def __init__(self, answers: dict[str, Answer], held: dict[str, int] | None = None) -> None:
        super().__init__(DISCOVERY)
        self.answers = answers
        self.held = held or {}

    async def delete(
        self, rtype: ResourceType, namespace: str | None, name: str, *, uid: str | None = None, propagation: str = ""
    ) -> Obj | None:
        await self._write("delete", rtype, name)
        key = self._key(rtype, namespace, name)
        stored = self.objects[key]
        if name in self.held:
            stored["metadata"] |= {"deletionTimestamp": "2026-12-05T12:00:00Z", "finalizers": ["example.com/hold"]}
            return copy.deepcopy(stored)
        del self.objects[key]
        return self.answers[name](stored)

    async def get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        key = self._key(rtype, namespace, name)
        if self.held.get(name, 0) > 0:
            self.held[name] -= 1
        elif name in self.held:
            self.objects.pop(key, None)
        return await super().get(rtype, namespace, name)


def live(kind: str, name: str) -> Obj:
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {"kapp.k14s.io/app": "1"}}
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


def delete_all(fake: FakeCluster, config: Config, *objs: Obj) -> Lines:
    for obj in objs:
        rtype = DISCOVERY.find("v1", obj["kind"])
        assert rtype is not None
        fake.objects[fake._key(rtype, "ns", obj["metadata"]["name"])] = copy.deepcopy(obj)
    return applied(fake, config, cluster_changes([calculate(None, obj, config) for obj in objs], config, FAST.wait))


def test_deletes_answered_as_done_are_not_read(config: Config) -> None:
    fake = Answering({"a": status, "b": status, "web": as_deleted})
    lines = delete_all(fake, config, live("ConfigMap", "a"), live("Secret", "b"), live("Service", "web"))
    assert reads(fake) == []
    assert "ok: delete configmap/a (v1) namespace: ns" in lines.lines
    assert "ok: delete service/web (v1) namespace: ns" in lines.lines
    assert lines.lines[-1] == "---- waiting complete [3/3 done] ----"


def test_a_delete_held_by_a_finalizer_is_read_until_it_is_gone_and_only_it(config: Config) -> None:
    fake = Answering({"a": status, "b": status}, held={"held": 1})
    lines = delete_all(fake, config, live("ConfigMap", "a"), live("ConfigMap", "b"), live("ConfigMap", "held"))
    assert reads(fake) == [("get", "ConfigMap", "held")] * 2
    assert "ongoing: delete configmap/held (v1) namespace: ns" in lines.lines
    assert "ok: delete configmap/held (v1) namespace: ns" in lines.lines
    assert lines.lines[-1] == "---- waiting complete [3/3 done] ----"


def test_a_delete_without_an_answer_is_read_as_kapp_reads_it(config: Config) -> None:
    fake = Answering({"a": status, "gone": nothing})
    delete_all(fake, config, live("ConfigMap", "a"), live("ConfigMap", "gone"))
    assert reads(fake) == [("get", "ConfigMap", "gone")]


@pytest.mark.parametrize(
    ("answer", "gone"),
    [
        ({"kind": "Status", "status": "Success", "details": {"uid": "u1"}}, True),
        ({"kind": "Status", "status": "Success", "details": {"uid": "u2"}}, False),  # another object's
        ({"kind": "Status", "status": "Success"}, False),  # says not which object
        ({"kind": "Status", "status": "Failure", "details": {"uid": "u1"}}, False),
        ({"kind": "Service", "metadata": {"uid": "u1"}}, True),
        ({"kind": "Service", "metadata": {"uid": "u1", "deletionTimestamp": "2026-12-05T12:00:00Z"}}, False),
        ({"kind": "Service", "metadata": {"uid": "u2"}}, False),
        (None, False),  # gone already (404): read, as kapp
        ({}, False),
    ],
)
def test_what_a_delete_answer_says(answer: Obj | None, gone: bool) -> None:
    assert gone_as_answered(answer, "u1") is gone
    assert gone_as_answered(answer, None) is False
