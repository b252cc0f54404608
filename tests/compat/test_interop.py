"""kapp and kapply take turns on the same app. Each case deploys the app with ONE tool into both namespaces of the
pair, then runs the next command (`both.run`) with kapp in the first namespace and kapply in the second: both act on
an app the same tool made, so their outputs and what they leave must be the same. Covers an app made by kapp and
handled by kapply and the other way round, kapp-controller-style names (`<name>-ctrl`), `KAPP_FQ_CONFIGMAP_NAMES`."""

from __future__ import annotations

import pytest

from tests.compat.harness import TOOLS, Harness

pytestmark = pytest.mark.compat

FIRST = """apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello, mode: "1"}
---
apiVersion: v1
kind: Secret
metadata: {name: token}
stringData: {token: s3cr3t}
"""
CHANGED = FIRST.replace("greeting: hello", "greeting: bonjour").replace("token: s3cr3t", "token: n3w")


def deploy_with(both: Harness, maker: str, app: str, manifest: str, env: dict[str, str] | None = None) -> None:
    """`maker` deploys the app into both namespaces of the pair."""
    for tool in TOOLS:
        args = ("deploy", "-a", app, "-n", both.ns[tool], "-f", "-", "-y", "--wait-check-interval=0.5s")
        result = both.run_one(maker, args, input=manifest, env=env)
        assert result.code == 0, result.output


@pytest.mark.parametrize("maker", TOOLS)
@pytest.mark.parametrize("app", ["app", "app-ctrl"])
def test_the_other_tools_app_is_redeployed_changed_listed_inspected_and_deleted_alike(
    both: Harness, maker: str, app: str
):
    deploy_with(both, maker, app, FIRST)
    deploy = ("deploy", "-a", app, "-n", "{ns}", "-f", "-")
    unchanged = both.run(*deploy, "--diff-run", "--diff-exit-status", "-c", input=FIRST)
    both.same(unchanged, exact=False)
    assert unchanged.kapply.code == 2 and unchanged.kapp.code == 2, unchanged.kapp.output
    changed = both.run(*deploy, "--diff-run", "--diff-exit-status", "-c", input=CHANGED)
    both.same(changed, exact=False)
    assert changed.kapply.code == 3
    applied = both.run(*deploy, "-y", "--wait-check-interval=0.5s", input=CHANGED)
    both.same(applied, exact=False)
    for command in (
        ("ls", "-n", "{ns}", "--tty"),
        ("inspect", "-a", app, "-n", "{ns}", "--tty"),
        ("app-change", "ls", "-a", app, "-n", "{ns}", "--json"),
    ):
        pair = both.run(*command)
        if "--json" in command:
            both.same_json(pair)
        else:
            both.same(pair, exact=False)
    both.same_objects()
    deleted = both.run("delete", "-a", app, "-n", "{ns}", "-y", "--wait-check-interval=0.5s")
    both.same(deleted, exact=False)
    both.same_objects()
    assert both.objects("kapply") == {}


@pytest.mark.parametrize("maker", TOOLS)
def test_fully_qualified_app_records_are_read_and_kept_alike(both: Harness, maker: str):
    fq = {"KAPP_FQ_CONFIGMAP_NAMES": "true"}
    deploy_with(both, maker, "app", FIRST, env=fq)
    assert "ConfigMap/app.apps.k14s.io" in both.objects("kapply")
    pair = both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=CHANGED, env=fq)
    both.same(pair, exact=False)
    both.same_objects()
    both.same(both.run("ls", "-n", "{ns}", "--tty"), exact=False)
    both.same(both.run("delete", "-a", "app", "-n", "{ns}", "-y", env=fq), exact=False)
    both.same_objects()
