"""kapp's client-side allowing (`--allow-check`): which placed resources are refused, and why."""

from __future__ import annotations

import pytest

from kapply.errors import ManifestError
from kapply.objects import Document
from kapply.resources.allow import AllowRules, check, violations
from kapply.resources.preparation import Placement


def doc(name: str, namespace: str = "", kind: str = "ConfigMap") -> Document:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return Document({"apiVersion": "v1", "kind": kind, "metadata": meta}, f"file 'x.yml' doc {name}")


PLACEMENT = Placement("default-ns", "into-ns", {"from": "mapped-ns"})


def test_the_default_into_and_mapped_namespaces_are_always_allowed():
    docs = [doc("a", "default-ns"), doc("b", "into-ns"), doc("c", "mapped-ns")]
    assert violations(docs, AllowRules(), PLACEMENT) == []


def test_other_namespaces_and_cluster_level_resources_are_refused_in_input_order():
    docs = [doc("a", "elsewhere"), doc("ns", kind="Namespace"), doc("b", "allowed")]
    assert violations(docs, AllowRules(namespaces=("allowed",)), PLACEMENT) == [
        "Resource 'configmap/a (v1) namespace: elsewhere' is outside of allowed namespaces (file 'x.yml' doc a)",
        "Cluster level resource 'namespace/ns (v1) cluster' is not allowed (file 'x.yml' doc ns)",
    ]
    assert violations(docs, AllowRules(namespaces=("allowed", "elsewhere"), cluster=True), PLACEMENT) == []


def test_allow_all_namespaces_counts_only_without_allowed_namespaces():
    docs = [doc("a", "elsewhere")]
    assert violations(docs, AllowRules(all_namespaces=True), PLACEMENT) == []
    assert len(violations(docs, AllowRules(namespaces=("x",), all_namespaces=True), PLACEMENT)) == 1


def test_check_raises_kapps_validation_errors_and_nothing_without_rules():
    docs = [doc("a", "elsewhere")]
    check(docs, None, PLACEMENT)
    with pytest.raises(ManifestError, match=r"^Validation errors:\n- Resource 'configmap/a"):
        check(docs, AllowRules(), PLACEMENT)
