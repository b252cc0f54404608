"""The data values a ytt rebase rule (`overlayContractV1`) gets, shaped as kapp gives them: `new`, `existing` and
`_current` with every map's keys sorted (kapp marshals them as JSON does), and `existing` as kapp reads objects,
without its `kapp.k14s.io/identity` annotation. A rule that serialises them (kapp's own e2e example,
TestYttRebaseRule_OverlayContractV1) writes the same bytes with either tool."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.compat.harness import TOOLS, Harness
from tests.e2e.harness import external_tool

pytestmark = pytest.mark.compat

MANIFEST = """---
apiVersion: v1
kind: ConfigMap
metadata: {name: test-cm}
data: {key1: val1}
---
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
rebaseRules:
- ytt:
    overlayContractV1:
      overlay.yml: |
        #@ load("@ytt:overlay", "overlay")
        #@overlay/match by=overlay.all
        ---
        data:
          #@overlay/match missing_ok=True
          changed_in_rebase_rule: "1"
  resourceMatchers:
  - allMatcher: {}
- ytt:
    overlayContractV1:
      overlay.yml: |
        #@ load("@ytt:data", "data")
        #@ load("@ytt:yaml", "yaml")
        #@ load("@ytt:overlay", "overlay")
        #@overlay/match by=overlay.all
        ---
        data:
          changed_in_rebase_rule: "2"
          #@ if not hasattr(data.values.existing.data, "values"):
          #@overlay/match missing_ok=True
          values: #@ yaml.encode(data.values)
          #@ else:
          #@overlay/match missing_ok=True
          values: #@ data.values.existing.data.values
          #@ end
  resourceMatchers:
  - allMatcher: {}
"""


@pytest.fixture(autouse=True)
def ytt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAPPLY_YTT", str(external_tool("ytt", "KAPPLY_YTT")))


def _seen(both: Harness, tool: str) -> str:
    """The serialised data values as written, in their order, without managedFields (whose manager is the tool's
    name) and `original-diff-md5` (a fingerprint of what this very rule wrote, namespace and uid included), and with
    what differs from run to run normalised."""
    values = yaml.safe_load(both.objects(tool)["ConfigMap/test-cm"]["data"]["values"])

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: clean(v) for k, v in value.items() if k not in ("managedFields", "kapp.k14s.io/original-diff-md5")
            }
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return both.normalize(json.dumps(clean(values), indent=1, default=str), tool)


def test_a_ytt_rebase_rule_gets_its_data_values_shaped_as_kapp_gives_them(both: Harness):
    deploy = ("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y")
    for _ in range(3):  # created; then the rule records its data values; then it keeps them
        for result in both.run(*deploy, input=MANIFEST):
            assert result.code == 0, result.output
    kapp, kapply = (_seen(both, tool) for tool in TOOLS)
    assert list(json.loads(kapply)) == ["_current", "existing", "new"]
    assert "kapp.k14s.io/identity" not in kapply
    assert kapply == kapp
    both.same(both.run(*deploy[:-1], "--diff-run", "--diff-exit-status", input=MANIFEST))
