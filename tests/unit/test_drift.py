"""Drift policies: `preserve` keeps outside changes until the desired value changes (Helm's three-way merge, seed
004); `drifted_paths` names the outside changes for `warn` and status."""

from __future__ import annotations

import copy

from kapply.config.inputs import with_defaults
from kapply.diff.change import Op, calculate
from kapply.diff.drift import DriftPolicy, drifted_paths, preserve
from kapply.objects import Obj

DEPLOYMENT: Obj = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "jenkins", "namespace": "ci", "labels": {"app": "jenkins"}, "annotations": {"a": "1"}},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "jenkins"}},
        "template": {
            "metadata": {"labels": {"app": "jenkins"}},
            "spec": {"containers": [{"name": "jenkins", "image": "jenkins:1"}]},
        },
    },
}


def with_changes(obj: Obj, **changes: object) -> Obj:
    """A deep copy of obj with values set at dotted paths (None removes the key)."""
    result = copy.deepcopy(obj)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = result
        for key in parents:
            node = node.setdefault(key, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return result


def live_of(obj: Obj, **changes: object) -> Obj:
    """obj as the server stores it (server metadata, defaults, status), with outside changes."""
    live = with_changes(obj, **changes)
    live["metadata"] = {
        **live["metadata"],
        "uid": "u-1",
        "resourceVersion": "42",
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    live["spec"].setdefault("progressDeadlineSeconds", 600)
    live["spec"]["template"]["spec"].setdefault("dnsPolicy", "ClusterFirst")
    live["status"] = {"replicas": live["spec"].get("replicas", 1)}
    return live


def test_the_policies_are_a_closed_vocabulary():
    assert [p.value for p in DriftPolicy] == ["enforce", "preserve", "warn"]
    assert DriftPolicy("preserve") is DriftPolicy.PRESERVE


def test_an_outside_change_is_kept_while_the_desired_value_is_unchanged():
    live = live_of(DEPLOYMENT, spec__replicas=0)  # scaled down on the cluster
    result = preserve(DEPLOYMENT, DEPLOYMENT, live)
    assert result == live  # nothing changed in the desired state: nothing to send


def test_a_changed_desired_value_wins_over_the_outside_change():
    live = live_of(DEPLOYMENT, spec__replicas=0)
    new = with_changes(DEPLOYMENT, spec__replicas=2)
    result = preserve(new, DEPLOYMENT, live)
    assert result["spec"]["replicas"] == 2
    assert result == with_changes(live, spec__replicas=2)


def test_a_field_removed_from_the_desired_state_is_removed_and_an_added_one_added():
    new = with_changes(DEPLOYMENT, metadata__annotations={"b": "2"}, spec__minReadySeconds=5)
    live = live_of(DEPLOYMENT, metadata__annotations={"a": "1", "someone": "else"})
    result = preserve(new, DEPLOYMENT, live)
    assert result["metadata"]["annotations"] == {"b": "2", "someone": "else"}
    assert result["spec"]["minReadySeconds"] == 5
    removed = preserve(with_changes(DEPLOYMENT, metadata__annotations=None), DEPLOYMENT, live)
    assert "annotations" not in removed["metadata"]


def test_nested_maps_merge_key_by_key_and_fields_only_the_cluster_has_stay():
    new = with_changes(DEPLOYMENT, spec__template__metadata__labels={"app": "jenkins", "tier": "ci"})
    live = live_of(DEPLOYMENT, spec__template__metadata__labels={"app": "jenkins", "injected": "yes"})
    result = preserve(new, DEPLOYMENT, live)
    assert result["spec"]["template"]["metadata"]["labels"] == {"app": "jenkins", "injected": "yes", "tier": "ci"}
    assert result["spec"]["progressDeadlineSeconds"] == 600 and result["status"] == live["status"]
    assert result["metadata"]["resourceVersion"] == "42"  # the update stays conditional on what was read


def test_a_map_added_to_the_desired_state_merges_into_what_the_cluster_has_there():
    new = with_changes(DEPLOYMENT, spec__strategy={"type": "Recreate"})
    live = live_of(DEPLOYMENT, spec__strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}})
    assert preserve(new, DEPLOYMENT, live)["spec"]["strategy"] == {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}


def test_a_map_someone_deleted_gets_back_only_the_keys_whose_desired_value_changed():
    last = with_changes(DEPLOYMENT, data={"x": "1", "y": "1"})
    new = with_changes(DEPLOYMENT, data={"x": "1", "y": "2"})
    live = live_of(DEPLOYMENT)
    assert preserve(new, last, live)["data"] == {"y": "2"}


def test_a_changed_list_is_replaced_whole_and_an_unchanged_one_keeps_its_live_value():
    sidecar = {"name": "injected-sidecar", "image": "proxy:1"}
    containers = [{"name": "jenkins", "image": "jenkins:1"}, sidecar]
    live = live_of(DEPLOYMENT, spec__template__spec__containers=containers)
    kept = preserve(DEPLOYMENT, DEPLOYMENT, live)
    assert kept["spec"]["template"]["spec"]["containers"] == containers
    new = with_changes(DEPLOYMENT, spec__template__spec__containers=[{"name": "jenkins", "image": "jenkins:2"}])
    replaced = preserve(new, DEPLOYMENT, live)
    assert replaced["spec"]["template"]["spec"]["containers"] == [{"name": "jenkins", "image": "jenkins:2"}]


def test_without_a_last_applied_copy_preserve_is_enforce():
    live = live_of(DEPLOYMENT, spec__replicas=0)
    assert preserve(DEPLOYMENT, None, live) is DEPLOYMENT


def test_preserve_leaves_nothing_to_update_when_only_the_cluster_changed():
    """Seed 004's story through the change calculation: the outside scale survives, a desired change is applied."""
    config = with_defaults([])
    live = live_of(DEPLOYMENT, spec__replicas=0)
    enforced = calculate(DEPLOYMENT, live, config)
    assert enforced.to_apply is not None and enforced.to_apply["spec"]["replicas"] == 1  # enforce reverts it
    assert calculate(preserve(DEPLOYMENT, DEPLOYMENT, live), live, config).op is Op.KEEP
    new = with_changes(DEPLOYMENT, spec__replicas=3)
    change = calculate(preserve(new, DEPLOYMENT, live), live, config)
    assert change.op is Op.UPDATE and change.to_apply is not None and change.to_apply["spec"]["replicas"] == 3


def test_drifted_paths_are_the_applied_fields_the_cluster_changed_or_dropped():
    live = live_of(
        DEPLOYMENT,
        spec__replicas=0,
        metadata__annotations={},
        metadata__labels={"app": "jenkins", "added-by": "webhook"},
    )
    live["spec"]["template"]["spec"]["containers"].append({"name": "injected-sidecar", "image": "proxy:1"})
    paths = drifted_paths(DEPLOYMENT, DEPLOYMENT, live)
    # Defaults, server metadata, status and additions are not drift: offline they cannot be told apart.
    assert [str(p) for p in paths] == ["metadata.annotations.a", "spec.replicas"]


def test_drift_is_measured_against_what_was_applied_not_what_is_desired():
    live = live_of(DEPLOYMENT)
    new = with_changes(DEPLOYMENT, spec__replicas=5)
    assert drifted_paths(new, DEPLOYMENT, live) == []  # a pending desired change is not drift
    assert [str(p) for p in drifted_paths(new, None, live)] == ["spec.replicas"]  # without a record, new stands in


def test_no_drift_on_an_untouched_object():
    assert drifted_paths(DEPLOYMENT, DEPLOYMENT, live_of(DEPLOYMENT)) == []
