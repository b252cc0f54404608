"""Field paths, where objects differ, and who wrote a field according to `metadata.managedFields`.

The fixtures in data/managed_fields are objects read back with `kubectl get -o json --show-managed-fields` from the
local control plane (Kubernetes 1.34.4):

- deployment_kubectl.json: `kubectl apply` (client-side) of a Deployment with containers `app` and `sidecar`, then
  `kubectl scale --replicas=1`, `kubectl label team=blue`, and a strategic merge patch of `app`'s image with
  `--field-manager=mf-patcher`;
- deployment_hpa.json: the same Deployment created with field manager `kapply`, then scaled from 2 to 1 by a real
  HorizontalPodAutoscaler (maxReplicas 1, "Current number of replicas above Spec.MaxReplicas");
- configmap_kubectl_edit.json: a ConfigMap created by `kapply`, `data.level` then changed with `kubectl edit`;
- configmap_webhook_label.json: a ConfigMap in a namespace whose MutatingWebhookConfiguration (served by a test
  webhook on 127.0.0.1) adds the label `injected-by: mf-webhook` on every create and update; created and replaced by
  `kapply` (without the label), then patched by `mf-patcher`;
- configmap_webhook_rewrites_applied_label.json: the same webhook, with a server-side apply (`mf-ssa`) that sets
  `injected-by: me`, which the webhook rewrites;
- configmap_shared_apply.json: two server-side applies of the same values by `mf-first`, then `mf-second`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kapply.diff.fields import (
    ABSENT,
    FieldPath,
    Named,
    Operation,
    changed_paths,
    json_equal,
    managers,
    owner_of,
    value_at,
)

DATA = Path(__file__).parent / "data" / "managed_fields"
CONTAINERS = ("spec", "template", "spec", "containers")


def load(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def path(*parts: str | int | Named) -> FieldPath:
    return FieldPath(parts)


def paths_of(before: dict, after: dict) -> list[str]:
    return [str(p) for p in changed_paths(before, after)]


# Paths


def test_a_path_renders_as_a_readable_dotted_path():
    assert str(path(*CONTAINERS, Named("app"), "image")) == "spec.template.spec.containers[name=app].image"
    assert str(path("metadata", "labels", "app.kubernetes.io/name")) == 'metadata.labels["app.kubernetes.io/name"]'
    assert str(path("spec", "ports", 0, "port")) == "spec.ports[0].port"
    assert str(path("data", "has space", "x")) == 'data["has space"].x'
    assert str(path("spec", "containers", Named("a]b"))) == 'spec.containers[name="a]b"]'
    assert str(path("spec", "maxSurge_2-x")) == "spec.maxSurge_2-x"


def test_paths_are_values():
    assert path("spec", Named("a"), 0) == path("spec", Named("a"), 0) != path("spec", "a", 0)
    assert len({path("spec", "replicas"), path("spec", "replicas")}) == 1


def test_value_at_follows_keys_positions_and_names():
    obj = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}], "n": None}}
    assert value_at(obj, path("spec", "containers", Named("b"), "image")) == "y"
    assert value_at(obj, path("spec", "containers", 0, "image")) == "x"
    assert value_at(obj, path("spec", "n")) is None  # a JSON null is a value
    assert value_at(obj, path("spec", "containers", Named("c"))) is ABSENT
    assert value_at(obj, path("spec", "containers", 5)) is ABSENT
    assert value_at(obj, path("spec", "n", "deeper")) is ABSENT


def test_json_equality_does_not_take_booleans_for_numbers():
    assert json_equal({"a": [1, {"b": True}]}, {"a": [1, {"b": True}]})
    assert not json_equal(True, 1) and not json_equal({"a": 1}, {"a": True}) and not json_equal([1], {"0": 1})
    assert json_equal(2, 2.0)


# Where objects differ


def test_nested_maps_give_the_leaf_that_changed():
    before = {"spec": {"template": {"metadata": {"labels": {"app": "web", "tier": "1"}}}}}
    after = {"spec": {"template": {"metadata": {"labels": {"app": "web", "tier": "2"}}}}}
    assert paths_of(before, after) == ["spec.template.metadata.labels.tier"]


def test_added_and_removed_keys_are_one_path_each_in_sorted_order():
    before = {"data": {"b": "1", "gone": {"deep": {"er": 1}}}, "metadata": {"name": "x"}}
    after = {"data": {"a": "new", "b": "1"}, "metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "x"}}}
    assert paths_of(before, after) == ["data.a", "data.gone", "metadata.labels"]


def test_lists_without_names_are_compared_by_position():
    before = {"spec": {"ports": [{"port": 80}, {"port": 443}], "args": ["a", "b"]}}
    after = {"spec": {"ports": [{"port": 8080}, {"port": 443}], "args": ["a", "b", "c"]}}
    assert paths_of(before, after) == ["spec.args[2]", "spec.ports[0].port"]
    assert paths_of(after, before) == ["spec.args[2]", "spec.ports[0].port"]


def test_lists_of_named_maps_are_matched_by_name_so_a_reorder_changes_only_what_changed():
    before = {"containers": [{"name": "app", "image": "app:1"}, {"name": "sidecar", "image": "sc:1"}]}
    after = {"containers": [{"name": "init", "image": "i:1"}, {"name": "sidecar", "image": "sc:1"}]}
    after["containers"].append({"name": "app", "image": "app:2"})
    assert paths_of(before, after) == ["containers[name=app].image", "containers[name=init]"]
    assert paths_of(after, before) == ["containers[name=init]", "containers[name=app].image"]


def test_a_list_reordered_and_otherwise_equal_is_one_change_at_the_list():
    before = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    after = {"env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]}
    assert paths_of(before, after) == ["env"]


def test_lists_with_repeated_or_missing_names_are_compared_by_position():
    before = {"items": [{"name": "a", "v": 1}, {"name": "a", "v": 2}], "mixed": [{"name": "a"}, "b"]}
    after = {"items": [{"name": "a", "v": 1}, {"name": "a", "v": 3}], "mixed": [{"name": "a"}, "c"]}
    assert paths_of(before, after) == ["items[1].v", "mixed[1]"]


def test_values_of_different_types_differ_at_their_path_and_equal_objects_have_no_paths():
    assert paths_of({"a": {"b": 1}}, {"a": [1]}) == ["a"]
    assert paths_of({"a": 1}, {"a": True}) == ["a"]
    obj = load("deployment_hpa")
    assert changed_paths(obj, json.loads(json.dumps(obj))) == []


# Who wrote a field


def test_managed_fields_entries_are_read_with_their_operation_subresource_and_time():
    entries = {(m.manager, m.subresource): m for m in managers(load("deployment_kubectl"))}
    assert set(entries) == {
        ("kubectl", "scale"),
        ("kubectl-client-side-apply", ""),
        ("kube-controller-manager", "status"),
        ("kubectl-label", ""),
        ("mf-patcher", ""),
    }
    assert all(m.operation is Operation.UPDATE for m in entries.values())
    assert entries["kubectl", "scale"].time is None  # the server records no time for writes through /scale
    assert entries["kubectl-label", ""].time == datetime(2026, 11, 23, 21, 12, 4, tzinfo=UTC)
    assert entries["kubectl-label", ""].api_version == "apps/v1"
    assert {str(p) for p in entries["mf-patcher", ""].fields} == {"spec.template.spec.containers[name=app].image"}
    assert "spec.template.spec.containers[name=app].ports[0].protocol" in {
        str(p) for p in entries["kubectl-client-side-apply", ""].fields
    }  # k:{"containerPort":8080,"protocol":"TCP"} is the element's position


def owner(fixture: str, *parts: str | int | Named) -> tuple[str, str, Operation] | None:
    found = owner_of(load(fixture), path(*parts))
    return None if found is None else (found.manager, found.subresource, found.operation)


def test_kubectl_scale_is_kubectl_through_the_scale_subresource():
    assert owner("deployment_kubectl", "spec", "replicas") == ("kubectl", "scale", Operation.UPDATE)


def test_an_hpa_is_the_controller_manager_through_the_scale_subresource():
    assert owner("deployment_hpa", "spec", "replicas") == ("kube-controller-manager", "scale", Operation.UPDATE)
    assert owner("deployment_hpa", *CONTAINERS, Named("app"), "image") == ("kapply", "", Operation.UPDATE)


def test_kubectl_label_and_kubectl_edit_are_their_own_managers():
    assert owner("deployment_kubectl", "metadata", "labels", "team") == ("kubectl-label", "", Operation.UPDATE)
    assert owner("deployment_kubectl", "metadata", "labels", "app") == (
        "kubectl-client-side-apply",
        "",
        Operation.UPDATE,
    )
    assert owner("configmap_kubectl_edit", "data", "level") == ("kubectl-edit", "", Operation.UPDATE)
    assert owner("configmap_kubectl_edit", "data", "mode") == ("kapply", "", Operation.UPDATE)


def test_list_elements_are_found_by_their_keys_whatever_the_path_calls_them():
    image = ("mf-patcher", "", Operation.UPDATE)
    assert owner("deployment_kubectl", *CONTAINERS, Named("app"), "image") == image
    assert owner("deployment_kubectl", *CONTAINERS, 0, "image") == image
    csa = ("kubectl-client-side-apply", "", Operation.UPDATE)
    assert owner("deployment_kubectl", *CONTAINERS, Named("sidecar"), "image") == csa
    assert owner("deployment_kubectl", *CONTAINERS, Named("app"), "env", Named("MODE"), "value") == csa
    assert owner("deployment_kubectl", *CONTAINERS, Named("app"), "ports", 0, "containerPort") == csa


def test_a_field_inside_a_value_written_whole_belongs_to_its_writer():
    # `f:selector: {}` is a leaf: the whole selector, matchLabels included.
    assert owner("deployment_hpa", "spec", "selector", "matchLabels", "app") == ("kapply", "", Operation.UPDATE)


def test_a_path_nobody_owns_belongs_to_the_owners_of_what_is_under_it():
    assert owner("deployment_hpa", "status") == ("kube-controller-manager", "status", Operation.UPDATE)


def test_a_mutating_webhook_is_never_a_manager():
    # The label the webhook adds is owned by nobody, though the request's manager owns the labels map as a node.
    assert owner("configmap_webhook_label", "metadata", "labels", "injected-by") is None
    assert owner("configmap_webhook_label", "metadata", "labels") == ("kapply", "", Operation.UPDATE)
    # A field the request set and the webhook rewrote stays with the request's manager.
    rewritten = load("configmap_webhook_rewrites_applied_label")
    assert rewritten["metadata"]["labels"]["injected-by"] == "mf-webhook"
    assert owner("configmap_webhook_rewrites_applied_label", "metadata", "labels", "injected-by") == (
        "mf-ssa",
        "",
        Operation.APPLY,
    )


def test_a_field_missing_from_the_live_object_has_no_owner():
    assert owner("configmap_kubectl_edit", "data", "removed") is None
    assert owner("deployment_kubectl", *CONTAINERS, Named("gone"), "image") is None
    assert owner_of({"metadata": {"name": "x"}, "data": {"a": "1"}}, path("data", "a")) is None


def test_among_several_owners_the_latest_write_wins():
    # mf-second's apply changed nothing and the server recorded it without a time: mf-first wrote the value.
    assert owner("configmap_shared_apply", "data", "mode") == ("mf-first", "", Operation.APPLY)


def managed(*entries: tuple[str, str, str | None]) -> list[dict]:
    return [
        {"manager": m, "operation": op, "time": t, "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}
        for m, op, t in entries
    ]


def test_ties_go_to_the_update_then_to_the_manager_name():
    at = "2026-01-01T00:00:00Z"
    obj = {
        "metadata": {"managedFields": managed(("b-apply", "Apply", at), ("a-update", "Update", at))},
        "data": {"a": "1"},
    }
    assert owner_of(obj, path("data", "a")).manager == "a-update"  # type: ignore[union-attr]
    obj = {"metadata": {"managedFields": managed(("b", "Update", at), ("a", "Update", at))}, "data": {"a": "1"}}
    assert owner_of(obj, path("data", "a")).manager == "b"  # type: ignore[union-attr]


def test_set_elements_positions_and_malformed_entries():
    live = {
        "metadata": {
            "finalizers": ["example.com/a", "example.com/b"],
            "managedFields": [
                {
                    "manager": "sets",
                    "operation": "Update",
                    "fieldsV1": {"f:metadata": {"f:finalizers": {'v:"example.com/b"': {}}}},
                },
                {"manager": "positions", "operation": "Update", "fieldsV1": {"f:spec": {"f:args": {"i:1": {}}}}},
                {"manager": "bad-op", "operation": "Replace", "fieldsV1": {"f:spec": {}}},
                {
                    "manager": "bad-key",
                    "operation": "Update",
                    "fieldsV1": {"f:spec": {"k:{not json": {}, "f:args": {"i:9": {}}}},
                },
                {"operation": "Update"},
                "not an entry",
            ],
        },
        "spec": {"args": ["a", "b"]},
    }
    assert [(m.manager, {str(p) for p in m.fields}) for m in managers(live)] == [
        ("sets", {"metadata.finalizers[1]"}),
        ("positions", {"spec.args[1]"}),
        ("bad-key", set()),
    ]
    assert owner_of(live, path("metadata", "finalizers", 1)).manager == "sets"  # type: ignore[union-attr]
    assert owner_of(live, path("spec", "args", 0)) is None
    assert managers({"metadata": {"name": "x"}}) == [] and managers({"metadata": {"managedFields": "x"}}) == []


@pytest.mark.parametrize("fixture", sorted(p.stem for p in DATA.glob("*.json")))
def test_every_owned_field_of_the_fixtures_is_placed_in_the_live_object(fixture: str):
    live = load(fixture)
    for entry in managers(live):
        assert entry.fields, entry.manager
        for field in entry.fields:
            assert value_at(live, field) is not ABSENT, (entry.manager, str(field))
