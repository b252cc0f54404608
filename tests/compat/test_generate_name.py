"""A resource with `metadata.generateName` and no name: kapp plans it as a create of `<generateName>*`, the server
names it, and kapp records it under that name; a redeploy, whose resource still has no name, deletes it and creates
another. kapp then fails its wait (it looks for `gen-*` by that name), where kapply waits on the object the server
named (docs/compatibility.md, Known differences)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.compat.harness import TOOLS, Harness, Pair, Result

pytestmark = pytest.mark.compat

MANIFEST = """---
apiVersion: v1
kind: ConfigMap
metadata:
  generateName: gen-
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: plain
data: {a: "1"}
"""

_GENERATED = re.compile(r"\bgen-[a-z0-9]{5}\b")
_PROGRESS = re.compile(r"^\d{1,2}:\d\d:\d\d(AM|PM): .*\n", re.MULTILINE)


def generated(pair: Pair) -> Pair:
    """The pair, with the names the server generated as `gen-GEN`, and without progress lines: with `--wait=false`
    kapp still prints a `waiting on` section of `ok: noop` lines, kapply none (not particular to generateName)."""

    def seen(text: str) -> str:
        return _PROGRESS.sub("", _GENERATED.sub("gen-GEN", text))

    return Pair(*(Result(r.tool, r.code, seen(r.stdout), seen(r.stderr)) for r in pair))


def objects(both: Harness, tool: str) -> Any:
    """What the tool left (see `Harness.objects`), with the names the server generated as `gen-GEN`."""
    return json.loads(_GENERATED.sub("gen-GEN", json.dumps(both.objects(tool), sort_keys=True)))


def test_a_resource_named_by_the_server_is_created_and_replaced_as_kapp_does(both: Harness):
    deploy = ("deploy", "-a", "gn", "-n", "{ns}", "-f", "-")
    plan = both.run(*deploy, "--diff-run", "-c", input=MANIFEST)
    both.same(plan)
    assert "configmap/gen-* (v1)" in plan.kapply.stdout
    applied = both.run(*deploy, "-y", "--wait=false", input=MANIFEST)
    assert "create configmap/gen-* (v1)" in applied.kapply.stdout
    first = generated(applied)
    both.same(first)
    assert first.kapply.code == 0, first.kapply.output
    kapp, kapply = (objects(both, tool) for tool in TOOLS)
    assert (
        kapply["ConfigMap/gen-GEN"]["metadata"]["annotations"]["kapp.k14s.io/identity"] == "v1;NS//ConfigMap/gen-GEN;v1"
    )
    assert kapply == kapp  # the app record and its change included
    names = {tool: [k for k in both.objects(tool) if k.startswith("ConfigMap/gen-")] for tool in TOOLS}
    again = generated(both.run(*deploy, "-y", "--wait=false", input=MANIFEST))
    both.same(again, exact=False)
    assert "Op:      1 create, 1 delete, 0 update, 0 noop, 0 exists" in again.kapply.stdout
    for tool in TOOLS:  # the one made before was deleted, another made
        now = [k for k in both.objects(tool) if k.startswith("ConfigMap/gen-")]
        assert len(now) == 1 and now != names[tool], (tool, now, names[tool])
    assert objects(both, "kapply") == objects(both, "kapp")
    both.same(generated(both.run("inspect", "-a", "gn", "-n", "{ns}")), exact=False)


def test_kapply_waits_on_the_object_the_server_named(both: Harness):
    pair = both.run("deploy", "-a", "gn", "-n", "{ns}", "-f", "-", "-y", input=MANIFEST)
    assert pair.kapp.code == 1 and 'configmaps "gen-*" not found' in pair.kapp.stderr, pair.kapp.output
    assert pair.kapply.code == 0, pair.kapply.output
    assert re.search(r"ok: reconcile configmap/gen-[a-z0-9]{5} \(v1\)", pair.kapply.stdout), pair.kapply.stdout
