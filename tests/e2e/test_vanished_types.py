"""A resource type discovered and then gone (its CRD deleted, by another app's delete, between a client's discovery
and the LIST that looks for an app's objects): the LIST is answered 404 "page not found". A deploy or delete that
does not need the type goes on, since no object of a type that is no longer served can be left; a deploy of a
resource of that type still fails."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_global_resource
from lightkube.resources.core_v1 import ConfigMap

import kapply
from kapply.errors import ClusterError
from tests.e2e.harness import Cluster, eventually

pytestmark = pytest.mark.e2e

CRD_TYPE = create_global_resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions")
NO_WAIT = kapply.DeployOptions(wait=kapply.WaitOptions(wait=False))
EVERY_TYPE = kapply.DeployOptions(wait=kapply.WaitOptions(wait=False), disable_gk_scoping=True)

CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"k": "v"}}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
    },
}


@pytest.fixture
def group(kube: Client) -> Iterator[str]:
    """The group of a CRD, created and Established; deleted at the end if the test did not."""
    name = f"g{uuid.uuid4().hex[:8]}.kapply.dev"
    schema = {"openAPIV3Schema": {"type": "object"}}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{name}"},
        "spec": {
            "group": name,
            "scope": "Namespaced",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
        },
    }
    kube.create(CRD_TYPE.from_dict(crd))

    def established() -> bool:
        conditions = (kube.get(CRD_TYPE, f"gadgets.{name}").status or {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    eventually(established, what="the CRD to be Established")
    yield name
    try:
        kube.delete(CRD_TYPE, f"gadgets.{name}")
    except ApiError as e:
        if e.status.code != 404:
            raise


async def vanish(api: kapply.AsyncClient, kube: Client, group: str) -> None:
    """The CRD deleted (as another app's delete does) after `api` discovered its type, and no longer served."""
    assert (await api.cluster.discovery(refresh=True)).preferred(group, "Gadget") is not None
    kube.delete(CRD_TYPE, f"gadgets.{group}")
    for _ in range(120):
        try:
            await api.cluster.request("GET", f"/apis/{group}/v1/gadgets")
        except ClusterError as e:
            if e.status == 404:
                return
        await asyncio.sleep(0.5)
    pytest.fail("the CRD's type is still served")


def test_a_deploy_goes_on_when_a_type_it_does_not_need_vanished_after_discovery(
    cluster: Cluster, kube: Client, namespace: str, group: str
):
    async def scenario() -> kapply.DeployResult:
        async with kapply.AsyncClient(cluster.kubeconfig, namespace=namespace) as api:
            await api.deploy("plain", resources=[CONFIG_MAP, DEPLOYMENT], options=NO_WAIT)
            await vanish(api, kube, group)
            changed = {**CONFIG_MAP, "data": {"k": "changed"}}
            return await api.deploy("plain", resources=[changed, DEPLOYMENT], options=EVERY_TYPE)

    result = asyncio.run(scenario())
    assert [c.describe() for c in result.changes] == [f"configmap/cfg (v1) namespace: {namespace}"]
    assert kube.get(ConfigMap, "cfg", namespace=namespace).data == {"k": "changed"}


def test_a_delete_goes_on_when_a_type_vanished_after_discovery(
    cluster: Cluster, kube: Client, namespace: str, group: str
):
    async def scenario() -> None:
        async with kapply.AsyncClient(cluster.kubeconfig, namespace=namespace) as api:
            await api.deploy("plain", resources=[CONFIG_MAP, DEPLOYMENT], options=NO_WAIT)
            await vanish(api, kube, group)
            await api.delete("plain")

    asyncio.run(scenario())
    assert [cm.metadata.name for cm in kube.list(ConfigMap, namespace=namespace)] == ["kube-root-ca.crt"]


def test_a_deploy_of_a_resource_of_the_vanished_type_still_fails(
    cluster: Cluster, kube: Client, namespace: str, group: str
):
    gadget = {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"}}

    async def scenario() -> None:
        async with kapply.AsyncClient(cluster.kubeconfig, namespace=namespace) as api:
            await api.deploy("gadgets", resources=[CONFIG_MAP], options=NO_WAIT)
            await vanish(api, kube, group)
            await api.deploy("gadgets", resources=[CONFIG_MAP, gadget], options=EVERY_TYPE)

    with pytest.raises(kapply.KapplyError, match="404"):
        asyncio.run(scenario())
