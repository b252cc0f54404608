"""kapply.apply.execute `_record`: the second write that records the last-applied copy (when the server's answer
differs from what was sent, so the copy's fingerprint must be of the stored object) may meet another writer's change
(409). The copy is then recorded on the latest object, but fingerprinted as this deploy's own write left it: another
writer's change in between (an autoscaler setting `replicas` while kapp waits) must not be taken for what kapply
applied, or the next deploy trusts the record, finds nothing to change, and the drift stays (seed 000 with the real
kctrl: tests/e2e/test_seed_000_kctrl.py, one run in five)."""

from __future__ import annotations

import asyncio
import copy

from kapply.apply.execute import Applier
from kapply.apply.options import ApplyOptions
from kapply.config.default import default_config
from kapply.diff.change import Change, Op, calculate, last_applied
from kapply.diff.drift import DriftPolicy
from kapply.objects import Obj
from kapply.resources.cluster import Discovery, ResourceType
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster
from tests.unit.test_apply_recalculated import Quiet

CONFIG = default_config()
DISCOVERY = Discovery(BUILTIN_TYPES)


async def applied(applier: Applier, change: Change) -> None:
    """The change applied and its last-applied record written (which the apply loop waits for at its end)."""
    await applier.apply_one(change)
    await applier.recorded()


def deployment(replicas: int) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"kapp.k14s.io/app": "1"}},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }


class ScaledInBetween(FakeCluster):
    """A server that defaults a field (so the copy is recorded in a second write), and an autoscaler that scales the
    Deployment to 1 right after the deploy's update, before that second write."""

    scaled = False

    async def update(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        saved = await super().update(rtype, obj, dry_run=dry_run)
        if not self.scaled and saved["spec"]["replicas"] == 2:
            self.scaled = True
            [live] = self.objects.values()
            live["spec"]["replicas"] = 1
            live["metadata"]["resourceVersion"] = str(next(self._versions))
        return saved


def defaults(stored: Obj) -> None:
    stored["spec"].setdefault("progressDeadlineSeconds", 600)


def test_a_change_made_between_the_update_and_its_record_is_not_recorded_as_applied() -> None:
    fake = ScaledInBetween(DISCOVERY)
    fake.defaults = defaults
    rtype = DISCOVERY.find("apps/v1", "Deployment")
    assert rtype is not None
    asyncio.run(FakeCluster.create(fake, rtype, deployment(1)))
    [live] = fake.objects.values()
    planned = calculate(deployment(2), copy.deepcopy(live), CONFIG, policy=DriftPolicy.ENFORCE)
    assert planned.op is Op.UPDATE
    applier = Applier(fake, DISCOVERY, CONFIG, ApplyOptions(), Quiet())  # type: ignore[arg-type]
    asyncio.run(applied(applier, planned))

    [live] = fake.objects.values()
    assert fake.scaled and live["spec"]["replicas"] == 1
    assert "kapp.k14s.io/original" in live["metadata"]["annotations"], "the copy is recorded on the latest object"
    assert last_applied(live, CONFIG) is None, "the autoscaler's replicas are not taken for what kapply applied"
    again = calculate(deployment(2), copy.deepcopy(live), CONFIG, policy=DriftPolicy.ENFORCE)
    assert again.op is Op.UPDATE, again.op


class StatusInBetween(FakeCluster):
    """The Deployment's controller writes its status right after the deploy's update, before the second write."""

    written = False

    async def update(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        saved = await super().update(rtype, obj, dry_run=dry_run)
        if not self.written:
            self.written = True
            [live] = self.objects.values()
            live["status"] = {"replicas": 2, "observedGeneration": live["metadata"]["generation"]}
            live["metadata"]["resourceVersion"] = str(next(self._versions))
        return saved


def test_a_status_written_between_the_update_and_its_record_leaves_the_record_trusted() -> None:
    fake = StatusInBetween(DISCOVERY)
    fake.defaults = defaults
    rtype = DISCOVERY.find("apps/v1", "Deployment")
    assert rtype is not None
    asyncio.run(FakeCluster.create(fake, rtype, deployment(1)))
    [live] = fake.objects.values()
    planned = calculate(deployment(2), copy.deepcopy(live), CONFIG, policy=DriftPolicy.ENFORCE)
    applier = Applier(fake, DISCOVERY, CONFIG, ApplyOptions(), Quiet())  # type: ignore[arg-type]
    asyncio.run(applied(applier, planned))

    [live] = fake.objects.values()
    assert fake.written and live["status"]["replicas"] == 2
    assert last_applied(live, CONFIG) is not None, "a status is not a change of what was applied"
    again = calculate(deployment(2), copy.deepcopy(live), CONFIG, policy=DriftPolicy.ENFORCE)
    assert again.op is Op.KEEP, again.op
