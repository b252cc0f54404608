"""The packaging objects' I/O (status through the status subresource, finalizers), against an in-memory API server
that checks resourceVersions; and what of a PackageInstall must change for it to be reconciled."""

from __future__ import annotations

import asyncio
import copy
import itertools
from typing import Any

import pytest

from kapply.errors import ClusterError, ConcurrencyError
from kapply.objects import Obj
from kapply.packaging import names, store
from kapply.packaging.install import install_fingerprint
from kapply.resources.cluster import ResourceType

PATH = "/apis/packaging.kapply.dev/v1alpha1/namespaces/ns/packageinstalls/inst"


class FakeServer:
    """One PackageInstall as the API server keeps it; `others` writes by someone else get in before each of ours."""

    def __init__(self, obj: Obj, others: int = 0) -> None:
        self.obj = copy.deepcopy(obj)
        self.versions = itertools.count(2)
        self.others = others
        self.writes: list[str] = []

    def _write(self, body: Obj) -> None:
        if self.others:
            self.others -= 1
            self.obj["metadata"]["resourceVersion"] = str(next(self.versions))
        if body["metadata"]["resourceVersion"] != self.obj["metadata"]["resourceVersion"]:
            raise ClusterError("conflict", status=409)
        self.obj["metadata"]["resourceVersion"] = str(next(self.versions))

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        return copy.deepcopy(self.obj)

    async def request(self, method: str, path: str, *, body: Obj) -> Obj:
        assert (method, path) == ("PUT", PATH + "/status")
        self.writes.append("status")
        self._write(body)
        self.obj["status"] = copy.deepcopy(body["status"])
        return copy.deepcopy(self.obj)

    async def update(self, rtype: ResourceType, body: Obj) -> Obj:
        self.writes.append("update")
        self._write(body)
        self.obj["metadata"]["finalizers"] = list(body["metadata"].get("finalizers") or [])
        return copy.deepcopy(self.obj)


def install(**meta: Any) -> Obj:
    return {"metadata": {"name": "inst", "namespace": "ns", "resourceVersion": "1", **meta}, "status": {}}


def test_a_status_is_written_again_after_a_conflict_and_not_at_all_when_only_times_change() -> None:
    server = FakeServer(install(), others=1)
    obj = install()
    status = {"friendlyDescription": "Reconciling", "fetch": {"updatedAt": "a"}}
    asyncio.run(store.write_status(server, store.INSTALLS, obj, status))  # type: ignore[arg-type]
    assert server.writes == ["status", "status"] and obj["status"] == status
    asyncio.run(store.write_status(server, store.INSTALLS, obj, {**status, "fetch": {"updatedAt": "b"}}))  # type: ignore[arg-type]
    assert server.writes == ["status", "status"]


def test_a_status_others_keep_changing_gives_up() -> None:
    server = FakeServer(install(), others=10)
    with pytest.raises(ConcurrencyError):
        asyncio.run(store.write_status(server, store.INSTALLS, install(), {"x": 1}))  # type: ignore[arg-type]


def test_a_status_of_an_object_gone_meanwhile_is_not_written() -> None:
    class Gone(FakeServer):
        async def request(self, method: str, path: str, *, body: Obj) -> Obj:
            self.writes.append("status")
            raise ClusterError("not found", status=404)

    server = Gone(install())
    obj = install()
    asyncio.run(store.write_status(server, store.INSTALLS, obj, {"x": 1}))  # type: ignore[arg-type]
    assert server.writes == ["status"] and obj["status"] == {}


def test_finalizers_are_added_once_and_removed_after_conflicts() -> None:
    server = FakeServer(install(), others=1)
    obj = install()
    asyncio.run(store.add_finalizer(server, store.INSTALLS, obj, names.INSTALL_FINALIZER))  # type: ignore[arg-type]
    assert obj["metadata"]["finalizers"] == [names.INSTALL_FINALIZER] and server.writes == ["update", "update"]
    asyncio.run(store.add_finalizer(server, store.INSTALLS, obj, names.INSTALL_FINALIZER))  # type: ignore[arg-type]
    assert server.writes == ["update", "update"]
    server.others = 1
    asyncio.run(store.remove_finalizer(server, store.INSTALLS, "ns", "inst", names.INSTALL_FINALIZER))  # type: ignore[arg-type]
    assert server.obj["metadata"]["finalizers"] == []


def test_the_types_are_kapplys_groups() -> None:
    assert store.INSTALLS.path("ns", "inst") == PATH
    assert store.PACKAGES.api_version == names.DATA_API_VERSION and store.REPOSITORIES.kind == "PackageRepository"


def test_an_install_is_reconciled_when_its_spec_deletion_or_annotations_change() -> None:
    first = install_fingerprint({"metadata": {"generation": 1}})
    assert install_fingerprint({"metadata": {"generation": 1, "labels": {"a": "b"}}}) == first
    assert install_fingerprint({"metadata": {"generation": 2}}) != first
    assert install_fingerprint({"metadata": {"generation": 1, "deletionTimestamp": "now"}}) != first
    annotated = {"metadata": {"generation": 1, "annotations": {names.DOWNGRADABLE_ANNOTATIONS[0]: ""}}}
    assert install_fingerprint(annotated) != first
