"""The apply loop's round trips (issue 33): a first wait check that the writes' answers already decide asks the
cluster nothing, and the last-applied record corrected after a write (a Service's server-filled defaults) holds up
nothing but the end of the run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kapply.apply.loop import ApplyLoop
from kapply.apply.options import ApplyOptions, WaitOptions
from kapply.apply.planning import ClusterChange, cluster_changes, order
from kapply.config.config import Config
from kapply.diff.change import calculate, last_applied
from kapply.errors import ApplyError, ClusterError
from kapply.objects import Document, Obj
from kapply.resources.cluster import Discovery, ResourceType
from kapply.resources.preparation import Placement, prepare
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster
from tests.unit.test_apply_loop import Lines

APP = {"kapp.k14s.io/app": "1"}
DISCOVERY = Discovery(BUILTIN_TYPES)
FAST = WaitOptions(check_interval=0.01)
FIRST = {"kapp.k14s.io/change-group": "example.com/first"}
AFTER_FIRST = {"kapp.k14s.io/change-rule": "upsert after upserting example.com/first"}


def service_defaults(stored: Obj) -> None:
    """What the API server fills in a Service: its cluster IP, and defaults the applied copy does not have."""
    if stored["kind"] == "Service":
        stored["spec"].setdefault("clusterIP", "10.0.0.7")
        stored["spec"].setdefault("sessionAffinity", "None")
        if stored["spec"].get("type") == "LoadBalancer":
            stored.setdefault("status", {"loadBalancer": {}})


def obj(kind: str, name: str, api_version: str = "v1", **annotations: str) -> Obj:
    spec: dict[str, Any] = {}
    if kind == "Service":
        spec = {"ports": [{"port": 80}]}
    elif kind == "Deployment":
        spec = {"replicas": 1, "template": {"metadata": {"labels": {"app": name}}}}
    out: Obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "annotations": annotations}}
    return {**out, "spec": spec} if spec else out


def run(fake: FakeCluster, config: Config, *objs: Obj) -> Lines:
    prepared = [d.obj for d in prepare([Document(o, "test") for o in objs], DISCOVERY, config, Placement("ns"), APP)]
    return applied(fake, config, cluster_changes([calculate(n, None, config) for n in prepared], config, FAST.wait))


def applied(fake: FakeCluster, config: Config, planned: list[ClusterChange]) -> Lines:
    """What the apply loop reported running `planned` against `fake` (also test_delete_answers')."""
    lines = Lines()
    loop = ApplyLoop(fake, DISCOVERY, config, "kapp.k14s.io/app=1", ApplyOptions(), FAST, lines)  # type: ignore[arg-type]
    asyncio.run(loop.run(planned, order(planned, config)))
    return lines


def reads(fake: FakeCluster) -> list[tuple[str, str, str]]:
    return [entry for entry in fake.log if entry[0] in ("get", "list")]


def test_config_and_a_service_with_its_cluster_ip_are_done_as_their_writes_answered(config: Config) -> None:
    fake = FakeCluster(DISCOVERY)
    fake.defaults = service_defaults
    lines = run(fake, config, obj("ConfigMap", "a"), obj("Secret", "b"), obj("Service", "web"))
    assert reads(fake) == []
    assert "ok: reconcile service/web (v1) namespace: ns" in lines.lines
    assert "ok: reconcile configmap/a (v1) namespace: ns" in lines.lines
    assert lines.lines[-1] == "---- waiting complete [3/3 done] ----"


def test_what_a_write_cannot_say_is_done_is_read_and_the_checks_after_the_first_are_read(config: Config) -> None:
    fake = FakeCluster(DISCOVERY)
    fake.defaults = service_defaults
    balancer = {**obj("Service", "lb"), "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}

    def ingress(stored: Obj, seen: int) -> None:
        if seen >= 2:
            stored["status"] = {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}

    fake.evolve[("Service", "lb")] = ingress
    lines = run(fake, config, obj("ConfigMap", "a"), balancer)
    assert ("get", "Service", "lb") in reads(fake)  # its status decides: the answer of its create does not show it
    assert "ongoing: reconcile service/lb (v1) namespace: ns" in lines.lines
    assert lines.lines[-1] == "---- waiting complete [2/2 done] ----"


class RecordAfterTheNextGroup(FakeCluster):
    """A write that corrects a Service's record is answered only once the next group's ConfigMap was created: a run
    that waited for it before going on would time out; `refuse`: the correction is refused."""

    def __init__(self, *, refuse: bool = False) -> None:
        super().__init__(DISCOVERY)
        self.defaults = service_defaults
        self.refuse = refuse
        self.next_group = asyncio.Event()

    async def create(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        if obj["metadata"]["name"] == "after":
            self.next_group.set()
        return await super().create(rtype, obj, dry_run=dry_run)

    async def update(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        if rtype.kind == "Service":
            await asyncio.wait_for(self.next_group.wait(), 5)
            if self.refuse:
                raise ClusterError("services is forbidden", status=403)
        return await super().update(rtype, obj, dry_run=dry_run)


def test_a_services_record_corrected_after_its_create_holds_up_only_the_end_of_the_run(config: Config) -> None:
    fake = RecordAfterTheNextGroup()
    run(fake, config, obj("Service", "web", **FIRST), obj("ConfigMap", "after", **AFTER_FIRST))
    writes = [(verb, name) for verb, _, name in fake.log if verb in ("create", "update")]
    assert writes == [("create", "web"), ("create", "after"), ("update", "web")]
    [service] = [o for o in fake.objects.values() if o["kind"] == "Service"]
    assert last_applied(service, config) is not None  # recorded as the server stored it


def test_a_record_that_cannot_be_corrected_fails_its_change_once_the_rest_is_done(config: Config) -> None:
    fake = RecordAfterTheNextGroup(refuse=True)
    with pytest.raises(ApplyError, match=r"^create service/web \(v1\) namespace: ns: Recording the last-applied"):
        run(fake, config, obj("Service", "web", **FIRST), obj("ConfigMap", "after", **AFTER_FIRST))
    assert ("create", "ConfigMap", "after") in fake.log


def test_an_update_records_what_the_server_fills_in_again_in_its_own_write(config: Config) -> None:
    fake = FakeCluster(DISCOVERY)
    fake.defaults = service_defaults
    [first] = [d.obj for d in prepare([Document(obj("Service", "web"), "t")], DISCOVERY, config, Placement("ns"), APP)]
    asyncio.run(fake.create(DISCOVERY.find("v1", "Service"), first))  # type: ignore[arg-type]
    [live] = fake.objects.values()
    second = {**first, "spec": {"ports": [{"port": 8080}]}}
    change = calculate(second, dict(live), config)
    planned = cluster_changes([change], config, FAST.wait)
    loop = ApplyLoop(fake, DISCOVERY, config, "kapp.k14s.io/app=1", ApplyOptions(), FAST, Lines())  # type: ignore[arg-type]
    asyncio.run(loop.run(planned, order(planned, config)))
    assert [verb for verb, _, _ in fake.log] == ["create", "update"]  # no second write to correct the record
    [stored] = fake.objects.values()
    assert stored["spec"]["ports"] == [{"port": 8080}] and last_applied(stored, config) is not None


def test_a_create_records_what_the_server_filled_in_the_last_one_of_its_type(config: Config) -> None:
    fake = FakeCluster(DISCOVERY)
    fake.defaults = service_defaults
    objs = [obj("Service", name) for name in ("one", "two", "three")]
    prepared = [d.obj for d in prepare([Document(o, "t") for o in objs], DISCOVERY, config, Placement("ns"), APP)]
    planned = cluster_changes([calculate(n, None, config) for n in prepared], config, FAST.wait)
    one_at_a_time = ApplyOptions(concurrency=1)
    loop = ApplyLoop(fake, DISCOVERY, config, "kapp.k14s.io/app=1", one_at_a_time, FAST, Lines())  # type: ignore[arg-type]
    asyncio.run(loop.run(planned, order(planned, config)))
    # only the first one's record is corrected: the others' creates carried theirs right
    assert [(verb, name) for verb, _, name in fake.log if verb == "update"] == [("update", "one")]
    assert all(last_applied(stored, config) is not None for stored in fake.objects.values())
