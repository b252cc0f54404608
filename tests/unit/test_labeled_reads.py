"""Reading an app's objects as kapp does: each at the version it was last written at while that version is served,
and a type that vanished since discovery (its CRD deleted) skipped unless the deploy needs it."""

from __future__ import annotations

import asyncio

import pytest

from kapply.errors import ClusterError
from kapply.resources.cluster import Discovery, ResourceType
from kapply.resources.labeled import at_written_versions, identity_version, list_labeled
from tests.unit.conftest import BUILTIN_TYPES, VERBS
from tests.unit.fake_cluster import FakeCluster

FOOS_V1 = ResourceType("example.com", "v1", "Foo", "foos", True, VERBS)
FOOS_V1BETA1 = ResourceType("example.com", "v1beta1", "Foo", "foos", True, VERBS)
SERVED = Discovery((*BUILTIN_TYPES, FOOS_V1, FOOS_V1BETA1))
RETIRED = Discovery((*BUILTIN_TYPES, FOOS_V1))


def foo(name: str, written_at: str) -> dict:
    identity = f"v1;ns/example.com/Foo/{name};example.com/{written_at}"
    meta = {"name": name, "namespace": "ns", "labels": {"app": "1"}, "annotations": {"kapp.k14s.io/identity": identity}}
    return {"apiVersion": f"example.com/{written_at}", "kind": "Foo", "metadata": meta}


def listed(fake: FakeCluster, discovery: Discovery) -> list[dict]:
    found = asyncio.run(list_labeled(fake, discovery.listable(), "app=1"))  # type: ignore[arg-type]
    return asyncio.run(at_written_versions(fake, discovery, found))  # type: ignore[arg-type]


def test_an_object_is_read_at_the_version_it_was_written_at_while_that_version_is_served():
    fake = FakeCluster(SERVED)
    for obj in (foo("old", "v1beta1"), foo("new", "v1")):  # stored, and listed, at the storage version
        asyncio.run(fake.create(FOOS_V1, {**obj, "apiVersion": "example.com/v1"}))
    found = {o["metadata"]["name"]: o["apiVersion"] for o in listed(fake, SERVED)}
    assert found == {"old": "example.com/v1beta1", "new": "example.com/v1"}
    assert ("get", "Foo", "new") not in fake.log  # only what was written at another version is read again
    assert {o["metadata"]["name"]: o["apiVersion"] for o in listed(fake, RETIRED)} == {
        "old": "example.com/v1",
        "new": "example.com/v1",
    }


def test_the_identity_names_the_version_written_at():
    assert identity_version(foo("x", "v1beta1")) == "example.com/v1beta1"
    assert identity_version({"metadata": {}}) == ""


class Vanished(FakeCluster):
    """A cluster on which the Foo type is gone since discovery."""

    async def list(self, rtype, *, label_selector=None, namespace=None):  # type: ignore[no-untyped-def]
        if rtype.kind == "Foo":
            raise ClusterError("API server says: 404 page not found (reason: Not Found)", status=404)
        return await super().list(rtype, label_selector=label_selector, namespace=namespace)


def test_a_type_gone_since_discovery_is_skipped_unless_it_is_needed():
    fake = Vanished(SERVED)
    types = [t for t in RETIRED.listable() if t.kind in ("ConfigMap", "Foo")]
    assert asyncio.run(list_labeled(fake, types, "app=1")) == []  # type: ignore[arg-type]
    with pytest.raises(ClusterError, match="404"):
        asyncio.run(list_labeled(fake, types, "app=1", needed={("example.com", "Foo")}))  # type: ignore[arg-type]
