import yaml

from kapply.config import YttRebaseRule, default_config, default_config_yaml, matches_any
from kapply.config.ytt import SERVICE_ACCOUNT_SECRETS_OVERLAY


def res(api_version, kind, namespace=None, annotations=None, **fields):
    metadata = {"name": "x"}
    if namespace:
        metadata["namespace"] = namespace
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}


def test_default_config_text_is_a_kapp_config():
    doc = yaml.safe_load(default_config_yaml())
    assert doc["apiVersion"] == "kapp.k14s.io/v1alpha1"
    assert doc["kind"] == "Config"


def test_default_config_has_kapps_rule_counts():
    config = default_config()
    assert len(config.rebase_rules) == 18
    assert len(config.ownership_label_rules) == 5
    assert len(config.label_scoping_rules) == 3
    assert all(rule.is_default for rule in config.label_scoping_rules)
    assert [len(rule.object_references) for rule in config.template_rules] == [19, 32]
    assert len(config.change_group_bindings) == 13
    assert [binding.ignore_if_cyclical for binding in config.change_rule_bindings] == [
        False,
        True,
        True,
        False,
        True,
        True,
        True,
        True,
        True,
    ]
    assert config.wait_rules == ()


def test_default_service_account_overlay_is_recognised_and_runs_natively():
    rule = default_config().rebase_rules[15]
    assert isinstance(rule, YttRebaseRule)
    assert rule.overlay.native is not None
    assert rule.overlay.text.strip() == SERVICE_ACCOUNT_SECRETS_OVERLAY.strip()


def test_change_groups_in_kapps_order():
    names = [binding.name for binding in default_config().change_group_bindings]
    assert names == [
        "change-groups.kapp.k14s.io/crds",
        "change-groups.kapp.k14s.io/crds-{crd-group}-{crd-kind}",
        "change-groups.kapp.k14s.io/namespaces",
        "change-groups.kapp.k14s.io/namespaces-{name}",
        "change-groups.kapp.k14s.io/storage-class",
        "change-groups.kapp.k14s.io/storage",
        "change-groups.kapp.k14s.io/rbac-roles",
        "change-groups.kapp.k14s.io/rbac-role-bindings",
        "change-groups.kapp.k14s.io/rbac",
        "change-groups.kapp.k14s.io/pod-related",
        "change-groups.kapp.k14s.io/serviceaccount",
        "change-groups.kapp.k14s.io/kapp-controller-app",
        "change-groups.kapp.k14s.io/kapp-controller-packageinstall",
    ]


def group_members(name, resource):
    binding = next(b for b in default_config().change_group_bindings if b.name == name)
    return matches_any(binding.resource_matchers, resource)


def test_storage_class_group_never_matches_like_kapps():
    assert not group_members("change-groups.kapp.k14s.io/storage-class", res("storage.k8s.io/v1", "StorageClass"))


def test_pod_related_group_leaves_services_out():
    group = "change-groups.kapp.k14s.io/pod-related"
    assert group_members(group, res("v1", "ConfigMap", "ns"))
    assert not group_members(group, res("v1", "Service", "ns"))


def rule_bindings_for(resource):
    return [
        list(binding.rules)
        for binding in default_config().change_rule_bindings
        if matches_any(binding.resource_matchers, resource)
    ]


def test_custom_resources_wait_for_their_crd_and_namespace():
    rules = rule_bindings_for(res("example.com/v1", "Widget", "ns"))
    assert ["upsert after upserting change-groups.kapp.k14s.io/crds-{api-group}-{kind}"] in rules
    assert ["delete before deleting change-groups.kapp.k14s.io/crds"] in rules
    assert ["upsert after upserting change-groups.kapp.k14s.io/namespaces-{namespace}"] in rules


def test_disable_annotation_removes_default_change_rules_except_storage_and_pod_related():
    annotations = {"kapp.k14s.io/disable-default-change-group-and-rules": ""}
    rules = rule_bindings_for(res("apps/v1", "Deployment", "ns", annotations))
    assert rules == [
        [
            "upsert after upserting change-groups.kapp.k14s.io/pod-related",
            "upsert after upserting change-groups.kapp.k14s.io/rbac",
            "upsert after upserting change-groups.kapp.k14s.io/storage-class",
            "upsert after upserting change-groups.kapp.k14s.io/storage",
        ]
    ]


def test_everything_namespaced_is_deleted_before_its_namespace():
    """kapply's default; kapp's orders only ServiceAccounts so."""
    rule = ["delete before deleting change-groups.kapp.k14s.io/namespaces-{namespace}"]
    assert rule in rule_bindings_for(res("v1", "ServiceAccount", "ns"))
    assert rule in rule_bindings_for(res("v1", "ConfigMap", "ns"))
    assert rule not in rule_bindings_for(res("v1", "Namespace", None))


def test_label_scoping_applies_to_policy_v1beta1_pdb_only():
    rules = default_config().label_scoping_rules
    assert matches_any(rules[2].resource_matchers, res("policy/v1beta1", "PodDisruptionBudget", "ns"))
    assert not any(matches_any(r.resource_matchers, res("policy/v1", "PodDisruptionBudget", "ns")) for r in rules)
