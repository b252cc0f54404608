"""Drift policies inside `calculate`: what each sends when an object changed on the cluster since kapply recorded
its last-applied copy, which fields count as drifted, and who is said to have written them."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from kapply.config.inputs import with_defaults
from kapply.diff.change import Basis, Op, calculate, last_applied_annotations
from kapply.diff.drift import DriftPolicy
from kapply.diff.fields import ABSENT, FieldOwnership, FieldPath, Operation
from kapply.diff.ghost import FieldDrift, describe_field, drifted_fields, outside_changes, shown_value, writer
from kapply.objects import Obj

CONFIG = with_defaults([])
CM: Obj = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cfg", "namespace": "ns", "labels": {"kapp.k14s.io/app": "1"}},
    "data": {"text": "hi", "other": "x"},
}


def deployed(new: Obj, managed: list[Obj] | None = None) -> Obj:
    """`new` as kapply leaves it on the cluster: server metadata plus the last-applied annotations."""
    saved = copy.deepcopy(new)
    saved["metadata"].update(uid="u1", resourceVersion="7", creationTimestamp="2026-11-23T10:00:00Z")
    saved["metadata"]["annotations"] = {"kapp.k14s.io/identity": "v1;ns//ConfigMap/cfg;v1"}  # sent with every write
    saved["metadata"]["managedFields"] = managed or [
        {
            "manager": "kapply",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-23T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:text": {}, "f:other": {}}},
        }
    ]
    annotations = last_applied_annotations(saved, new, CONFIG)
    assert annotations is not None
    saved["metadata"]["annotations"].update(annotations)
    return saved


def edited(live: Obj, text: str, manager: str = "kubectl-edit") -> Obj:
    """`live` after someone set data.text."""
    out = copy.deepcopy(live)
    out["data"]["text"] = text
    out["metadata"]["managedFields"].append(
        {
            "manager": manager,
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-23T11:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:text": {}}},
        }
    )
    return out


def with_text(obj: Obj, text: str) -> Obj:
    out = copy.deepcopy(obj)
    out["data"]["text"] = text
    return out


def test_an_object_nobody_changed_has_no_drift_under_any_policy():
    live = deployed(CM)
    for policy in DriftPolicy:
        change = calculate(CM, live, CONFIG, policy=policy)
        assert change.op is Op.KEEP and change.basis is Basis.LAST_APPLIED and change.drifted == ()
        assert outside_changes(change) == ()


def test_enforce_sends_the_desired_value_back_and_names_who_changed_it():
    live = edited(deployed(CM), "edited")
    change = calculate(CM, live, CONFIG)
    assert change.op is Op.UPDATE and change.basis is Basis.LIVE
    assert change.to_apply is not None and change.to_apply["data"]["text"] == "hi"
    assert change.drifted == (FieldPath(("data", "text")),)
    [field] = outside_changes(change)
    assert (str(field.path), field.desired, field.live) == ("data.text", "hi", "edited")
    assert field.owner is not None and field.owner.manager == "kubectl-edit"


def test_preserve_and_warn_keep_the_outside_change_and_send_nothing():
    live = edited(deployed(CM), "edited")
    for policy in (DriftPolicy.PRESERVE, DriftPolicy.WARN):
        change = calculate(CM, live, CONFIG, policy=policy)
        assert change.op is Op.KEEP, policy
        assert change.new == CM  # the desired state (nothing is written, so nothing is recorded)
        [field] = outside_changes(change)
        assert (str(field.path), field.live) == ("data.text", "edited")


def test_preserve_sends_a_changed_desired_value_and_keeps_the_other_outside_changes():
    live = edited(deployed(CM), "edited")
    live["data"]["other"] = "changed by hand"
    desired = with_text(CM, "new")
    change = calculate(desired, live, CONFIG, policy=DriftPolicy.PRESERVE)
    assert change.op is Op.UPDATE
    assert change.to_apply is not None and change.to_apply["data"] == {"text": "new", "other": "changed by hand"}
    assert change.new == desired
    # data.text changes because the desired value changed: only data.other is reported as kept
    assert [str(f.path) for f in outside_changes(change)] == ["data.other"]


def test_a_field_added_on_the_cluster_is_kept_by_preserve_but_removed_by_enforce():
    live = deployed(CM)
    live["data"]["added"] = "by someone"  # the md5 no longer matches: the object changed
    kept = calculate(CM, live, CONFIG, policy=DriftPolicy.PRESERVE)
    assert kept.op is Op.KEEP
    enforced = calculate(CM, live, CONFIG)
    assert enforced.op is Op.UPDATE and enforced.to_apply is not None and "added" not in enforced.to_apply["data"]


def test_a_secret_written_with_string_data_is_not_drift_once_stored_as_data():
    secret: Obj = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "ns"},
        "stringData": {"password": "hunter2"},
    }
    live = deployed(secret)
    del live["stringData"]
    live["data"] = {"password": "aHVudGVyMg=="}
    live["metadata"]["labels"] = {"touched": "yes"}  # something changed, so the copy is compared field by field
    change = calculate(secret, live, CONFIG, policy=DriftPolicy.WARN)
    assert change.drifted == ()


def test_drifted_fields_whose_desired_value_changed_are_not_reported_as_kept():
    live = edited(deployed(CM), "edited")
    change = calculate(with_text(CM, "new"), live, CONFIG, policy=DriftPolicy.WARN)
    assert drifted_fields(change) == ()


def test_values_of_masked_resources_never_show():
    secret: Obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    assert shown_value(secret, "hunter2", CONFIG) == "<-- value not shown"
    assert shown_value(CM, "hi", CONFIG) == '"hi"'
    assert shown_value(CM, ABSENT, CONFIG) == "(none)"
    assert shown_value(CM, "x" * 100, CONFIG) == '"' + "x" * 76 + "..."


def test_a_writer_is_named_with_its_operation_subresource_and_time():
    at = datetime(2026, 11, 23, 21, 46, 16, tzinfo=UTC)
    scale = FieldOwnership("kubectl", Operation.UPDATE, None, "scale", "apps/v1", frozenset())
    edit = FieldOwnership("kubectl-edit", Operation.UPDATE, at, "", "v1", frozenset())
    assert writer(scale) == "kubectl (Update, scale)"
    assert writer(edit) == "kubectl-edit (Update) at 2026-11-23T21:46:16Z"
    assert writer(None) == "no recorded field manager"
    field = FieldDrift(FieldPath(("spec", "replicas")), 2, 1, scale)
    assert describe_field(CM, field, CONFIG) == "spec.replicas: desired 2, live 1, written by kubectl (Update, scale)"
    assert describe_field(CM, field, CONFIG, "a webhook").endswith("written by a webhook")
