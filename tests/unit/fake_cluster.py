"""An in-memory stand-in for the cluster client, for unit tests of the apply loop's logic (ordering, unblocking,
timeouts). It stores objects and answers like the API server in the few ways the loop relies on (uids, resource
versions, 404 and 409); controllers are simulated by `evolve` callbacks. Behaviour against a real API server is
tested end to end, never here."""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Callable
from typing import Any

from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Discovery, ResourceType

Key = tuple[str, str, str, str]  # group, kind, namespace, name


class FakeCluster:
    def __init__(self, discovery: Discovery) -> None:
        self._discovery = discovery
        self.objects: dict[Key, Obj] = {}
        self.log: list[tuple[str, str, str]] = []  # (verb, kind, name) of every request, in order
        self.in_flight = 0
        self.max_in_flight = 0
        self.evolve: dict[tuple[str, str], Callable[[Obj, int], None]] = {}  # (kind, name) -> f(obj, reads so far)
        self._reads: dict[Key, int] = {}
        self._versions = itertools.count(1)
        self.write_delay = 0.0
        self.defaults: Callable[[Obj], None] | None = None  # what the "server" fills in on create and update

    @staticmethod
    def _key(rtype: ResourceType, namespace: str | None, name: str) -> Key:
        return (rtype.group, rtype.kind, namespace or "" if rtype.namespaced else "", name)

    async def discovery(self, refresh: bool = False) -> Discovery:
        return self._discovery

    def warm(self, requests: int, gets: int = 0) -> None:
        """No connections to open."""

    async def _write(self, verb: str, rtype: ResourceType, name: str) -> None:
        self.log.append((verb, rtype.kind, name))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.write_delay)
        finally:
            self.in_flight -= 1

    def _read(self, key: Key) -> Obj | None:
        obj = self.objects.get(key)
        if obj is None:
            return None
        reads = self._reads[key] = self._reads.get(key, 0) + 1
        evolve = self.evolve.get((key[1], key[3]))
        if evolve is not None:
            evolve(obj, reads)
        return copy.deepcopy(obj)

    async def get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        self.log.append(("get", rtype.kind, name))
        return self._read(self._key(rtype, namespace, name))

    async def list(
        self, rtype: ResourceType, *, label_selector: str | None = None, namespace: str | None = None
    ) -> list[Obj]:
        self.log.append(("list", rtype.kind, namespace or ""))
        wanted = dict(part.split("=", 1) for part in (label_selector or "").split(",") if "=" in part)
        found = []
        for key, obj in list(self.objects.items()):
            labels = obj["metadata"].get("labels") or {}
            same_type = key[:2] == (rtype.group, rtype.kind) and (namespace is None or key[2] == namespace)
            if same_type and all(labels.get(k) == v for k, v in wanted.items()):
                read = self._read(key)
                assert read is not None
                found.append(read)
        return found

    async def list_with_version(self, rtype: ResourceType, **_: Any) -> tuple[list[Obj], str]:
        """The fake keeps no history to watch: refused, so a wait looks every interval (kapply.apply.observe.Wakes)."""
        raise ClusterError("API server says: no watches here (reason: MethodNotAllowed)", status=405)

    async def list_metadata(
        self,
        rtype: ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]:
        """The metadata of a type's objects: labels as `key` (present) or `key=value`, fields only as `type=...`."""
        self.log.append(("list_metadata", rtype.kind, namespace or ""))
        parts = [part for part in (label_selector or "").split(",") if part]
        wanted_type = (field_selector or "").removeprefix("type=") if field_selector else None
        found = []
        for key, obj in list(self.objects.items()):
            labels = obj["metadata"].get("labels") or {}
            same_type = key[:2] == (rtype.group, rtype.kind) and (namespace is None or key[2] == namespace)
            matches = all(
                labels.get(p.split("=", 1)[0]) == p.split("=", 1)[1] if "=" in p else p in labels for p in parts
            )
            if same_type and matches and (wanted_type is None or obj.get("type") == wanted_type):
                found.append(copy.deepcopy(obj["metadata"]))
        return found

    async def create(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        meta = obj["metadata"]
        await self._write("create", rtype, meta["name"])
        key = self._key(rtype, meta.get("namespace"), meta["name"])
        if key in self.objects:
            raise ClusterError("API server says: already exists (reason: AlreadyExists)", status=409)
        stored = copy.deepcopy(obj)
        stored["metadata"].update(uid=f"uid-{meta['name']}", resourceVersion=str(next(self._versions)), generation=1)
        if self.defaults is not None:
            self.defaults(stored)
        self.objects[key] = stored
        return copy.deepcopy(stored)

    async def update(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        meta = obj["metadata"]
        await self._write("update", rtype, meta["name"])
        key = self._key(rtype, meta.get("namespace"), meta["name"])
        current = self.objects.get(key)
        if current is None:
            raise ClusterError("API server says: not found (reason: NotFound)", status=404)
        if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ClusterError("API server says: conflict (reason: Conflict)", status=409)
        stored = copy.deepcopy(obj)
        stored["metadata"]["resourceVersion"] = str(next(self._versions))
        stored["metadata"]["generation"] = current["metadata"]["generation"] + 1
        if self.defaults is not None:
            self.defaults(stored)
        self.objects[key] = stored
        return copy.deepcopy(stored)

    async def patch(
        self, rtype: ResourceType, namespace: str | None, name: str, patch: Any, patch_type: str = ""
    ) -> Obj:
        await self._write("patch", rtype, name)
        obj = self.objects[self._key(rtype, namespace, name)]
        if patch_type == "application/merge-patch+json":
            obj["metadata"].setdefault("annotations", {}).update(patch["metadata"].get("annotations", {}))
        obj["metadata"]["resourceVersion"] = str(next(self._versions))
        return copy.deepcopy(obj)

    async def delete(
        self, rtype: ResourceType, namespace: str | None, name: str, *, uid: str | None = None, propagation: str = ""
    ) -> None:
        await self._write("delete", rtype, name)
        self.objects.pop(self._key(rtype, namespace, name), None)
