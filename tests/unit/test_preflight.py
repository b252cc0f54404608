"""The pure parts of kapp's preflight checks: the flag's value, RBAC rules as single permissions, how Go names group
versions, and the CRD upgrade safety rules."""

from __future__ import annotations

import pytest

from kapply.apply.preflight import Attributes, _gvk, breakdown, crd_violations, parse
from kapply.errors import KapplyError


def test_the_flag_value_names_known_checks():
    assert parse("") is None
    assert parse("CRDUpgradeSafety,PermissionValidation") == ("PermissionValidation", "CRDUpgradeSafety")
    with pytest.raises(KapplyError) as failure:
        parse("PermissionValidation,Foo")
    assert str(failure.value) == (
        'invalid argument "PermissionValidation,Foo" for "--preflight" flag: unknown preflight check "Foo" specified'
    )


def test_a_rule_breaks_down_into_single_permissions_in_kubernetes_order():
    rule = {"apiGroups": ["", "apps"], "resources": ["pods"], "verbs": ["get", "list"], "resourceNames": ["a"]}
    assert [(a.group, a.resource, a.verb, a.name) for a in breakdown(rule)] == [
        ("", "pods", "get", "a"),
        ("", "pods", "list", "a"),
        ("apps", "pods", "get", "a"),
        ("apps", "pods", "list", "a"),
    ]
    urls = breakdown({"nonResourceURLs": ["/healthz"], "verbs": ["get"]})
    assert urls == [Attributes("get", non_resource_url="/healthz")]
    assert urls[0].spec() == {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}
    assert breakdown("not a rule") == []


def test_group_versions_read_as_gos():
    assert Attributes("create", "", "v1", "resourcequotas").describe() == "/v1, Resource=resourcequotas"
    assert Attributes("get", "", "", "nodes").describe() == "/, Resource=nodes"
    assert (
        _gvk({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role"})
        == "rbac.authorization.k8s.io/v1, Kind=Role"
    )


def crd(scope: str, *versions: str, stored: tuple[str, ...] = ()) -> dict[str, object]:
    return {
        "metadata": {"name": "widgets.x.dev"},
        "spec": {"scope": scope, "versions": [{"name": v} for v in versions]},
        "status": {"storedVersions": list(stored)},
    }


def test_crd_upgrades_may_not_change_scope_nor_drop_stored_versions():
    old = crd("Namespaced", "v1", "v2", stored=("v1", "v2"))
    assert crd_violations(old, crd("Namespaced", "v1", "v2", "v3")) == []
    assert crd_violations(old, crd("Cluster", "v2")) == [
        'CustomResourceDefinition widgets.x.dev failed upgrade safety validation. "NoScopeChange" validation failed: '
        'scope changed from "Namespaced" to "Cluster"',
        'CustomResourceDefinition widgets.x.dev failed upgrade safety validation. "NoStoredVersionRemoved" validation '
        'failed: stored version "v1" removed',
    ]
    assert crd_violations(crd("Namespaced", "v1"), crd("Namespaced", "v2")) == []  # nothing stored yet
