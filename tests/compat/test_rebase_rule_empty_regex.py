"""A rebase rule whose path has an empty regex part (`{regex: }`): kapp accepts it, then panics when the rule first
has something to rebase (a goroutine dump, exit status 2, which is also kapp's "no pending changes" status); kapply
refuses the Config up front on every deploy, the first included, with one clear error (exit 1). A known difference
(docs/compatibility.md)."""

from __future__ import annotations

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat

WITH_ANNOTATION = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: game-demo, annotations: {foo1: bar1}}\n"
RULE = """
---
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
rebaseRules:
- path: [metadata, annotations, {regex: }]
  type: copy
  sources: [new, existing]
  resourceMatchers:
  - apiVersionKindMatcher: {apiVersion: v1, kind: ConfigMap}
"""
WITHOUT_ANNOTATION = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: game-demo}\n" + RULE


def test_kapp_panics_where_kapply_refuses_the_config(both: Harness):
    for result in both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=WITH_ANNOTATION):
        assert result.code == 0, result.output
    kapp, kapply = both.run(
        "deploy", "-a", "app", "-n", "{ns}", "-f", "-", "--diff-run", "--diff-exit-status", input=WITHOUT_ANNOTATION
    )
    assert kapp.code == 2 and "panic: Unknown path part" in kapp.stderr and "goroutine" in kapp.stderr
    assert kapply.code == 1 and "Traceback" not in kapply.stderr
    assert (
        kapply.stderr.count("Error:") == 1
        and "{regex: R}" in kapply.stderr
        and "rebaseRules[0].path[2]" in (kapply.stderr)
    )


def test_kapp_accepts_it_on_a_first_deploy_where_kapply_refuses_it(both: Harness):
    kapp, kapply = both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=WITHOUT_ANNOTATION)
    assert kapp.code == 0, kapp.output
    assert kapply.code == 1 and "rebaseRules[0].path[2]" in kapply.stderr
    assert both.objects("kapply") == {}
