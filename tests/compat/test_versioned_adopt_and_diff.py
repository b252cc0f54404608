"""Versioned resources (`kapp.k14s.io/versioned`) against kapp: an unmanaged object of the resource's own name is
found by that name and deleted as an older "version" when `-ver-1` is created; the diff of a new version is the
update of the previous one it stands for, with none of the previous version's server-kept metadata."""

from __future__ import annotations

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap

from tests.compat.harness import TOOLS, Harness

pytestmark = pytest.mark.compat

VERSIONED = "kapp.k14s.io/versioned"

ADOPT = """apiVersion: v1
kind: ConfigMap
metadata:
  name: config
  annotations:
    kapp.k14s.io/versioned: ""
data:
  key1: VALUE
"""

SECRET = """---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  annotations:
    kapp.k14s.io/versioned: ""
stringData:
  password: VALUE
"""


def test_an_unmanaged_object_of_a_versioned_resource_s_name_is_deleted_as_kapp_does(both: Harness):
    kube = Client(both.kubeconfig_path())
    for tool in TOOLS:  # made by another actor: no kapp label, no kapp annotation but `versioned`
        obj = {"metadata": {"name": "config", "annotations": {VERSIONED: ""}}, "data": {"key1": "val1"}}
        kube.create(ConfigMap.from_dict(obj), namespace=both.ns[tool])
    deploy = ("deploy", "-a", "adopt", "-n", "{ns}", "-f", "-")
    plan = both.run(*deploy, "--diff-run", input=ADOPT.replace("VALUE", "val1"))
    both.same(plan, exact=False)
    assert "Op:      1 create, 1 delete, 0 update, 0 noop, 0 exists" in plan.kapply.stdout
    applied = both.run(*deploy, "-y", input=ADOPT.replace("VALUE", "val1"))
    both.same(applied, exact=False)
    assert applied.kapply.code == 0, applied.kapply.output
    assert sorted(both.objects("kapply")) == ["ConfigMap/adopt", "ConfigMap/adopt-change-1", "ConfigMap/config-ver-1"]
    both.same_objects()
    inspect = both.run("inspect", "-a", "adopt", "-n", "{ns}")
    both.same(inspect, exact=False)
    again = both.run(*deploy, "--diff-run", "--diff-exit-status", input=ADOPT.replace("VALUE", "val1"))
    both.same(again, exact=False)
    assert again.kapply.code == 2, again.kapply.output


@pytest.mark.parametrize("manifest", [ADOPT, ADOPT + SECRET], ids=["configmap", "configmap-and-secret"])
def test_the_diff_of_a_new_version_is_the_update_of_the_previous_one(both: Harness, manifest: str):
    deploy = ("deploy", "-a", "versions", "-n", "{ns}", "-f", "-")
    for result in both.run(*deploy, "-y", input=manifest.replace("VALUE", "val1")):
        assert result.code == 0, result.output
    for mask in ("--diff-mask=false", "--diff-mask=true"):
        pair = both.run(*deploy, "--diff-run", "-c", mask, input=manifest.replace("VALUE", "val2"))
        both.same(pair)
        assert "@@ create configmap/config-ver-2 (v1)" in pair.kapply.stdout
        assert "resourceVersion" not in pair.kapply.stdout and "name: config-ver" not in pair.kapply.stdout
    applied = both.run(*deploy, "-y", "-c", input=manifest.replace("VALUE", "val2"))
    both.same(applied, exact=False)
    both.same_objects()
