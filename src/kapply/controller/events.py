"""Kubernetes Events on an App, de-duplicated as client-go's event correlator does: the same reason and message about
the same App is one Event whose `count` and `lastTimestamp` grow, not a new Event at every sync. As the correlator,
the recorder remembers the count of the Events it wrote (the last CACHE_SIZE of them) and patches a repeat directly;
one it does not remember (after a restart, or another replica's) is created, and counted on the existing one when
the API server says it exists. Failing to write an Event never fails a reconcile."""

from __future__ import annotations

import contextlib
import hashlib
from collections import OrderedDict

from kapply.controller import status as app_status
from kapply.controller.vocabulary import Resource
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, ResourceType

EVENTS = ResourceType("", "v1", "Event", "events", True, frozenset({"create", "get", "patch"}))
MAX_MESSAGE = 1024
COMPONENT = "kapply-controller"
CACHE_SIZE = 4096  # Events whose count is remembered (client-go's correlator keeps as many)


def event_name(app: Obj, reason: str, message: str) -> str:
    """One name per App (by uid), reason and message: the key under which repeats are counted."""
    meta = app["metadata"]
    digest = hashlib.sha256(f"{meta.get('uid', '')}\0{reason}\0{message}".encode()).hexdigest()[:16]
    return f"{meta['name'][:200]}.{digest}"


def event(app: Obj, reason: str, message: str, *, warning: bool, about: Resource) -> Obj:
    """The Event about `app`, an App of the resource `about` (the controller's vocabulary's)."""
    meta = app["metadata"]
    now = app_status.now()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name(app, reason, message[:MAX_MESSAGE]), "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": about.api_version,
            "kind": about.kind,
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta.get("uid", ""),
        },
        "reason": reason,
        "message": message[:MAX_MESSAGE],
        "type": "Warning" if warning else "Normal",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


class Recorder:
    def __init__(self, cluster: Cluster, about: Resource) -> None:
        self.cluster = cluster
        self.about = about  # the App resource of the controller's vocabulary
        self._counts: OrderedDict[tuple[str, str], int] = OrderedDict()  # (namespace, name) -> count written

    async def emit(self, app: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        """Count one more of the Event when it exists (within the API server's event TTL, 1 h), else create it."""
        body = event(app, reason, message, warning=warning, about=self.about)
        key = (body["metadata"]["namespace"], body["metadata"]["name"])
        with contextlib.suppress(ClusterError):
            if (count := self._counts.get(key)) is not None:
                try:
                    await self._count(key, count + 1, body["lastTimestamp"])
                    return
                except ClusterError as e:
                    if not e.not_found:  # else it expired: created anew
                        raise
            self._remember(key, await self._create(body))

    async def _create(self, body: Obj) -> int:
        """Create the Event, or count one more on the one of its name; returns its count."""
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        try:
            await self.cluster.create(EVENTS, body)
            return 1
        except ClusterError as e:
            if not e.conflict:
                raise
        existing = await self.cluster.get(EVENTS, namespace, name)
        if existing is None:  # expired in between
            await self.cluster.create(EVENTS, body)
            return 1
        count = int(existing.get("count") or 1) + 1
        await self._count((namespace, name), count, body["lastTimestamp"])
        return count

    async def _count(self, key: tuple[str, str], count: int, when: str) -> None:
        patch = {"count": count, "lastTimestamp": when}
        await self.cluster.patch(EVENTS, key[0], key[1], patch, "application/merge-patch+json")
        self._remember(key, count)

    def _remember(self, key: tuple[str, str], count: int) -> None:
        self._counts[key] = count
        self._counts.move_to_end(key)
        if len(self._counts) > CACHE_SIZE:
            self._counts.popitem(last=False)
