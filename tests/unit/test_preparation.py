"""Preparing the app's desired resources: validation, de-duplication, namespaces, nonce and ownership labels."""

from __future__ import annotations

import pytest

from kapply.errors import ManifestError
from kapply.objects import Document, association_value
from kapply.resources.preparation import Placement, prepare

APP = {"kapp.k14s.io/app": "123"}


def doc(obj: dict, origin: str = "file 'x.yml' doc 1") -> Document:
    return Document(obj, origin)


def configmap(name: str, namespace: str | None = None, **extra) -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, **extra}


def deployment() -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}},
        },
    }


def test_resources_are_labeled_for_the_app_including_pod_templates_and_selectors(discovery, config):
    (prepared,) = prepare([doc(deployment())], discovery, config, Placement("ns"), APP)
    obj = prepared.obj
    association = association_value(obj)
    assert obj["metadata"]["namespace"] == "ns"
    assert obj["metadata"]["labels"] == {**APP, "kapp.k14s.io/association": association}
    assert obj["spec"]["template"]["metadata"]["labels"] == {
        "app": "web",
        **APP,
        "kapp.k14s.io/association": association,
    }
    assert obj["spec"]["selector"]["matchLabels"] == {"app": "web", **APP}


def test_default_label_scoping_can_be_turned_off(discovery, config):
    (prepared,) = prepare([doc(deployment())], discovery, config, Placement("ns"), APP, default_label_scoping=False)
    assert prepared.obj["spec"]["selector"]["matchLabels"] == {"app": "web"}


def test_namespaces_come_from_the_resource_then_into_ns_then_map_ns(discovery, config):
    docs = [doc(configmap("a", "own")), doc(configmap("b"))]
    assert [d.obj["metadata"]["namespace"] for d in prepare(docs, discovery, config, Placement("dflt"), APP)] == [
        "own",
        "dflt",
    ]
    into = prepare(docs, discovery, config, Placement("dflt", into_namespace="forced"), APP)
    assert {d.obj["metadata"]["namespace"] for d in into} == {"forced"}
    mapped = prepare(docs, discovery, config, Placement("dflt", namespace_map={"own": "x", "dflt": "y"}), APP)
    assert [d.obj["metadata"]["namespace"] for d in mapped] == ["x", "y"]
    with pytest.raises(ManifestError, match="Expected to find mapped namespace for 'dflt'"):
        prepare(docs, discovery, config, Placement("dflt", namespace_map={"own": "x"}), APP)


def test_cluster_scoped_resources_lose_any_namespace(discovery, config):
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "r", "namespace": "x"},
    }
    (prepared,) = prepare([doc(role)], discovery, config, Placement("ns"), APP)
    assert "namespace" not in prepared.obj["metadata"]


def test_a_custom_resource_takes_its_scope_from_a_crd_in_the_same_deploy(discovery, config):
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.example.com"},
        "spec": {"group": "example.com", "names": {"kind": "CronTab"}, "scope": "Namespaced"},
    }
    cr = {"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "c"}}
    prepared = prepare([doc(crd), doc(cr)], discovery, config, Placement("ns"), APP)
    assert prepared[1].obj["metadata"]["namespace"] == "ns"


def test_identical_duplicates_are_one_and_differing_ones_an_error(discovery, config):
    same = prepare([doc(configmap("a")), doc(configmap("a"), "other")], discovery, config, Placement("ns"), APP)
    assert len(same) == 1
    with pytest.raises(ManifestError, match=r"Found resource 'configmap/a \(v1\) namespace: ns' multiple times"):
        prepare(
            [doc(configmap("a", "ns")), doc(configmap("a", "ns", data={"k": "v"}))],
            discovery,
            config,
            Placement("ns"),
            APP,
        )


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"kind": "ConfigMap", "metadata": {"name": "a"}}, "Expected 'apiVersion' on resource"),
        ({"apiVersion": "v1", "metadata": {"name": "a"}}, "Expected 'kind' on resource"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, "Expected 'metadata.name' on resource"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"}, "Expected 'metadata' on resource"),
        (configmap("a") | {"metadata": {"name": "a", "labels": {"kapp.k14s.io/is-app": ""}}}, "disallowed label"),
        ({"apiVersion": "example.com/v1", "kind": "Nope", "metadata": {"name": "a"}}, "Expected to find kind"),
    ],
)
def test_invalid_resources_are_refused_naming_the_resource_and_origin(discovery, config, obj, message):
    with pytest.raises(ManifestError, match=message) as failed:
        prepare([doc(obj)], discovery, config, Placement("ns"), APP)
    assert "file 'x.yml' doc 1" in str(failed.value)


def test_a_nonce_gets_a_fresh_value_and_must_start_empty(discovery, config):
    nonce = {"annotations": {"kapp.k14s.io/nonce": ""}}
    (first,) = prepare(
        [doc(configmap("a") | {"metadata": {"name": "a", **nonce}})], discovery, config, Placement("n"), APP
    )
    assert first.obj["metadata"]["annotations"]["kapp.k14s.io/nonce"].isdigit()
    with pytest.raises(ManifestError, match="to have value ''"):
        bad = {"metadata": {"name": "a", "annotations": {"kapp.k14s.io/nonce": "1"}}}
        prepare([doc(configmap("a") | bad)], discovery, config, Placement("n"), APP)


def test_a_namespaced_resource_without_any_namespace_is_an_error(discovery, config):
    with pytest.raises(ManifestError, match="is namespaced and no default namespace is set"):
        prepare([doc(configmap("a"))], discovery, config, Placement(""), APP)
