"""Rules are tried only on resources of kinds their matchers can match; the result is what trying every rule gives."""

from __future__ import annotations

from kapply.config.config import parse_config
from kapply.config.default import default_config
from kapply.config.matchers import matches_any, rules_for_kind
from kapply.config.rules import rebase

SAMPLES = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ns"}, "spec": {}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}, "spec": {}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "a", "namespace": "ns"}},
    {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
]


def config(*rules: tuple[list, list]):
    """A Config of copy rules, each (path, resourceMatchers)."""
    items = [{"path": path, "type": "copy", "sources": ["existing"], "resourceMatchers": m} for path, m in rules]
    return parse_config({"apiVersion": "kapp.k14s.io/v1alpha1", "kind": "Config", "rebaseRules": items}, "test")


SECRET = {"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "Secret"}}
CONFIGMAP_GROUP = {"apiGroupKindMatcher": {"apiGroup": "", "kind": "ConfigMap"}}
POD_P = {"kindNamespaceNameMatcher": {"kind": "Pod", "namespace": "ns", "name": "p"}}


def test_no_rule_that_matches_a_resource_is_left_out_for_its_kind():
    rules = default_config().rebase_rules
    for res in SAMPLES:
        kept = rules_for_kind(rules, res["kind"])
        assert [r for r in rules if matches_any(r.resource_matchers, res)] == [
            r for r in kept if matches_any(r.resource_matchers, res)
        ]
        assert list(kept) == [r for r in rules if r in kept]  # order kept


def test_rules_naming_other_kinds_only_are_left_out():
    rules = config(
        (["data", "a"], [SECRET]),
        (["data", "b"], [{"anyMatcher": {"matchers": [CONFIGMAP_GROUP, SECRET]}}]),
        (["data", "c"], [{"notMatcher": {"matcher": SECRET}}]),
        (["data", "d"], [{"andMatcher": {"matchers": [{"hasNamespaceMatcher": {}}, POD_P]}}]),
    ).rebase_rules
    assert [r.paths[0][1] for r in rules_for_kind(rules, "ConfigMap")] == ["b", "c"]
    assert [r.paths[0][1] for r in rules_for_kind(rules, "Secret")] == ["a", "b", "c"]
    assert [r.paths[0][1] for r in rules_for_kind(rules, "Pod")] == ["c", "d"]


def test_a_rule_that_changes_the_kind_makes_later_rules_match_by_the_new_kind():
    """kapp matches each rule against the result so far: once a rule rewrote `kind`, rules for the new kind apply."""
    rules = config((["kind"], [{"allMatcher": {}}]), (["data", "x"], [SECRET])).rebase_rules
    new = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    existing = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}, "data": {"x": "1"}}
    assert rebase(new, existing, rules) == {**existing, "metadata": {"name": "c"}}
