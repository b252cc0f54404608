"""`kapp.k14s.io/num-versions` counted as kapp counts it (issue 30): of the versions that exist before a deploy, the
newest `num-versions` are kept, so a changing deploy leaves that many old versions beside the new one and the next
deploy, changed or not, trims the oldest (an unchanged deploy then has a pending change: `--diff-exit-status` 3)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.compat.harness import Harness, Pair

pytestmark = pytest.mark.compat

CONFIG = """apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  annotations:
    kapp.k14s.io/versioned: ""
    kapp.k14s.io/num-versions: "1"
data:
  a: "VALUE"
"""


def _managed_alike(pair: Pair) -> Pair:
    """The diff of a delete shows the deleted object's field manager: the tool's own name (a known difference)."""
    return Pair(pair.kapp, replace(pair.kapply, stdout=pair.kapply.stdout.replace("manager: kapply", "manager: kapp")))


def test_a_changing_deploy_keeps_num_versions_old_versions_and_the_next_deploy_trims_them(both: Harness):
    deploy = ("deploy", "-a", "numvers", "-n", "{ns}", "-f", "-")
    for result in both.run(*deploy, "-y", input=CONFIG.replace("VALUE", "1")):
        assert result.code == 0, result.output
    changed = both.run(*deploy, "-y", "-c", input=CONFIG.replace("VALUE", "2"))
    both.same(changed, exact=False)
    assert sorted(n for n in both.objects("kapply") if n.startswith("ConfigMap/cfg")) == [
        "ConfigMap/cfg-ver-1",
        "ConfigMap/cfg-ver-2",
    ]
    both.same_objects()
    plan = both.run(*deploy, "-c", "--diff-run", "--diff-exit-status", input=CONFIG.replace("VALUE", "2"))
    both.same(_managed_alike(plan), exact=False)
    assert plan.kapply.code == 3, plan.kapply.output
    assert "@@ delete configmap/cfg-ver-1 (v1)" in plan.kapply.stdout
    trimmed = both.run(*deploy, "-y", input=CONFIG.replace("VALUE", "2"))
    both.same(trimmed, exact=False)
    both.same_objects()
