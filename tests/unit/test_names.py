"""Names that reach a URL are checked by Kubernetes' rules and escaped, so no manifest reaches another object."""

from __future__ import annotations

import pytest

from kapply.errors import ManifestError
from kapply.objects import Document
from kapply.resources.cluster import ResourceType
from kapply.resources.names import check_names, name_problems, namespace_problems, path_segment_problems

CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True, frozenset())


@pytest.mark.parametrize(
    ("name", "problems"),
    [
        ("..", ["may not be '..'"]),
        (".", ["may not be '.'"]),
        ("../../other/configmaps/victim", ["may not contain '/'"]),
        ("a%2Fb", ["may not contain '%'"]),
        ("a/b%c", ["may not contain '/'", "may not contain '%'"]),
        ("system:controller:x", []),
    ],
)
def test_path_segments_follow_kubernetes_rules(name, problems):
    assert path_segment_problems(name) == problems


def test_names_must_be_present_and_not_too_long():
    assert name_problems("") == ["may not be empty"]
    assert name_problems("x" * 253) == []
    assert name_problems("x" * 254) == ["must be no more than 253 characters"]


@pytest.mark.parametrize("namespace", ["..", "a/b", "Upper", "-x", "x" * 64, "a_b"])
def test_namespaces_must_be_dns_labels(namespace):
    assert namespace_problems(namespace)


def test_the_client_refuses_to_build_a_path_from_a_crafted_name():
    with pytest.raises(ManifestError, match=r"invalid resource name \"../../other/configmaps/victim\""):
        CONFIGMAPS.path("ns", "../../other/configmaps/victim")
    with pytest.raises(ManifestError, match=r"invalid namespace \"..\""):
        CONFIGMAPS.path("..", "x")
    assert CONFIGMAPS.path("ns", "system:a@b c") == "/api/v1/namespaces/ns/configmaps/system:a@b%20c"


def test_invalid_names_in_manifests_are_refused_naming_the_resource_and_origin():
    docs = [
        Document({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a/b", "namespace": "ns"}}, "file 'x'"),
        Document(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok", "namespace": "Bad"}}, "resource 2"
        ),
        Document({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "../", "namespace": "n"}}, "o"),
    ]
    with pytest.raises(ManifestError) as refused:
        check_names(docs)
    message = str(refused.value)
    assert "Invalid name on resource 'configmap/a/b (v1) namespace: ns': may not contain '/' (file 'x')" in message
    assert "Invalid namespace 'Bad' on resource 'configmap/ok (v1) namespace: Bad'" in message
    assert "Invalid name on resource 'configmap/../* (v1) namespace: n': may not contain '/'" in message
