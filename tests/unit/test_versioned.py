"""Versioned resources: names, rewritten references, and which old versions stay."""

from __future__ import annotations

import pytest

from kapply.diff import versioned
from kapply.diff.change import Op, calculate
from kapply.errors import ManifestError
from kapply.objects import Document, ResourceKey

VERSIONED = {"kapp.k14s.io/versioned": ""}


def config_map(name: str, data: dict, annotations: dict | None = None) -> dict:
    meta = {"name": name, "namespace": "ns", "annotations": {**VERSIONED, **(annotations or {})}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def deployment(config_name: str) -> dict:
    volume = {"name": "cfg", "configMap": {"name": config_name}}
    spec = {"template": {"spec": {"containers": [{"name": "c", "image": "x"}], "volumes": [volume]}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"}, "spec": spec}


def live(obj: dict) -> dict:
    """As listed from the cluster: with kapp's identity, so it is the app's own, not transient."""
    key = f"ns//ConfigMap/{obj['metadata']['name']}"
    meta = {
        **obj["metadata"],
        "annotations": {**obj["metadata"]["annotations"], "kapp.k14s.io/identity": f"v1;{key};v1"},
    }
    return {**obj, "metadata": meta}


def names(result: versioned.Versioned) -> list[str]:
    return [d.obj["metadata"]["name"] for d in result.desired]


def test_a_first_version_is_ver_1_and_references_follow_it(config):
    result = versioned.resolve(
        [Document(config_map("cfg", {"a": "1"}), "o"), Document(deployment("cfg"), "o")], [], config
    )
    assert names(result) == ["cfg-ver-1", "web"]
    assert result.desired[1].obj["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"] == "cfg-ver-1"


def test_an_unchanged_resource_keeps_its_version_and_a_changed_one_gets_the_next(config):
    existing = [live(config_map("cfg-ver-1", {"a": "1"})), live(config_map("cfg-ver-2", {"a": "2"}))]
    same = versioned.resolve([Document(config_map("cfg", {"a": "2"}), "o")], existing, config)
    assert names(same) == ["cfg-ver-2"] and ResourceKey("ns", "", "ConfigMap", "cfg-ver-2") in same.keep
    changed = versioned.resolve([Document(config_map("cfg", {"a": "3"}), "o")], existing, config)
    assert names(changed) == ["cfg-ver-3"]
    assert changed.previous[ResourceKey("ns", "", "ConfigMap", "cfg-ver-3")]["metadata"]["name"] == "cfg-ver-2"


def test_the_newest_num_versions_of_the_versions_existing_before_the_deploy_are_kept(config):
    """kapp's count: a changing deploy keeps `num-versions` old versions beside the new one (three live with "2"); the
    next deploy, unchanged, trims the oldest."""
    annotations = {"kapp.k14s.io/num-versions": "2"}
    existing = [live(config_map(f"cfg-ver-{n}", {"a": str(n)}, annotations)) for n in range(1, 5)]
    changed = versioned.resolve([Document(config_map("cfg", {"a": "new"}, annotations), "o")], existing, config)
    assert names(changed) == ["cfg-ver-5"]
    assert changed.keep == {ResourceKey("ns", "", "ConfigMap", f"cfg-ver-{n}") for n in (3, 4)}
    same = versioned.resolve([Document(config_map("cfg", {"a": "4"}, annotations), "o")], existing, config)
    assert names(same) == ["cfg-ver-4"]
    assert same.keep == {ResourceKey("ns", "", "ConfigMap", f"cfg-ver-{n}") for n in (3, 4)}


def test_keep_original_also_deploys_the_unversioned_copy(config):
    result = versioned.resolve(
        [Document(config_map("cfg", {"a": "1"}, {"kapp.k14s.io/versioned-keep-original": ""}), "o")], [], config
    )
    assert names(result) == ["cfg", "cfg-ver-1"]


def test_an_explicit_reference_annotation_is_rewritten(config):
    ref = "apiVersion: v1\nkind: ConfigMap\nname: cfg\n"
    user = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "ns", "annotations": {"kapp.k14s.io/versioned-explicit-ref": ref}},
    }
    result = versioned.resolve([Document(config_map("cfg", {"a": "1"}), "o"), Document(user, "o")], [], config)
    assert "name: cfg-ver-1" in result.desired[1].obj["metadata"]["annotations"]["kapp.k14s.io/versioned-explicit-ref"]


def test_a_new_versions_create_is_shown_as_its_diff_against_the_previous(config):
    previous = live(config_map("cfg-ver-1", {"a": "1"}))
    result = versioned.resolve([Document(config_map("cfg", {"a": "2"}), "o")], [previous], config)
    new = result.desired[0].obj
    change = versioned.against_previous(calculate(new, None, config), previous, config)
    assert change.op is Op.ADD and change.describe() == "configmap/cfg-ver-2 (v1) namespace: ns"
    assert change.left is not None and change.left["data"] == {"a": "1"}
    # as kapp shows it: the update of the previous version it stands for, whose name (and all the metadata the server
    # keeps) the new side takes by the rebase, so that only what the user changed shows
    assert change.right is not None and change.right["data"] == {"a": "2"}
    assert change.right["metadata"] == change.left["metadata"] and change.right["metadata"]["name"] == "cfg-ver-1"


@pytest.mark.parametrize(("value", "message"), [("x", "to be an integer"), ("0", "to be a >= 1")])
def test_num_versions_must_be_a_positive_integer(config, value, message):
    with pytest.raises(ManifestError, match=message):
        versioned.resolve([Document(config_map("cfg", {}, {"kapp.k14s.io/num-versions": value}), "o")], [], config)
