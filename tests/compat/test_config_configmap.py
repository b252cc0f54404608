"""A ConfigMap labeled `kapp.k14s.io/config` carries a kapp Config in `data["config.yml"]`: kapp applies the Config
and deploys the ConfigMap as well (docs/compatibility.md, 4 and 5.1); kapply does both alike, and refuses a bad
Config in it before applying anything, as kapp does (in words of its own)."""

from __future__ import annotations

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat

CONFIG_MAP = """---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kapp-config
  labels: {kapp.k14s.io/config: ""}
data:
  config.yml: |
    apiVersion: kapp.k14s.io/v1alpha1
    kind: Config
    CONFIG
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello}
"""


def test_the_config_applies_and_its_configmap_is_deployed_too(both: Harness):
    manifest = CONFIG_MAP.replace("CONFIG", "additionalLabels: {team: blue}")
    pair = both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=manifest)
    both.same(pair)
    assert pair.kapply.code == 0, pair.kapply.output
    both.same_objects()
    for tool in ("kapp", "kapply"):
        objects = both.objects(tool)
        assert objects["ConfigMap/kapp-config"]["metadata"]["labels"]["team"] == "blue"
        assert objects["ConfigMap/settings"]["metadata"]["labels"]["team"] == "blue"


def test_a_bad_config_in_it_fails_the_deploy_before_anything_is_applied(both: Harness):
    manifest = CONFIG_MAP.replace("CONFIG", "rebaseRules: 5")
    pair = both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=manifest)
    both.same(pair, stderr=False)
    assert pair.kapply.code == 1, pair.kapply.output
    assert "labeled as kapp config" in pair.kapp.stderr
    # kapply's own words (docs/compatibility.md, Known differences): the document and key, what is wrong and where
    assert pair.kapply.stderr == (
        "kapply: Error: Parsing kapp config stdin doc 1 data 'config.yml': expected a list, but was a number"
        " (in rebaseRules)\n"
    )
    # kapp records the app before it reads its input, kapply writes nothing (docs/compatibility.md, Known
    # differences); neither applies a resource
    assert list(both.objects("kapp")) == ["ConfigMap/app"]
    assert both.objects("kapply") == {}
