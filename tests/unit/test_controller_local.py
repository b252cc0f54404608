"""kapply.controller.local: objects of the kept types live in memory and are served as an API server serves them
(resourceVersions checked, generations bumped by spec changes only, status written on its own, finalizers holding a
deleted object), every write told to `on_write`; every other type goes to the API server (recorded here)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import orjson
import pytest

from kapply.controller.local import LocalCluster, merge_patch
from kapply.controller.vocabulary import CARVEL
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType
from kapply.resources.kubeconfig import KubeconfigFlags, load

T = TypeVar("T")
KUBECONFIG = orjson.dumps(
    {
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
).decode()
APPS, PACKAGES = CARVEL.app.rtype, CARVEL.package.rtype
SECRETS = ResourceType("", "v1", "Secret", "secrets", True, frozenset({"get"}))
FINALIZER = CARVEL.app_finalizer


class Local(LocalCluster):
    """Sends nothing to an API server: records what it would have sent, and answers None."""

    def __init__(self) -> None:
        self.written: list[tuple[str, Obj]] = []
        super().__init__(
            load(KubeconfigFlags(yaml=KUBECONFIG)),
            [APPS, PACKAGES],
            on_write=lambda rtype, obj: self.written.append((rtype.kind, obj)),
        )
        self.sent: list[tuple[str, str]] = []

    async def request(self, method: str, path: str, **_: Any) -> Any:
        self.sent.append((method, path))
        return None


def run(step: Awaitable[T]) -> T:
    async def main() -> T:
        return await step

    return asyncio.run(main())


def app(name: str = "a", **spec: Any) -> Obj:
    return {"apiVersion": APPS.api_version, "kind": "App", "metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def test_an_added_object_gets_what_the_api_server_sets_and_is_read_back() -> None:
    local = Local()
    stored = local.add(APPS, {**app(), "status": {"friendlyDescription": "x"}})
    meta = stored["metadata"]
    assert meta["generation"] == 1 and meta["uid"] and meta["creationTimestamp"] and meta["resourceVersion"] == "1"
    assert stored["status"] == {"friendlyDescription": "x"}  # kept as given: the start of a reconcile
    assert run(local.get(APPS, "ns", "a")) == stored
    assert run(local.get(APPS, "ns", "b")) is None
    assert local.sent == [] and [kind for kind, _ in local.written] == ["App"]


def test_lists_filter_by_namespace_and_field_selector_and_take_the_limit() -> None:
    local = Local()
    for name, ref, namespace in (("p1", "a.x", "ns"), ("p2", "b.x", "ns"), ("p3", "a.x", "other")):
        local.add(PACKAGES, {"metadata": {"name": name, "namespace": namespace}, "spec": {"refName": ref}})
    items, _ = run(local.list_with_version(PACKAGES, namespace="ns", field_selector="spec.refName=a.x"))
    assert [i["metadata"]["name"] for i in items] == ["p1"]
    assert (items[0]["apiVersion"], items[0]["kind"]) == (PACKAGES.api_version, "Package")
    everywhere = run(local.list(PACKAGES))
    assert [i["metadata"]["name"] for i in everywhere] == ["p1", "p2", "p3"]
    one, _ = run(local.list_with_version(PACKAGES, namespace="ns", limit=1))
    assert len(one) == 1
    other, _ = run(local.list_with_version(PACKAGES, field_selector="spec.refName!=a.x"))
    assert [i["metadata"]["name"] for i in other] == ["p2"]
    assert run(local.list(APPS, namespace="ns")) == []


def test_a_create_of_an_existing_name_and_an_update_from_a_stale_version_are_conflicts() -> None:
    local = Local()
    created = run(local.create(APPS, {**app(), "status": {"ignored": True}}))
    assert "status" not in created and created["metadata"]["generation"] == 1
    with pytest.raises(ClusterError, match=r'apps.kappctrl.k14s.io "a" already exists') as exists:
        run(local.create(APPS, app()))
    assert exists.value.conflict
    updated = run(local.update(APPS, {**created, "spec": {"paused": True}}))
    assert updated["metadata"]["generation"] == 2
    with pytest.raises(ClusterError, match="the object has been modified") as stale:
        run(local.update(APPS, {**created, "spec": {"paused": False}}))
    assert stale.value.conflict
    with pytest.raises(ClusterError) as missing:
        run(local.update(APPS, app("b")))
    assert missing.value.not_found


def test_only_a_change_beyond_metadata_and_status_bumps_the_generation_and_updates_keep_the_status() -> None:
    local = Local()
    stored = local.add(APPS, app(paused=False))
    run(local.write_status(APPS, stored, {"friendlyDescription": "Reconciling"}))
    assert stored["status"] == {"friendlyDescription": "Reconciling"}  # the caller's copy follows
    labelled = run(local.update(APPS, {**stored, "metadata": {**stored["metadata"], "labels": {"a": "b"}}}))
    assert labelled["metadata"]["generation"] == 1
    assert labelled["status"] == {"friendlyDescription": "Reconciling"}
    rewritten = run(local.update(APPS, {**labelled, "status": {"other": 1}, "spec": {"paused": True}}))
    assert rewritten["metadata"]["generation"] == 2 and rewritten["status"] == {"friendlyDescription": "Reconciling"}


def test_an_unchanged_status_is_not_written_and_a_gone_object_takes_none() -> None:
    local = Local()
    stored = local.add(APPS, {**app(), "status": {"a": 1}})
    run(local.write_status(APPS, stored, {"a": 1}))
    assert len(local.written) == 1
    run(local.write_status(APPS, app("gone"), {"a": 2}))
    assert len(local.written) == 1 and run(local.get(APPS, "ns", "gone")) is None


def test_finalizers_hold_a_deleted_object_until_the_last_is_removed() -> None:
    local = Local()
    stored = local.add(APPS, app())
    run(local.add_finalizer(APPS, stored, FINALIZER))
    run(local.delete(APPS, "ns", "a", uid=stored["metadata"]["uid"]))
    held = run(local.get(APPS, "ns", "a"))
    assert held is not None and held["metadata"]["deletionTimestamp"]
    run(local.remove_finalizer(APPS, "ns", "a", FINALIZER))
    assert run(local.get(APPS, "ns", "a")) is None
    last = local.written[-1][1]
    assert last["metadata"]["deletionTimestamp"] and last["metadata"]["finalizers"] == []
    run(local.delete(APPS, "ns", "a"))  # gone: deleted all the same


def test_a_delete_with_another_uid_is_refused_and_one_without_finalizers_removes_at_once() -> None:
    local = Local()
    local.add(APPS, app())
    with pytest.raises(ClusterError, match="Precondition failed") as refused:
        run(local.delete(APPS, "ns", "a", uid="other"))
    assert refused.value.conflict
    run(local.delete(APPS, "ns", "a"))
    assert run(local.get(APPS, "ns", "a")) is None


def test_merge_patches_apply_and_other_patch_types_are_refused() -> None:
    local = Local()
    local.add(APPS, {**app(), "spec": {"a": {"b": 1, "c": 2}}})
    patched = run(local.patch(APPS, "ns", "a", {"spec": {"a": {"b": None, "d": 3}}}, "application/merge-patch+json"))
    assert patched["spec"] == {"a": {"c": 2, "d": 3}} and patched["metadata"]["generation"] == 2
    with pytest.raises(ClusterError, match="not supported for objects kept in memory"):
        run(local.patch(APPS, "ns", "a", [{"op": "remove", "path": "/spec"}]))
    assert merge_patch({"a": 1}, [1]) == [1]


def test_other_types_go_to_the_api_server() -> None:
    local = Local()
    run(local.get(SECRETS, "ns", "s"))
    run(local.create(SECRETS, {"metadata": {"name": "s", "namespace": "ns"}}))
    run(local.delete(SECRETS, "ns", "s"))
    assert [method for method, _ in local.sent] == ["GET", "POST", "DELETE"]
    assert all("/secrets" in path for _, path in local.sent)
    assert local.written == []
