"""`kapp.k14s.io/noop` added by a ytt rebase rule: kapp decides a change's op on the rebased resource, so a rule
that adds the annotation makes the change a noop (nothing applied, nothing shown), as the annotation written in the
manifest does."""

from __future__ import annotations

import pytest

from tests.compat.harness import TOOLS, Harness
from tests.e2e.harness import external_tool

pytestmark = pytest.mark.compat

NOOP_RULE = """---
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
rebaseRules:
- ytt:
    overlayContractV1:
      overlay.yml: |
        #@ load("@ytt:overlay", "overlay")
        #@overlay/match by=overlay.all
        ---
        metadata:
          #@overlay/match missing_ok=True
          annotations:
            #@overlay/match missing_ok=True
            kapp.k14s.io/noop: ""
  resourceMatchers:
  - apiVersionKindMatcher: {apiVersion: v1, kind: ConfigMap}
"""

CONFIG_MAP = """apiVersion: v1
kind: ConfigMap
metadata: {name: nbcm}
data: {a: "VALUE"}
"""


@pytest.fixture(autouse=True)
def ytt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAPPLY_YTT", str(external_tool("ytt", "KAPPLY_YTT")))


def test_a_noop_annotation_a_ytt_rebase_rule_adds_makes_the_change_a_noop(both: Harness):
    deploy = ("deploy", "-a", "nbapp", "-n", "{ns}", "-f", "-")
    for result in both.run(*deploy, "-y", input=CONFIG_MAP.replace("VALUE", "1")):
        assert result.code == 0, result.output
    changed = CONFIG_MAP.replace("VALUE", "2") + NOOP_RULE
    plan = both.run(*deploy, "--diff-run", "--diff-exit-status", "-c", input=changed)
    both.same(plan)
    assert plan.kapply.code == 2, plan.kapply.output
    applied = both.run(*deploy, "-y", input=changed)
    both.same(applied)
    assert "Op:      0 create, 0 delete, 0 update, 0 noop, 0 exists" in applied.kapply.stdout
    for tool in TOOLS:
        assert both.objects(tool)["ConfigMap/nbcm"]["data"] == {"a": "1"}
    both.same_objects()


PRECIOUS = """apiVersion: v1
kind: ConfigMap
metadata:
  name: precious-resource
  annotations: {kapp.k14s.io/create-strategy: fallback-on-update-or-noop}
data: {owner: "OWNER"}
"""


def test_a_rebase_rule_s_noop_keeps_another_app_s_object_where_it_is(both: Harness):
    """Found by name and taken over (`--dangerous-override-ownership-of-existing-resources`), the object is still
    left alone: it stays the first app's."""
    for result in both.run("deploy", "-a", "owner1", "-n", "{ns}", "-f", "-", "-y", input=PRECIOUS):
        assert result.code == 0, result.output
    takeover = both.run(
        "deploy",
        "-a",
        "owner2",
        "-n",
        "{ns}",
        "-f",
        "-",
        "-y",
        "--dangerous-override-ownership-of-existing-resources",
        input=PRECIOUS.replace("OWNER", "two") + NOOP_RULE,
    )
    both.same(takeover)
    for app in ("owner1", "owner2"):
        both.same(both.run("inspect", "-a", app, "-n", "{ns}"), exact=False)
    assert "precious-resource" in both.run_one("kapply", ("inspect", "-a", "owner1", "-n", "{ns}")).stdout
    both.same_objects()
