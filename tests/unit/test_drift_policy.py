"""`drift.apply_policy`: what an update sends and records about fields someone else changed, under each policy,
from the live object and its last-applied copy alone (no Config, no rebase: `calculate` does those)."""

from __future__ import annotations

import copy

import orjson
import pytest

from kapply.diff.drift import Drift, DriftPolicy, apply_policy, kept_drift
from kapply.diff.fields import FieldPath
from kapply.objects import DRIFT_KEPT, Obj

REPLICAS = FieldPath(("spec", "replicas"))
IMAGE = FieldPath(("spec", "image"))


def desired(replicas: int = 2, image: str = "web:1") -> Obj:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"replicas": replicas, "image": image},
    }


def live(replicas: int = 2, image: str = "web:1", kept: str | None = None) -> Obj:
    obj = desired(replicas, image)
    obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    obj["status"] = {"ready": True}
    if kept is not None:
        obj["metadata"]["annotations"] = {DRIFT_KEPT: kept}
    return obj


def test_without_a_last_applied_copy_the_desired_state_is_sent_and_recorded():
    new = desired()
    assert apply_policy(new, live(5), None, unchanged=False, policy=DriftPolicy.PRESERVE, records=True) == Drift(
        new, new
    )


@pytest.mark.parametrize("policy", list(DriftPolicy))
def test_an_untouched_object_has_no_drift_under_any_policy(policy):
    new = desired(image="web:2")
    assert apply_policy(new, live(), desired(), unchanged=True, policy=policy, records=True) == Drift(new, new)


def test_enforce_reports_the_outside_change_and_sends_the_desired_state_back():
    new = desired()
    drift = apply_policy(new, live(replicas=5), desired(), unchanged=False, policy=DriftPolicy.ENFORCE, records=True)
    assert drift == Drift(new, new, (REPLICAS,))


@pytest.mark.parametrize("policy", [DriftPolicy.PRESERVE, DriftPolicy.WARN])
def test_preserve_and_warn_keep_the_live_value_and_record_it_with_the_desired_one(policy):
    drift = apply_policy(desired(), live(replicas=5), desired(), unchanged=False, policy=policy, records=True)
    assert (drift.drifted, drift.kept) == ((REPLICAS,), (REPLICAS,))
    assert drift.sent["spec"] == {"replicas": 5, "image": "web:1"}
    assert "status" not in drift.sent and "managedFields" not in drift.sent["metadata"]
    assert orjson.loads(drift.sent["metadata"]["annotations"][DRIFT_KEPT]) == [[["spec", "replicas"], 2]]
    assert drift.recorded == desired(replicas=5)  # what was applied, never laundered into the desired state


def test_a_changed_desired_value_is_sent_while_the_other_outside_change_is_kept():
    drift = apply_policy(
        desired(image="web:2"), live(5), desired(), unchanged=False, policy=DriftPolicy.PRESERVE, records=True
    )
    assert drift.sent["spec"] == {"replicas": 5, "image": "web:2"}
    assert drift.kept == (REPLICAS,)


def test_a_resource_without_the_last_applied_copy_records_nothing_of_the_kept_fields():
    new = desired()
    drift = apply_policy(new, live(replicas=5), desired(), unchanged=False, policy=DriftPolicy.WARN, records=False)
    assert drift.kept == (REPLICAS,)
    assert DRIFT_KEPT not in (drift.sent["metadata"].get("annotations") or {})
    assert drift.recorded == new


def test_drift_kept_by_an_earlier_deploy_stays_drifted_and_kept_until_its_desired_value_changes():
    # The last preserve deploy kept replicas at 5 (desired 2): the copy says 5, the annotation says 2 was desired.
    recorded = desired(replicas=5)
    cluster = live(replicas=5, kept='[[["spec","replicas"],2]]')
    drift = apply_policy(desired(), cluster, recorded, unchanged=True, policy=DriftPolicy.PRESERVE, records=True)
    assert (drift.drifted, drift.kept) == ((REPLICAS,), (REPLICAS,))
    assert drift.sent["spec"]["replicas"] == 5
    changed = apply_policy(
        desired(replicas=3), cluster, recorded, unchanged=True, policy=DriftPolicy.PRESERVE, records=True
    )
    assert changed.sent["spec"]["replicas"] == 3
    assert changed.kept == ()


def test_enforce_sends_back_drift_an_earlier_deploy_kept():
    new = desired()
    cluster = live(replicas=5, kept='[[["spec","replicas"],2]]')
    drift = apply_policy(new, cluster, desired(5), unchanged=True, policy=DriftPolicy.ENFORCE, records=True)
    assert drift == Drift(new, new, (REPLICAS,))


def test_the_kept_drift_annotation_reads_back_what_was_written():
    drift = apply_policy(desired(), live(5), desired(), unchanged=False, policy=DriftPolicy.WARN, records=True)
    assert kept_drift(drift.sent) == ((REPLICAS, 2),)


def test_the_objects_given_are_not_changed():
    new, cluster, recorded = desired(), live(5), desired()
    before = copy.deepcopy((new, cluster, recorded))
    apply_policy(new, cluster, recorded, unchanged=False, policy=DriftPolicy.PRESERVE, records=True)
    assert (new, cluster, recorded) == before
