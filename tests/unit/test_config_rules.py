import copy

import pytest

from kapply.config import (
    MaskCounter,
    add_label_scoping,
    add_ownership_labels,
    default_config,
    mask,
    parse_config,
    rebase,
    remove_fields,
)
from kapply.config.ytt import SERVICE_ACCOUNT_SECRETS_OVERLAY, YttOverlay, recognise_overlay
from kapply.errors import ConfigError
from tests.e2e.harness import external_tool

APP_LABELS = {"kapp.k14s.io/app": "1700000000", "kapp.k14s.io/association": "v1.abc"}


def default_rebase(new, existing):
    return rebase(new, existing, default_config().rebase_rules)


def service(spec, **metadata):
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "ns", **metadata},
        "spec": spec,
    }


def live(resource, **metadata):
    result = copy.deepcopy(resource)
    result["metadata"].update(
        {"resourceVersion": "42", "uid": "u-1", "creationTimestamp": "2024-01-01T00:00:00Z", **metadata}
    )
    return result


def test_default_rebase_keeps_live_service_cluster_ip_when_new_has_none():
    new = service({"ports": [{"port": 80}]})
    existing = live(service({"ports": [{"port": 80}], "clusterIP": "10.0.0.7"}))
    assert default_rebase(new, existing)["spec"]["clusterIP"] == "10.0.0.7"


def test_default_rebase_prefers_the_users_cluster_ip():
    new = service({"clusterIP": "None"})
    existing = live(service({"clusterIP": "10.0.0.7"}))
    assert default_rebase(new, existing)["spec"]["clusterIP"] == "None"


def test_default_rebase_takes_metadata_from_live_but_labels_and_annotations_from_new():
    new = service({}, labels={"app": "web"}, annotations={"a": "new"})
    existing = live(
        service({}, labels={"app": "web", "added-by-cluster": "x"}, annotations={"a": "old", "b": "cluster"})
    )
    metadata = default_rebase(new, existing)["metadata"]
    assert metadata["resourceVersion"] == "42"
    assert metadata["uid"] == "u-1"
    assert metadata["labels"] == {"app": "web"}
    assert metadata["annotations"] == {"a": "new"}


def test_default_rebase_drops_live_labels_when_new_has_none():
    existing = live(service({}, labels={"added-by-cluster": "x"}))
    assert "labels" not in default_rebase(service({}), existing)["metadata"]


def test_copy_with_existing_source_takes_metadata_from_live():
    rules = parse_config(
        {
            "apiVersion": "kapp.k14s.io/v1alpha1",
            "kind": "Config",
            "rebaseRules": [
                {
                    "path": ["metadata"],
                    "type": "copy",
                    "sources": ["existing"],
                    "resourceMatchers": [{"allMatcher": {}}],
                }
            ],
        },
        "t",
    ).rebase_rules
    new = service({}, labels={"app": "web"})
    existing = live(service({}))
    assert rebase(new, existing, rules)["metadata"] == existing["metadata"]


def test_aggregated_cluster_role_rules_are_copied_from_live():
    new = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "agg"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]},
    }
    existing = live(new) | {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    assert default_rebase(new, existing)["rules"] == existing["rules"]


def test_plain_cluster_role_rules_come_from_new():
    new = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "r"},
        "rules": [],
    }
    existing = live(new) | {"rules": [{"verbs": ["get"]}]}
    assert default_rebase(new, existing)["rules"] == []


def service_account(**fields):
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "sa", "namespace": "ns"},
        **fields,
    }


def test_service_account_rule_appends_the_live_token_secrets():
    new = service_account(secrets=[{"name": "mine"}])
    existing = live(
        service_account(
            secrets=[
                {"name": "mine"},
                {"name": "sa-token-old"},
                {"name": "sa-token-abcde"},
                {"name": "sa-dockercfg-x"},
            ],
            imagePullSecrets=[{"name": "sa-dockercfg-y"}, {"name": "other"}],
        )
    )
    result = default_rebase(new, existing)
    assert result["secrets"] == [{"name": "mine"}, {"name": "sa-token-abcde"}, {"name": "sa-dockercfg-x"}]
    assert result["imagePullSecrets"] == [{"name": "sa-dockercfg-y"}]


def test_service_account_rule_does_not_duplicate_a_listed_secret():
    new = service_account(secrets=[{"name": "sa-token-abcde"}])
    existing = live(service_account(secrets=[{"name": "sa-token-abcde"}]))
    assert default_rebase(new, existing)["secrets"] == [{"name": "sa-token-abcde"}]


def test_service_account_rule_changes_nothing_without_token_secrets():
    new = service_account()
    existing = live(service_account(secrets=[{"name": "other-token-x"}]))
    assert "secrets" not in default_rebase(new, existing)


def _ytt_rules(overlay: str) -> list:
    return parse_config(
        {
            "apiVersion": "kapp.k14s.io/v1alpha1",
            "kind": "Config",
            "rebaseRules": [
                {"ytt": {"overlayContractV1": {"overlay.yml": overlay}}, "resourceMatchers": [{"allMatcher": {}}]}
            ],
        },
        "t",
    ).rebase_rules


KEEP_LIVE_LABEL = """#@ load("@ytt:data", "data")
#@ load("@ytt:overlay", "overlay")
#@overlay/match by=overlay.all
---
metadata:
  #@overlay/match missing_ok=True
  labels:
    #@overlay/match missing_ok=True
    kept: #@ data.values.existing.metadata.labels.kept
"""


def test_a_ytt_rebase_rule_without_ytt_fails_naming_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("KAPPLY_YTT", str(tmp_path / "no-ytt"))
    with pytest.raises(ConfigError, match="needs ytt: ytt is not available: \\$KAPPLY_YTT names"):
        rebase(service({}), live(service({})), _ytt_rules(KEEP_LIVE_LABEL))


def test_a_ytt_rebase_rule_runs_through_ytt_with_new_existing_and_current(monkeypatch):
    monkeypatch.setenv("KAPPLY_YTT", str(external_tool("ytt", "KAPPLY_YTT")))
    existing = live(service({}))
    existing["metadata"]["labels"] = {"kept": "from-live"}
    result = rebase(service({}), existing, _ytt_rules(KEEP_LIVE_LABEL))
    assert result["metadata"]["labels"]["kept"] == "from-live"


def test_the_default_service_account_overlay_gives_the_same_through_ytt_as_natively(monkeypatch):
    monkeypatch.setenv("KAPPLY_YTT", str(external_tool("ytt", "KAPPLY_YTT")))
    new = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}
    existing = {
        **new,
        "secrets": [{"name": "sa-token-1"}, {"name": "sa-dockercfg-2"}],
        "imagePullSecrets": [{"name": "sa-dockercfg-2"}],
    }
    native = recognise_overlay(SERVICE_ACCOUNT_SECRETS_OVERLAY)
    through_ytt = YttOverlay(SERVICE_ACCOUNT_SECRETS_OVERLAY, native=None)
    assert native.native is not None
    assert through_ytt.apply(new, new, existing) == native.apply(new, new, existing)


def test_secretgen_rule_prefers_live_values():
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "pull", "annotations": {"secretgen.carvel.dev/image-pull-secret": ""}},
        "data": {".dockerconfigjson": "e30="},
    }
    existing = live(secret)
    existing["data"] = {".dockerconfigjson": "eyJhdXRocyI6e319"}
    assert default_rebase(secret, existing)["data"][".dockerconfigjson"] == "eyJhdXRocyI6e319"


def test_rebase_never_mutates_its_inputs():
    new = service({}, labels={"app": "web"})
    existing = live(service({"clusterIP": "10.0.0.7"}, labels={"x": "y"}))
    before = copy.deepcopy((new, existing))
    result = default_rebase(new, existing)
    result_before = copy.deepcopy(result)
    assert (new, existing) == before
    assert result == result_before


def deployment(**annotations):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "annotations": annotations},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}},
        },
    }


def test_ownership_labels_reach_the_pod_template_of_a_deployment():
    result = add_ownership_labels(deployment(), APP_LABELS, default_config().ownership_label_rules)
    assert result["metadata"]["labels"] == APP_LABELS
    assert result["spec"]["template"]["metadata"]["labels"] == {"app": "web", **APP_LABELS}


def test_disable_default_ownership_label_rules_annotation_keeps_pod_template_unlabeled():
    resource = deployment(**{"kapp.k14s.io/disable-default-ownership-label-rules": ""})
    result = add_ownership_labels(resource, APP_LABELS, default_config().ownership_label_rules)
    assert result["metadata"]["labels"] == APP_LABELS
    assert result["spec"]["template"]["metadata"]["labels"] == {"app": "web"}


def test_label_scoping_adds_app_label_to_service_selector_only_if_present():
    rules = default_config().label_scoping_rules
    app_label = {"kapp.k14s.io/app": "1700000000"}
    with_selector = add_label_scoping(service({"selector": {"app": "web"}}), app_label, rules)
    without_selector = add_label_scoping(service({"type": "ExternalName"}), app_label, rules)
    assert with_selector["spec"]["selector"] == {"app": "web", **app_label}
    assert "selector" not in without_selector["spec"]


def test_label_scoping_default_rules_can_be_skipped():
    rules = default_config().label_scoping_rules
    resource = service({"selector": {"app": "web"}})
    assert add_label_scoping(resource, {"k": "v"}, rules, include_default=False) is resource


def test_label_scoping_is_disabled_by_either_annotation():
    rules = default_config().label_scoping_rules
    for annotation in (
        "kapp.k14s.io/disable-label-scoping",
        "kapp.k14s.io/disable-default-label-scoping-rules",
    ):
        resource = deployment(**{annotation: ""})
        assert add_label_scoping(resource, {"k": "v"}, rules) is resource


def test_remove_fields_drops_status_and_revision_annotation():
    config = default_config()
    resource = deployment(**{"deployment.kubernetes.io/revision": "3", "keep": "me"}) | {"status": {"replicas": 1}}
    without_status = remove_fields(resource, config.diff_against_existing_field_exclusion_rules)
    assert "status" not in without_status
    without_revision = remove_fields(resource, config.diff_against_last_applied_field_exclusion_rules)
    assert without_revision["metadata"]["annotations"] == {"keep": "me"}


def secret(data=None, string_data=None):
    resource = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    if data is not None:
        resource["data"] = data
    if string_data is not None:
        resource["stringData"] = string_data
    return resource


def test_masking_numbers_values_stably_in_sorted_key_order():
    rules = default_config().diff_mask_rules
    counter = MaskCounter()
    first = mask(secret({"b": "same", "a": "other"}, {"c": "same"}), rules, counter)
    assert first["data"] == {"b": "<-- value not shown (#2)", "a": "<-- value not shown (#1)"}
    assert first["stringData"] == {"c": "<-- value not shown (#2)"}
    second = mask(secret({"z": "other", "y": "new"}), rules, counter)
    assert second["data"] == {"z": "<-- value not shown (#1)", "y": "<-- value not shown (#3)"}


def test_masking_leaves_other_kinds_alone():
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    assert mask(config_map, default_config().diff_mask_rules, MaskCounter()) is config_map


def test_rule_errors_name_the_path_and_resource():
    resource = service("not-a-map")
    with pytest.raises(ConfigError, match=r"Path 'spec,selector' on resource 'service/web \(v1\) namespace: ns'"):
        add_label_scoping(resource, {"k": "v"}, default_config().label_scoping_rules)


def test_a_rule_whose_regex_part_may_reach_kind_lets_later_rules_match_the_new_kind():
    new = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "foo-b": "2"}}
    existing = {**new, "kind": "Widget"}
    doc = {
        "apiVersion": "kapp.k14s.io/v1alpha1",
        "kind": "Config",
        "rebaseRules": [
            {
                "path": [{"regex": "^ki"}],
                "type": "copy",
                "sources": ["existing"],
                "resourceMatchers": [{"allMatcher": {}}],
            },
            {
                "path": ["data", {"regex": "^foo-"}],
                "type": "remove",
                "resourceMatchers": [{"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "Widget"}}],
            },
        ],
    }
    rules = parse_config(doc, "t").rebase_rules
    assert rebase(new, existing, rules) == {**existing, "data": {"a": "1"}}
