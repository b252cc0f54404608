"""kapply.apply.execute: when another writer got to an object first (a create answered 409 under a fallback create
strategy, an update answered 409), the change is calculated again against the object read afresh (_recalculated);
an object gone by then is an error saying which of the two was under way."""

from __future__ import annotations

import asyncio
import copy

import pytest

from kapply.apply.execute import Applier
from kapply.apply.options import ApplyOptions
from kapply.config.default import default_config
from kapply.diff.change import Op, calculate
from kapply.diff.drift import DriftPolicy
from kapply.errors import ApplyError, ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Discovery, ResourceType
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster

CONFIG = default_config()
DISCOVERY = Discovery(BUILTIN_TYPES)
FALLBACK = {"kapp.k14s.io/create-strategy": "fallback-on-update"}


def configmap(value: str, annotations: dict[str, str] | None = None) -> Obj:
    metadata: Obj = {"name": "x", "namespace": "ns", "labels": {"kapp.k14s.io/app": "1"}}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": value}}


class Quiet:
    """Progress that goes nowhere (also test_apply_record_conflict's)."""

    def section(self, message: str) -> None:
        pass

    def line(self, message: str) -> None:
        pass

    def warn(self, message: str) -> None:
        pass


def apply(fake: FakeCluster, new: Obj, existing: Obj | None) -> None:
    change = calculate(new, existing, CONFIG, policy=DriftPolicy.ENFORCE)
    applier = Applier(fake, DISCOVERY, CONFIG, ApplyOptions(), Quiet())  # type: ignore[arg-type]
    asyncio.run(applier.apply_one(change))


def stored(fake: FakeCluster) -> Obj:
    [obj] = fake.objects.values()
    return obj


def test_a_create_someone_else_made_first_falls_back_to_an_update_against_the_live_object() -> None:
    fake = FakeCluster(DISCOVERY)
    apply(fake, configmap("theirs"), None)
    apply(fake, configmap("ours", FALLBACK), None)  # planned before theirs existed
    assert stored(fake)["data"] == {"k": "ours"}
    assert [verb for verb, _, _ in fake.log] == ["create", "create", "get", "update"]


class Vanishing(FakeCluster):
    """A cluster where the object goes away as the write is answered 409 (created or changed by someone else)."""

    async def create(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        raise ClusterError("API server says: already exists (reason: AlreadyExists)", status=409)

    async def update(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        self.objects.clear()
        raise ClusterError("API server says: conflict (reason: Conflict)", status=409)


def test_an_object_gone_when_falling_back_to_update_is_an_error() -> None:
    with pytest.raises(ApplyError, match="resource disappeared while falling back to update$"):
        apply(Vanishing(DISCOVERY), configmap("ours", FALLBACK), None)


def test_an_object_gone_after_an_update_conflict_is_an_error() -> None:
    fake = Vanishing(DISCOVERY)
    asyncio.run(FakeCluster.create(fake, DISCOVERY.find("v1", "ConfigMap"), configmap("theirs")))  # type: ignore[arg-type]
    with pytest.raises(ApplyError, match="resource was deleted while updating it$"):
        apply(fake, configmap("ours"), copy.deepcopy(stored(fake)))


def test_an_update_conflict_is_calculated_again_and_ends_when_the_live_object_already_is_the_desired_one() -> None:
    class SetByOthers(FakeCluster):
        async def update(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
            live = stored(self)
            if live["data"] != {"k": "ours"}:  # someone else writes the same value first
                live.update(copy.deepcopy(obj), metadata={**live["metadata"], "resourceVersion": "99"})
                raise ClusterError("API server says: conflict (reason: Conflict)", status=409)
            return await super().update(rtype, obj, dry_run=dry_run)

    fake = SetByOthers(DISCOVERY)
    apply(fake, configmap("theirs"), None)
    planned = calculate(configmap("ours"), copy.deepcopy(stored(fake)), CONFIG, policy=DriftPolicy.ENFORCE)
    assert planned.op is Op.UPDATE
    applier = Applier(fake, DISCOVERY, CONFIG, ApplyOptions(), Quiet())  # type: ignore[arg-type]
    asyncio.run(applier.apply_one(planned))
    assert stored(fake)["data"] == {"k": "ours"}
    assert [verb for verb, _, _ in fake.log] == ["create", "get"]  # the refused update, then no second one
