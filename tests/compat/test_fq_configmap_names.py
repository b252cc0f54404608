"""`KAPP_FQ_CONFIGMAP_NAMES=true` (any case) migrates an existing app: its record `<app>` becomes
`<app>.apps.k14s.io`, annotated `kapp.k14s.io/is-configmap-migrated`, on the next deploy that applies (not on a diff
run), as kapp's; and the migrated app is then found, redeployed and deleted as kapp finds it."""

from __future__ import annotations

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat

FIRST = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: redis-config}\ndata: {key: value}\n"
SECOND = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: redis-config}\ndata: {key: value2}\n"
FQ = {"KAPP_FQ_CONFIGMAP_NAMES": "True"}


def deploy(both: Harness, manifest: str, *flags: str, env: dict[str, str] | None = None) -> None:
    pair = both.run("deploy", "-a", "fqapp", "-n", "{ns}", "-f", "-", *flags, input=manifest, env=env)
    both.same(pair, exact=False)
    for result in pair:
        assert result.code in (0, 3), result.output


def records(both: Harness) -> list[str]:
    return sorted(name for name in both.objects("kapply") if not name.startswith("ConfigMap/fqapp-change-"))


def test_an_existing_app_is_migrated_as_kapp_migrates_it(both: Harness):
    deploy(both, FIRST, "-y")
    assert records(both) == ["ConfigMap/fqapp", "ConfigMap/redis-config"]
    deploy(both, SECOND, "--diff-run", "--diff-exit-status", env=FQ)  # a diff run writes nothing
    assert records(both) == ["ConfigMap/fqapp", "ConfigMap/redis-config"]
    deploy(both, SECOND, "-y", env=FQ)
    assert records(both) == ["ConfigMap/fqapp.apps.k14s.io", "ConfigMap/redis-config"]
    record = both.objects("kapply")["ConfigMap/fqapp.apps.k14s.io"]
    assert "kapp.k14s.io/is-configmap-migrated" in record["metadata"]["annotations"]
    both.same_objects()
    deploy(both, FIRST, "-y", env=FQ)
    deploy(both, FIRST, "-y")  # without the variable, the migrated record is found and kept
    both.same_objects()
    pair = both.run("delete", "-a", "fqapp", "-n", "{ns}", "-y")
    both.same(pair, exact=False)
    assert records(both) == []


def test_a_deploy_with_nothing_to_apply_migrates_too(both: Harness):
    deploy(both, FIRST, "-y")
    deploy(both, FIRST, "-y", env={"KAPP_FQ_CONFIGMAP_NAMES": "true"})
    assert records(both) == ["ConfigMap/fqapp.apps.k14s.io", "ConfigMap/redis-config"]
    both.same_objects()
