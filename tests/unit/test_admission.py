"""Which mutating webhooks the API server calls for an object: rules by group, version, resource, scope and
operation, and the object selector."""

from __future__ import annotations

from kapply.objects import Obj
from kapply.resources.admission import webhooks_for
from kapply.resources.cluster import ResourceType

CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True, frozenset())
DEPLOYMENTS = ResourceType("apps", "v1", "Deployment", "deployments", True, frozenset())
NAMESPACES = ResourceType("", "v1", "Namespace", "namespaces", False, frozenset())
CM: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"inject": "yes"}}}


def config(name: str, *hooks: Obj) -> Obj:
    return {"metadata": {"name": name}, "webhooks": list(hooks)}


def hook(name: str, rule: Obj, selector: Obj | None = None) -> Obj:
    out: Obj = {"name": name, "rules": [rule]}
    if selector is not None:
        out["objectSelector"] = selector
    return out


RULE: Obj = {
    "apiGroups": [""],
    "apiVersions": ["v1"],
    "resources": ["configmaps"],
    "operations": ["CREATE", "UPDATE"],
    "scope": "Namespaced",
}


def test_a_webhook_whose_rule_matches_the_resource_is_named_with_its_configuration():
    assert webhooks_for([config("injector", hook("inject.example.com", RULE))], CONFIGMAPS, CM) == [
        "injector/inject.example.com"
    ]


def test_rules_for_other_groups_resources_scopes_or_operations_do_not_match():
    others = [
        {**RULE, "apiGroups": ["apps"]},
        {**RULE, "apiVersions": ["v2"]},
        {**RULE, "resources": ["secrets"]},
        {**RULE, "operations": ["DELETE", "CONNECT"]},
        {**RULE, "scope": "Cluster"},
    ]
    configs = [config(f"c{i}", hook("h", rule)) for i, rule in enumerate(others)]
    assert webhooks_for(configs, CONFIGMAPS, CM) == []


def test_wildcards_match_everything():
    rule = {"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}
    configs = [config("all", hook("h", rule))]
    assert webhooks_for(configs, DEPLOYMENTS, {"metadata": {"name": "d"}}) == ["all/h"]
    assert webhooks_for(configs, NAMESPACES, {"metadata": {"name": "n"}}) == ["all/h"]


def test_the_object_selector_is_evaluated_against_the_labels():
    matching = hook("yes", RULE, {"matchLabels": {"inject": "yes"}})
    other = hook("no", RULE, {"matchLabels": {"inject": "no"}})
    exists = hook("exists", RULE, {"matchExpressions": [{"key": "inject", "operator": "Exists"}]})
    absent = hook("absent", RULE, {"matchExpressions": [{"key": "inject", "operator": "DoesNotExist"}]})
    in_set = hook("in", RULE, {"matchExpressions": [{"key": "inject", "operator": "In", "values": ["yes", "y"]}]})
    not_in = hook("notin", RULE, {"matchExpressions": [{"key": "inject", "operator": "NotIn", "values": ["yes"]}]})
    found = webhooks_for([config("c", matching, other, exists, absent, in_set, not_in)], CONFIGMAPS, CM)
    assert found == ["c/yes", "c/exists", "c/in"]


def test_malformed_entries_are_skipped():
    assert webhooks_for([{"metadata": {"name": "x"}, "webhooks": ["bad", {"name": "h"}]}], CONFIGMAPS, CM) == []
