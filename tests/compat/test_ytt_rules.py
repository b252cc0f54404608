"""Config rules written in ytt (kapp embeds ytt; kapply runs the ytt binary `$KAPPLY_YTT` names): a rebase rule's
`overlayContractV1` and a wait rule's `funcContractV1`, compared with the real kapp."""

from __future__ import annotations

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap
from lightkube.types import PatchType

from tests.compat.harness import TOOLS, Harness, Pair
from tests.e2e.harness import external_tool

pytestmark = pytest.mark.compat

CONFIG_MAP = """apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello, ready: "STATE"}
"""

REBASE = """---
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
rebaseRules:
- resourceMatchers:
  - kindNamespaceNameMatcher: {kind: ConfigMap, namespace: NAMESPACE, name: settings}
  ytt:
    overlayContractV1:
      overlay.yml: |
        #@ load("@ytt:data", "data")
        #@ load("@ytt:overlay", "overlay")
        #@ live = data.values.existing.data
        #@overlay/match by=overlay.all
        ---
        data:
          #@overlay/match missing_ok=True
          fromlive: #@ live.fromlive if hasattr(live, "fromlive") else "none"
"""

WAIT = """---
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
waitRules:
- resourceMatchers:
  - apiVersionKindMatcher: {apiVersion: v1, kind: ConfigMap}
  ytt:
    funcContractV1:
      resource.star: |
        def is_done(resource):
          if resource.data.ready == "yes":
            return {"done": True, "successful": True, "message": "ready"}
          elif resource.data.ready == "broken":
            return {"done": True, "successful": False, "message": "broken on purpose"}
          end
          return {"done": False, "message": "not ready"}
        end
"""


@pytest.fixture(autouse=True)
def ytt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAPPLY_YTT", str(external_tool("ytt", "KAPPLY_YTT")))


def manifest(both: Harness, tool: str, state: str, config: str) -> str:
    return CONFIG_MAP.replace("STATE", state) + config.replace("NAMESPACE", both.ns[tool])


def deploy_each(both: Harness, state: str, config: str, *args: str) -> Pair:
    """Each tool deploys into its namespace, with a Config naming that namespace."""
    deploy = ("deploy", "-a", "app", "-n", "{ns}", "-f", "-", *args)
    return Pair(*(both.run_one(tool, deploy, input=manifest(both, tool, state, config)) for tool in TOOLS))


def test_a_ytt_rebase_rule_copies_a_live_value_as_kapps_does(both: Harness):
    for result in deploy_each(both, "yes", REBASE, "-y"):
        assert result.code == 0, result.output
    both.same_objects()
    kube = Client(both.kubeconfig_path())
    for tool in TOOLS:  # another actor adds a key the rule keeps
        patch = {"data": {"fromlive": "x"}}
        kube.patch(ConfigMap, "settings", patch, namespace=both.ns[tool], patch_type=PatchType.MERGE)
    diff = deploy_each(both, "yes", REBASE, "--diff-run", "--diff-exit-status", "-c")
    # kapp also plans an update that only drops the live `annotations: {}` its ytt run leaves; kapply plans nothing
    # (docs/compatibility.md, Known differences): the live value is kept by both.
    assert diff.kapply.code == 2, diff.kapply.output
    assert "fromlive" not in diff.kapp.stdout and "fromlive" not in diff.kapply.stdout
    for result in deploy_each(both, "yes", REBASE, "-y"):
        assert result.code == 0, result.output
    kapp, kapply = (both.objects(tool)["ConfigMap/settings"] for tool in TOOLS)
    assert kapply["data"] == kapp["data"] == {"greeting": "hello", "ready": "yes", "fromlive": "x"}
    assert kapply["metadata"]["labels"] == kapp["metadata"]["labels"]


@pytest.mark.parametrize("state", ["yes", "broken"])
def test_a_ytt_wait_rule_decides_as_kapps_does(both: Harness, state: str):
    pair = deploy_each(both, state, WAIT, "-y", "--wait-check-interval=0.5s", "--wait-timeout=20s")
    # stdout alike; kapp breaks an error message into lines at each ": <Capital>" (a known difference of every error)
    both.same(pair, exact=False, stderr=False)
    assert pair.kapply.code == pair.kapp.code == (0 if state == "yes" else 1), pair.kapply.output
    if state == "broken":
        assert "Finished unsuccessfully (broken on purpose)" in pair.kapply.stderr
    both.same_objects()
