"""`{regex: ...}` path parts outside copy rebase rules (issue 30, kapp difference 2): kapp applies them in `remove`
rebase rules and in both kinds of diff field exclusion rules, with its FieldRemoveMod: a regex part takes every key
of the map it meets that it matches (searched, like Go's MatchString), and a key or regex part that meets anything but
a map (a string here) removes nothing. kapply refused the Config (`regex path parts are only supported by copy rebase
rules`, exit 1) and failed on a key under a non-map (`Unexpected non-map found`)."""

from __future__ import annotations

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap
from lightkube.types import PatchType

from tests.compat.harness import TOOLS, Harness

pytestmark = pytest.mark.compat

MANIFEST = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: regex-rules
  labels: {{foo-l: "{v}", keep: "{v}"}}
  annotations: {{foo-a: "{a}", xfoo-b: "{v}", bar: "{v}"}}
data: {{a: "{v}", b: "{v}"}}
"""
MATCHER = "  resourceMatchers: [{apiVersionKindMatcher: {apiVersion: v1, kind: ConfigMap}}]\n"
CONFIG = "---\napiVersion: kapp.k14s.io/v1alpha1\nkind: Config\n"
REMOVE_RULES = (
    CONFIG
    + "rebaseRules:\n"
    + '- paths: [[metadata, {regex: "^(labels|annotations)$"}, {regex: "foo-"}], [data, {regex: "."}, x]]\n'
    + "  type: remove\n"
    + MATCHER
)
EXISTING_EXCLUSION = (
    CONFIG
    + "diffAgainstExistingFieldExclusionRules:\n"
    + '- path: [metadata, annotations, {regex: "^foo-"}]\n'
    + MATCHER
)
LAST_APPLIED_EXCLUSION = (
    CONFIG
    + "diffAgainstLastAppliedFieldExclusionRules:\n"
    + '- path: [metadata, {regex: "^annotations$"}, {regex: "^foo-"}]\n'
    + MATCHER
)


def manifest(v: str, a: str | None = None) -> str:
    return MANIFEST.format(v=v, a=a or v)


def deploy(both: Harness, text: str, *flags: str):  # noqa: ANN201
    return both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-c", *flags, input=text)


def created(both: Harness, config: str) -> None:
    for result in deploy(both, manifest("1") + config, "-y"):
        assert result.code == 0, result.output


def test_a_remove_rebase_rule_removes_the_keys_its_regex_parts_match(both: Harness):
    created(both, REMOVE_RULES)
    pair = deploy(both, manifest("2") + REMOVE_RULES, "-y")
    both.same(pair, exact=False)
    assert pair.kapply.code == 0, pair.kapply.output
    both.same_objects()
    annotations = both.objects("kapply")["ConfigMap/regex-rules"]["metadata"]["annotations"]
    assert "bar" in annotations and not any("foo-" in key for key in annotations)


def test_a_diff_against_existing_exclusion_rule_with_a_regex_part_hides_the_keys_it_matches(both: Harness):
    created(both, EXISTING_EXCLUSION)
    pair = deploy(both, manifest("1", a="2") + EXISTING_EXCLUSION, "--diff-run", "--diff-exit-status")
    both.same(pair, exact=False)
    assert pair.kapply.code == 2, pair.kapply.output


def test_a_diff_against_last_applied_exclusion_rule_with_a_regex_part_keeps_the_last_applied_basis(
    both: Harness, kube: Client
):
    created(both, LAST_APPLIED_EXCLUSION)
    for tool in TOOLS:  # someone annotates the live objects: a field the rule leaves out of the check
        patch = {"metadata": {"annotations": {"foo-z": "9"}}}
        kube.patch(ConfigMap, "regex-rules", patch, namespace=both.ns[tool], patch_type=PatchType.MERGE)
    pair = deploy(both, manifest("1") + LAST_APPLIED_EXCLUSION, "--diff-run", "--diff-exit-status")
    both.same(pair, exact=False)
    assert pair.kapply.code == 2, pair.kapply.output
