"""Kubernetes Events on an App, de-duplicated as client-go's event correlator does: the same reason and message about
the same App is one Event whose `count` and `lastTimestamp` grow, not a new Event at every sync. Failing to write an
Event never fails a reconcile."""

from __future__ import annotations

import contextlib
import hashlib

from kapply.controller import status as app_status
from kapply.controller.spec import API_VERSION, KIND
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, ResourceType

EVENTS = ResourceType("", "v1", "Event", "events", True, frozenset({"create", "get", "patch"}))
MAX_MESSAGE = 1024
COMPONENT = "kapply-controller"


def event_name(app: Obj, reason: str, message: str) -> str:
    """One name per App (by uid), reason and message: the key under which repeats are counted."""
    meta = app["metadata"]
    digest = hashlib.sha256(f"{meta.get('uid', '')}\0{reason}\0{message}".encode()).hexdigest()[:16]
    return f"{meta['name'][:200]}.{digest}"


def event(app: Obj, reason: str, message: str, *, warning: bool) -> Obj:
    meta = app["metadata"]
    now = app_status.now()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name(app, reason, message[:MAX_MESSAGE]), "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": API_VERSION,
            "kind": KIND,
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
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    async def emit(self, app: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        """Create the Event, or count one more of it when it exists (within the API server's event TTL, 1 h)."""
        body = event(app, reason, message, warning=warning)
        meta = body["metadata"]
        with contextlib.suppress(ClusterError):
            try:
                await self.cluster.create(EVENTS, body)
                return
            except ClusterError as e:
                if not e.conflict:
                    raise
            existing = await self.cluster.get(EVENTS, meta["namespace"], meta["name"])
            if existing is None:  # expired in between
                await self.cluster.create(EVENTS, body)
                return
            count = int(existing.get("count") or 1) + 1
            patch = {"count": count, "lastTimestamp": body["lastTimestamp"]}
            await self.cluster.patch(EVENTS, meta["namespace"], meta["name"], patch, "application/merge-patch+json")
