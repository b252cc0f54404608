"""Ghost diffs: which field a recurring update changes, who keeps changing it back, and the Config that ends it.

The live objects are the managedFields fixtures read from the local control plane (see test_fields.py); the
desired state is the live object as a user would have written it, with the value the cluster keeps changing.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from kapply.config.config import Config, parse_config
from kapply.config.inputs import with_defaults
from kapply.diff.change import Basis, Op, calculate
from kapply.diff.fields import ABSENT, FieldPath, Named, Operation
from kapply.diff.ghost import config_yaml, explain, suggest_rebase_rule, suggest_rebase_rules
from kapply.objects import Obj

DATA = Path(__file__).parent / "data" / "managed_fields"
CONTAINERS = ("spec", "template", "spec", "containers")
SERVER_METADATA = ("creationTimestamp", "generation", "managedFields", "resourceVersion", "uid")


def load(name: str) -> Obj:
    return json.loads((DATA / f"{name}.json").read_text())


def desired_from(live: Obj) -> Obj:
    """The live object as its manifest would say it: no status, no metadata the server writes."""
    desired = copy.deepcopy({k: v for k, v in live.items() if k != "status"})
    for key in SERVER_METADATA:
        desired["metadata"].pop(key, None)
    return desired


def config_from(suggested: Obj) -> Config:
    """The default config followed by the suggestion, read back from the YAML the user would paste."""
    return with_defaults([parse_config(yaml.safe_load(config_yaml(suggested)), "suggested")])


def test_hpa_replicas_are_explained_and_the_suggested_rule_ends_the_ghost_diff():
    live = load("deployment_hpa")  # desired 2, scaled to 1 by the HPA
    desired = desired_from(live)
    desired["spec"]["replicas"] = 2

    before = calculate(desired, live, with_defaults([]))
    assert before.op is Op.UPDATE and before.basis is Basis.LIVE
    assert before.left is not None and before.right is not None
    [drift] = explain(before.left, before.right, live)
    assert str(drift.path) == "spec.replicas" and (drift.desired, drift.live) == (2, 1)
    assert drift.owner is not None
    assert (drift.owner.manager, drift.owner.subresource, drift.owner.operation) == (
        "kube-controller-manager",
        "scale",
        Operation.UPDATE,
    )

    suggested = suggest_rebase_rule(desired, [drift.path])
    assert suggested == {
        "apiVersion": "kapp.k14s.io/v1alpha1",
        "kind": "Config",
        "rebaseRules": [
            {
                "path": ["spec", "replicas"],
                "type": "copy",
                "sources": ["existing", "new"],
                "resourceMatchers": [
                    {"kindNamespaceNameMatcher": {"kind": "Deployment", "namespace": "mf-fields", "name": "web"}}
                ],
            }
        ],
    }
    after = calculate(desired, live, config_from(suggested))
    assert after.op is Op.KEEP
    assert after.to_apply is not None and after.to_apply["spec"]["replicas"] == 1


def test_the_rule_for_one_object_leaves_other_objects_of_the_kind_enforced():
    live = load("deployment_hpa")
    desired = desired_from(live)
    desired["spec"]["replicas"] = 2
    config = config_from(suggest_rebase_rule(desired, [FieldPath(("spec", "replicas"))]))
    other_live = copy.deepcopy(live)
    other_live["metadata"]["name"] = "other"
    other = copy.deepcopy(desired)
    other["metadata"]["name"] = "other"
    assert calculate(other, other_live, config).op is Op.UPDATE


def test_the_suggested_config_reads_like_kapps_recipe():
    live = load("deployment_hpa")
    assert config_yaml(suggest_rebase_rule(desired_from(live), [FieldPath(("spec", "replicas"))])) == (
        "---\n"
        "apiVersion: kapp.k14s.io/v1alpha1\n"
        "kind: Config\n"
        "rebaseRules:\n"
        "- path:\n"
        "  - spec\n"
        "  - replicas\n"
        "  resourceMatchers:\n"
        "  - kindNamespaceNameMatcher:\n"
        "      kind: Deployment\n"
        "      name: web\n"
        "      namespace: mf-fields\n"
        "  sources:\n"
        "  - existing\n"
        "  - new\n"
        "  type: copy\n"
    )


def test_kubectl_scale_and_a_changed_image_in_a_named_container_are_explained_and_ended():
    live = load("deployment_kubectl")  # scaled to 1 by kubectl, app's image set to :2 by mf-patcher
    desired = desired_from(live)
    desired["spec"]["replicas"] = 2
    desired["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.invalid/app:1"

    before = calculate(desired, live, with_defaults([]))
    assert before.op is Op.UPDATE and before.left is not None and before.right is not None
    drifts = explain(before.left, before.right, live)
    assert [(str(d.path), d.desired, d.live, d.owner and d.owner.manager) for d in drifts] == [
        ("spec.replicas", 2, 1, "kubectl"),
        (
            "spec.template.spec.containers[name=app].image",
            "registry.invalid/app:1",
            "registry.invalid/app:2",
            "mf-patcher",
        ),
    ]
    assert drifts[0].owner is not None and drifts[0].owner.subresource == "scale" and drifts[0].owner.time is None

    suggested = suggest_rebase_rule(desired, [d.path for d in drifts])
    [rule] = suggested["rebaseRules"]
    # kapp paths cannot pick an element by name: the image of every container is kept.
    assert rule["paths"] == [["spec", "replicas"], [*CONTAINERS, {"allIndexes": True}, "image"]]
    assert calculate(desired, live, config_from(suggested)).op is Op.KEEP


def test_a_kubectl_edit_of_a_configmap_value():
    live = load("configmap_kubectl_edit")
    desired = desired_from(live)
    desired["data"]["level"] = "info"
    change = calculate(desired, live, with_defaults([]))
    assert change.left is not None and change.right is not None
    [drift] = explain(change.left, change.right, live)
    assert (str(drift.path), drift.desired, drift.live) == ("data.level", "info", "debug")
    assert drift.owner is not None and drift.owner.manager == "kubectl-edit"
    assert calculate(desired, live, config_from(suggest_rebase_rule(desired, [drift.path]))).op is Op.KEEP


def test_a_label_injected_by_a_webhook_into_several_configmaps_has_no_manager_and_one_rule_for_the_kind():
    lives = [load("configmap_webhook_label"), load("configmap_webhook_label")]
    lives[1]["metadata"]["name"] = "second"
    desireds = []
    affected = []
    for live in lives:
        desired = desired_from(live)
        del desired["metadata"]["labels"]["injected-by"]
        desireds.append(desired)
        change = calculate(desired, live, with_defaults([]))
        assert change.op is Op.UPDATE and change.left is not None and change.right is not None
        [drift] = explain(change.left, change.right, live)
        assert str(drift.path) == "metadata.labels.injected-by"
        assert (drift.desired, drift.live, drift.owner) == (ABSENT, "mf-webhook", None)
        affected.append((desired, [drift.path]))

    suggested = suggest_rebase_rules(affected)
    assert suggested["rebaseRules"] == [
        {
            "path": ["metadata", "labels", "injected-by"],
            "type": "copy",
            "sources": ["existing", "new"],
            "resourceMatchers": [{"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "ConfigMap"}}],
        }
    ]
    config = config_from(suggested)
    assert [calculate(d, live, config).op for d, live in zip(desireds, lives, strict=True)] == [Op.KEEP, Op.KEEP]


def test_one_rule_per_kind():
    deployment = desired_from(load("deployment_hpa"))
    configmap = desired_from(load("configmap_kubectl_edit"))
    other_configmap = copy.deepcopy(configmap)
    other_configmap["metadata"]["name"] = "other"
    suggested = suggest_rebase_rules(
        [
            (deployment, [FieldPath(("spec", "replicas"))]),
            (deployment, [FieldPath(("spec", "replicas"))]),  # the same object twice is still one object
            (configmap, [FieldPath(("data", "level"))]),
            (other_configmap, [FieldPath(("data", "level")), FieldPath(("data", "mode"))]),
        ]
    )
    assert [(r.get("path") or r.get("paths"), r["resourceMatchers"]) for r in suggested["rebaseRules"]] == [
        (
            ["spec", "replicas"],
            [{"kindNamespaceNameMatcher": {"kind": "Deployment", "namespace": "mf-fields", "name": "web"}}],
        ),
        ([["data", "level"], ["data", "mode"]], [{"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "ConfigMap"}}]),
    ]


def test_paths_become_what_kapp_paths_can_express():
    resource = desired_from(load("deployment_hpa"))
    suggested = suggest_rebase_rule(
        resource,
        [
            FieldPath((*CONTAINERS, Named("app"), "ports", 0, "containerPort")),
            FieldPath((*CONTAINERS, Named("sidecar"))),  # a whole element: kapp copies map values only
            FieldPath(("spec", "template", "spec", "tolerations", 1)),
            FieldPath(()),
        ],
    )
    assert suggested["rebaseRules"][0]["paths"] == [
        [*CONTAINERS, {"allIndexes": True}, "ports", {"index": 0}, "containerPort"],
        list(CONTAINERS),
        ["spec", "template", "spec", "tolerations"],
    ]
    parse_config(suggested, "suggested")  # valid for kapp's Config schema
    assert suggest_rebase_rule(resource, [])["rebaseRules"] == []


def test_nothing_to_explain_when_the_sides_are_equal():
    live = load("deployment_hpa")
    assert explain(desired_from(live), desired_from(live), live) == []


def test_a_dry_run_side_reports_the_users_desired_value_not_what_a_webhook_added():
    live = {"metadata": {"labels": {"injected-at": "10"}}}
    dry_run = {"metadata": {"labels": {"injected-at": "11"}}}
    desired = {"metadata": {"labels": {}}}
    [field] = explain(live, dry_run, live, desired)
    assert (field.desired, field.live) == (ABSENT, "10")
    [field] = explain(live, dry_run, live)
    assert field.desired == "11"


def test_a_secret_key_set_through_string_data_has_its_desired_value_not_none():
    import base64

    desired = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"password": "wanted"}}
    stored = base64.b64encode(b"wanted").decode()
    live = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "ZWRpdGVk"}}
    left, right = {"data": {"password": "ZWRpdGVk"}}, {"data": {"password": stored}}
    [field] = explain(left, right, live, desired)
    assert (str(field.path), field.desired, field.live) == ("data.password", stored, "ZWRpdGVk")
