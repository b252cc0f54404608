"""An in-memory namespace of Leases for the unit tests of leader election (test_controller_leader) and of the shards'
Leases (test_controller_shards)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from kapply.errors import ClusterError
from kapply.objects import Obj


class Leases:
    """The Leases of one namespace as an API server keeps them: resourceVersions, 409 on a stale write or a taken
    name; with `hang`, updates never answer (an API server that stopped answering this process)."""

    def __init__(self) -> None:
        self.stored: dict[str, Obj] = {}
        self.version = 0
        self.hang = False

    def _save(self, obj: Obj) -> Obj:
        self.version += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.stored[obj["metadata"]["name"]] = obj
        return copy.deepcopy(obj)

    async def list(self, rtype: Any, *, namespace: str | None = None, label_selector: str | None = None) -> list[Obj]:
        return [copy.deepcopy(lease) for lease in self.stored.values()]

    async def get(self, rtype: Any, namespace: str | None, name: str) -> Obj | None:
        return copy.deepcopy(self.stored[name]) if name in self.stored else None

    async def create(self, rtype: Any, obj: Obj) -> Obj:
        if obj["metadata"]["name"] in self.stored:
            raise ClusterError("already exists", status=409)
        return self._save(obj)

    async def update(self, rtype: Any, obj: Obj) -> Obj:
        if self.hang:
            await asyncio.Event().wait()
        stored = self.stored.get(obj["metadata"]["name"])
        if stored is None or stored["metadata"]["resourceVersion"] != obj["metadata"].get("resourceVersion"):
            raise ClusterError("conflict", status=409)
        return self._save(obj)

    def holder(self, name: str) -> str:
        return str((self.stored.get(name) or {}).get("spec", {}).get("holderIdentity") or "")
