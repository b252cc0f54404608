"""Updates carry the live resourceVersion; a 409 Conflict is resolved by re-reading and re-diffing, and
only when the approved diff still holds (as kapp does)."""

from __future__ import annotations

import asyncio
import io

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap

import kapply
from tests.e2e.harness import Cluster as ClusterUnderTest

pytestmark = pytest.mark.e2e


def manifest(value: str) -> str:
    return f'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: contested\ndata:\n  v: "{value}"\n'


async def plan_then_interfere_then_run(cluster: ClusterUnderTest, namespace: str, value: str, interfere) -> None:
    async with kapply.AsyncClient(cluster.kubeconfig, namespace=namespace) as api:
        plan = await api.plan_deploy("conflicts", files=["-"], stdin=io.StringIO(manifest(value)))
        interfere()
        await api.run_deploy(plan)


def deploy(cluster: ClusterUnderTest, namespace: str, value: str, interfere=lambda: None) -> None:
    asyncio.run(plan_then_interfere_then_run(cluster, namespace, value, interfere))


def test_a_conflict_from_an_unrelated_change_is_retried(cluster: ClusterUnderTest, kube: Client, namespace: str):
    deploy(cluster, namespace, "1")

    def touch_unrelated():
        """A new resourceVersion, but nothing in the diff: kapp's rebase takes metadata such as finalizers
        from the live object on both sides."""
        kube.patch(ConfigMap, "contested", {"metadata": {"finalizers": ["example.test/hold"]}}, namespace=namespace)

    deploy(cluster, namespace, "2", touch_unrelated)
    live = kube.get(ConfigMap, "contested", namespace=namespace)
    assert live.data == {"v": "2"} and live.metadata.finalizers == ["example.test/hold"]
    kube.patch(ConfigMap, "contested", {"metadata": {"finalizers": None}}, namespace=namespace)


def test_a_conflict_that_changes_the_approved_diff_fails_the_update(
    cluster: ClusterUnderTest, kube: Client, namespace: str
):
    deploy(cluster, namespace, "1")

    def add_a_key():
        """The update would now also remove this key: not what was approved."""
        kube.patch(ConfigMap, "contested", {"data": {"w": "someone else's"}}, namespace=namespace)

    with pytest.raises(kapply.ApplyError, match="approved diff no longer matches") as failed:
        deploy(cluster, namespace, "2", add_a_key)
    assert "Recalculated diff:" in str(failed.value) and "-   w: someone else's" in str(failed.value)
    assert kube.get(ConfigMap, "contested", namespace=namespace).data == {"v": "1", "w": "someone else's"}
