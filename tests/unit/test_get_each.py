"""Finding existing objects a deploy would create: a GET each for a few, one LIST per type and namespace for many,
the GETs again when RBAC forbids the LIST."""

from __future__ import annotations

import asyncio

from kapply.errors import ClusterError
from kapply.resources.cluster import Discovery
from kapply.resources.labeled import LIST_FROM, LOOKUPS_AT_ONCE, get_each
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster

DISCOVERY = Discovery(BUILTIN_TYPES)
CONFIGMAPS = DISCOVERY.find("v1", "ConfigMap")


def configmap(name: str, namespace: str = "ns") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


def existing(fake: FakeCluster, *objs: dict) -> None:
    assert CONFIGMAPS is not None
    for obj in objs:
        asyncio.run(fake.create(CONFIGMAPS, obj))
    fake.log.clear()


def test_a_few_resources_are_read_one_by_one():
    fake = FakeCluster(DISCOVERY)
    existing(fake, configmap("a"))
    found = asyncio.run(get_each(fake, DISCOVERY, [configmap("a"), configmap("b")]))  # type: ignore[arg-type]
    assert [f["metadata"]["name"] for f in found] == ["a"]
    assert sorted(fake.log) == [("get", "ConfigMap", "a"), ("get", "ConfigMap", "b")]


def test_many_of_one_type_and_namespace_cost_one_list_and_only_the_wanted_ones_are_returned():
    fake = FakeCluster(DISCOVERY)
    existing(fake, configmap("c3"), configmap("unrelated"), configmap("c3", namespace="other"))
    wanted = [configmap(f"c{i}") for i in range(LIST_FROM)] + [configmap("x", namespace="other")]
    found = asyncio.run(get_each(fake, DISCOVERY, wanted))  # type: ignore[arg-type]
    assert [(f["metadata"]["namespace"], f["metadata"]["name"]) for f in found] == [("ns", "c3")]
    assert found[0]["apiVersion"] == "v1" and found[0]["kind"] == "ConfigMap"
    assert sorted(fake.log) == [("get", "ConfigMap", "x"), ("list", "ConfigMap", "ns")]


def test_a_forbidden_list_falls_back_to_a_get_each():
    class NoList(FakeCluster):
        async def list(self, rtype, *, label_selector=None, namespace=None):  # type: ignore[no-untyped-def]
            self.log.append(("list", rtype.kind, namespace or ""))
            raise ClusterError("configmaps is forbidden", status=403)

    fake = NoList(DISCOVERY)
    existing(fake, configmap("c1"))
    found = asyncio.run(get_each(fake, DISCOVERY, [configmap(f"c{i}") for i in range(LIST_FROM)]))  # type: ignore[arg-type]
    assert [f["metadata"]["name"] for f in found] == ["c1"]
    assert sum(1 for verb, _, _ in fake.log if verb == "get") == LIST_FROM


def test_gets_beyond_the_lookups_sent_at_once_become_lists_of_the_largest_groups():
    fake = FakeCluster(DISCOVERY)
    existing(fake, configmap("a1", namespace="a"), configmap("c1", namespace="c"))
    wanted = (
        [configmap(f"a{i}", namespace="a") for i in range(10)]
        + [configmap(f"b{i}", namespace="b") for i in range(9)]
        + [configmap(f"c{i}", namespace="c") for i in range(LOOKUPS_AT_ONCE - 2)]
    )
    found = asyncio.run(get_each(fake, DISCOVERY, wanted))  # type: ignore[arg-type]
    assert sorted((f["metadata"]["namespace"], f["metadata"]["name"]) for f in found) == [("a", "a1"), ("c", "c1")]
    assert sorted(fake.log) == [("get", "ConfigMap", f"c{i}") for i in range(LOOKUPS_AT_ONCE - 2)] + [
        ("list", "ConfigMap", "a"),
        ("list", "ConfigMap", "b"),
    ]
