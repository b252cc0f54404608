"""In-memory API servers for unit tests of kapply.resources.cluster's Cluster and of its callers: each subclasses the
real Cluster and answers the few calls the code under test makes, so the real writers and the real list-then-watch loop
run against them. `Stored` keeps objects as the API server does (resourceVersion checked on every write); `Scripted`
answers LISTs and watches from a script. Behaviour against a real API server is tested end to end, never here."""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson

from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, ResourceType
from kapply.resources.kubeconfig import KubeconfigFlags, load

# A kubeconfig whose server nothing listens on: the fakes answer every request before it would be sent.
OFFLINE = load(
    KubeconfigFlags(
        yaml=orjson.dumps(
            {
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        ).decode()
    )
)


class Stored(Cluster):
    """Objects as the API server keeps them: resourceVersion checked on every write (409), an update leaves the status
    alone, a PUT to /status changes nothing but the status. `rtype`: the one type asked for (None: any). `before_write`
    runs before each write (another writer getting in first); `fail` makes the next writes raise the given statuses."""

    def __init__(self, *stored: Obj, rtype: ResourceType | None = None) -> None:
        super().__init__(OFFLINE)
        self.rtype = rtype
        self.stored = {(o["metadata"]["namespace"], o["metadata"]["name"]): copy.deepcopy(o) for o in stored}
        self.versions = itertools.count(100)
        self.writes: list[tuple[str, Obj]] = []  # (verb, body)
        self.gets = 0
        self.before_write: Callable[[], None] = lambda: None
        self.fail: list[int] = []

    def touch(self, name: str = "web", **changes: Any) -> None:
        """Another writer changes the object `name` of namespace `ns` (a new resourceVersion)."""
        obj = self.stored[("ns", name)]
        obj.update(copy.deepcopy(changes))
        obj["metadata"]["resourceVersion"] = str(next(self.versions))

    def _type(self, rtype: ResourceType) -> None:
        assert self.rtype is None or rtype == self.rtype, rtype

    async def get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        self._type(rtype)
        self.gets += 1
        found = self.stored.get((namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def _check(self, verb: str, body: Obj) -> Obj:
        self.writes.append((verb, copy.deepcopy(body)))
        self.before_write()
        if self.fail:
            raise ClusterError("API server says: failed", status=self.fail.pop(0))
        meta = body["metadata"]
        current = self.stored.get((meta["namespace"], meta["name"]))
        if current is None:
            raise ClusterError("API server says: not found (reason: NotFound)", status=404)
        if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ClusterError("API server says: conflict (reason: Conflict)", status=409)
        return current

    async def update(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        self._type(rtype)
        current = self._check("update", obj)
        stored = {**copy.deepcopy(obj), "status": current.get("status")}
        stored["metadata"]["resourceVersion"] = str(next(self.versions))
        self.stored[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = stored
        return copy.deepcopy(stored)

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        assert body is not None
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        assert method == "PUT" and f"/namespaces/{namespace}/" in path and path.endswith(f"/{name}/status"), path
        assert self.rtype is None or path == self.rtype.path(namespace, name) + "/status", path
        current = self._check("status", body)
        current["status"] = copy.deepcopy(body["status"])
        current["metadata"]["resourceVersion"] = str(next(self.versions))
        return copy.deepcopy(current)

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.writes]


Listed = tuple[list[Obj], str] | int  # a LIST's items and version, or the status it fails with
# A watch's lines (an event among them: wait until it is set), then None (the server ends it) or a failure's status
Watched = tuple[list[bytes | asyncio.Event], int | None]


def event(kind: str, obj: Obj) -> bytes:
    """A watch stream's line."""
    return orjson.dumps({"type": kind, "object": obj})


class Scripted(Cluster):
    """Answers each LIST and each watch (of any one type) from its script, in order; once a script is done, a watch
    stays open (and `idle` is set) until the test cancels the loop. `sent`: what was asked, in order; `paths`: where."""

    def __init__(self, lists: list[Listed], watches: list[Watched]) -> None:
        super().__init__(OFFLINE)
        self.lists = lists
        self.watches = watches
        self.sent: list[str] = []
        self.paths: list[str] = []
        self.idle = asyncio.Event()

    async def request(self, method: str, path: str, *, params: dict[str, str] | None = None, **_: Any) -> Any:
        assert method == "GET" and params is not None
        self.sent.append(f"LIST {params.get('labelSelector', '')}")
        self.paths.append(path)
        answer = self.lists.pop(0)
        if isinstance(answer, int):
            raise ClusterError("API server says: no", status=answer)
        items, version = answer
        return {"metadata": {"resourceVersion": version}, "items": items}

    @asynccontextmanager
    async def stream_lines(
        self, path: str, params: dict[str, str], *, read_timeout: float | None
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        assert params["watch"] == "1" and params["allowWatchBookmarks"] == "true"
        self.sent.append(f"WATCH from {params.get('resourceVersion')}")
        self.paths.append(path)
        script = self.watches.pop(0) if self.watches else None

        async def lines() -> AsyncIterator[bytes]:
            if script is None:
                self.idle.set()
                await asyncio.Event().wait()
                return
            sent, end = script
            for line in sent:
                if isinstance(line, asyncio.Event):
                    await line.wait()
                else:
                    yield line
            if end is not None:
                raise ClusterError("Request GET failed: ServerDisconnectedError", status=end)

        yield lines()
