"""Change calculation: the op of each resource, and the two sides its diff compares."""

from __future__ import annotations

import orjson

from kapply.config.config import Config
from kapply.diff.change import ApplyOp, Basis, Op, calculate, last_applied, last_applied_annotations

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": {"a": "1"}}


def live(obj: dict, **server_fields) -> dict:
    """What the server stores after kapply applied obj: kapply's identity annotation, metadata the server fills in."""
    meta = {
        **obj["metadata"],
        "annotations": {"kapp.k14s.io/identity": "v1;ns//ConfigMap/c;v1"},
        "uid": "u-1",
        "resourceVersion": "7",
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    return {**obj, "metadata": meta, **server_fields}


def recorded(obj: dict, applied: dict, config: Config) -> dict:
    """obj annotated as kapply records what it applied."""
    annotations = last_applied_annotations(obj, applied, config)
    assert annotations is not None
    meta = obj["metadata"]
    return {**obj, "metadata": {**meta, "annotations": {**meta.get("annotations", {}), **annotations}}}


def test_a_resource_that_is_not_live_is_created(config):
    change = calculate(CM, None, config)
    assert change.op is Op.ADD and change.op.apply_op is ApplyOp.CREATE
    assert change.left is None and change.right == CM


def test_a_live_resource_no_longer_wanted_is_deleted(config):
    change = calculate(None, live(CM), config)
    assert change.op is Op.DELETE and change.op.apply_op is ApplyOp.DELETE and change.right is None


def test_exists_and_noop_annotations_decide_the_op(config):
    exists = {**CM, "metadata": {**CM["metadata"], "annotations": {"kapp.k14s.io/exists": ""}}}
    noop = {**CM, "metadata": {**CM["metadata"], "annotations": {"kapp.k14s.io/noop": ""}}}
    assert calculate(exists, None, config).op is Op.EXISTS
    assert calculate(exists, live({**CM, "data": {"a": "other"}}), config).op is Op.KEEP  # never updated
    assert calculate(noop, None, config).op is Op.NOOP and calculate(noop, None, config).op.apply_op is ApplyOp.NOOP


def test_an_unchanged_resource_recorded_by_its_last_apply_is_kept_against_that_copy(config):
    stored = recorded(live(CM), CM, config)
    assert last_applied(stored, config) == CM
    change = calculate(CM, stored, config)
    assert change.op is Op.KEEP and change.basis is Basis.LAST_APPLIED


def test_a_changed_value_is_an_update_with_the_change_in_the_diff(config):
    stored = recorded(live(CM), CM, config)
    change = calculate({**CM, "data": {"a": "2"}}, stored, config)
    assert change.op is Op.UPDATE and change.basis is Basis.LAST_APPLIED
    assert change.left is not None and change.right is not None
    assert (change.left["data"], change.right["data"]) == ({"a": "1"}, {"a": "2"})
    assert change.to_apply is not None and change.to_apply["metadata"]["resourceVersion"] == "7"  # rebased


def test_an_outside_change_invalidates_the_recorded_copy_so_the_diff_is_against_live(config):
    stored = recorded(live(CM), CM, config)
    edited = {**stored, "data": {"a": "1", "b": "someone else's"}}
    assert last_applied(edited, config) is None
    change = calculate(CM, edited, config)
    assert change.op is Op.UPDATE and change.basis is Basis.LIVE and change.needs_server_check
    assert change.left is not None and "b" in change.left["data"]


def test_history_and_status_never_show_in_a_diff_and_server_metadata_stays_as_kapp_shows_it(config):
    stored = recorded(live(CM, status={"phase": "x"}), CM, config)
    stored["metadata"]["managedFields"] = [{"manager": "kapply"}]
    change = calculate(CM, stored, config, against_last_applied=False)
    assert change.left is not None
    assert "status" not in change.left and change.left["metadata"]["managedFields"] == [{"manager": "kapply"}]
    assert not any(k.startswith("kapp.k14s.io/original") for k in change.left["metadata"].get("annotations", {}))


def test_a_recorded_copy_that_is_not_json_is_ignored(config):
    stored = live(CM)
    stored["metadata"]["annotations"] = {"kapp.k14s.io/original": "{not json", "kapp.k14s.io/original-diff-md5": "x"}
    assert last_applied(stored, config) is None


def test_a_copy_too_large_for_an_annotation_is_not_recorded(config):
    big = {**CM, "data": {"a": "x" * 300_000}}
    assert last_applied_annotations(live(big), big, config) is None
    small = last_applied_annotations(live(CM), CM, config)
    assert small is not None and orjson.loads(small["kapp.k14s.io/original"]) == CM


def test_without_rules_a_diff_compares_the_documents_as_given():
    change = calculate({**CM, "data": {"a": "2"}}, CM, Config(), against_last_applied=False)
    assert change.op is Op.UPDATE and change.left == CM
