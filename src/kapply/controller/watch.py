"""Watching: the Apps, and the objects Apps manage, so that drift is acted on within seconds, not at the next sync.

One watch per resource type in use by any App (never one per App): every object an App deploys carries the app label
`kapp.k14s.io/app=<value>`, so an event is routed to its App by that value. Events that are not drift are dropped:
status-only updates (same generation), controller-made objects (no kapp identity: Pods, ReplicaSets), and kapply's
own writes (the object's newest managedFields entry is kapply's).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from kapply import objects
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import FIELD_MANAGER, Cluster, ResourceType
from kapply.resources.labeled import is_transient

_log = logging.getLogger("kapply.controller")
RETRY = 2.0  # seconds before a failed watch starts again


def drift_fingerprint(obj: Obj) -> str:
    """What a change must alter to count as drift: the labels and annotations, and the generation of objects that
    have one (a spec change), or, for those that do not (ConfigMaps, Secrets), everything but bookkeeping."""
    meta = objects.metadata(obj)
    kept: Obj = {"labels": meta.get("labels"), "annotations": meta.get("annotations")}
    if "generation" in meta:
        kept["generation"] = meta["generation"]
    else:
        kept["body"] = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    return hashlib.sha1(orjson.dumps(kept, option=orjson.OPT_SORT_KEYS)).hexdigest()


def only_written_by(obj: Obj, manager: str) -> bool:
    """True when `manager` made the newest managedFields entry and no other manager wrote in the same second (entry
    times have one-second resolution: a tie may hide someone else's write, which must not be taken for ours)."""
    entries = [e for e in objects.metadata(obj).get("managedFields") or [] if isinstance(e, dict)]
    if not entries:
        return False
    newest = max(str(e.get("time") or "") for e in entries)
    return {str(e.get("manager") or "") for e in entries if str(e.get("time") or "") == newest} == {manager}


@dataclass
class DriftWatches:
    """The per-type watches and the routing from app label values to Apps."""

    cluster: Cluster
    notify: Callable[[tuple[str, str]], None]  # an App (namespace, name) whose objects drifted
    apps: dict[str, tuple[str, str]] = field(default_factory=dict)  # app label value -> App
    _tasks: dict[ResourceType, asyncio.Task[None]] = field(default_factory=dict)
    _seen: dict[str, str] = field(default_factory=dict)  # object uid -> drift fingerprint

    def track(self, app: tuple[str, str], label_value: str, types: list[ResourceType]) -> None:
        """Route events of objects labeled `label_value` to `app`, and watch their types."""
        self.apps[label_value] = app
        for rtype in types:
            if rtype not in self._tasks and "watch" in rtype.verbs:
                self._tasks[rtype] = asyncio.create_task(self._watch(rtype))

    def untrack(self, app: tuple[str, str]) -> None:
        for value in [v for v, a in self.apps.items() if a == app]:
            del self.apps[value]

    @property
    def watched(self) -> int:
        return len(self._tasks)

    def stop(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        self._tasks.clear()

    def _event(self, kind: str, obj: Obj) -> None:
        app = self.apps.get(objects.labels(obj).get(objects.APP_LABEL, ""))
        if app is None or is_transient(obj):
            return
        uid = objects.uid(obj)
        if kind == "DELETED":
            self._seen.pop(uid, None)
            self.notify(app)
            return
        fingerprint = drift_fingerprint(obj)
        previous = self._seen.get(uid)
        self._seen[uid] = fingerprint
        if previous is None or previous == fingerprint or only_written_by(obj, FIELD_MANAGER):
            return  # first sight (from the initial list), no drift, or kapply's own write
        self.notify(app)

    async def _watch(self, rtype: ResourceType) -> None:
        selector = objects.APP_LABEL  # every object of any app
        version = ""
        while True:
            try:
                if not version:  # the version first: events after it that the list shows too are deduplicated
                    version = await self._list_version(rtype, selector)
                    listed = await self.cluster.list(rtype, label_selector=selector)
                    for obj in listed:
                        self._event("ADDED", obj)
                    # What changed before this list (since the deploy that made us watch the type, or during a watch
                    # gap) is not an event: each App with objects here is looked at once more.
                    for app in {self.apps.get(objects.labels(o).get(objects.APP_LABEL, "")) for o in listed} - {None}:
                        self.notify(app)  # type: ignore[arg-type]
                async for kind, obj in self.cluster.watch(rtype, label_selector=selector, resource_version=version):
                    version = objects.metadata(obj).get("resourceVersion", version)
                    if kind != "BOOKMARK":
                        self._event(kind, obj)
            except ClusterError as e:
                if e.status == 410:
                    version = ""  # too old: list again
                    continue
                _log.warning("watching %s: %s", rtype.plural, e)
                if e.status in (401, 403, 404):
                    return  # not allowed or gone: the periodic sync still catches drift of this type
                await asyncio.sleep(RETRY)

    async def _list_version(self, rtype: ResourceType, selector: str) -> str:
        page = await self.cluster.request("GET", rtype.path(), params={"labelSelector": selector, "limit": "1"})
        return str(objects.metadata(page).get("resourceVersion", ""))
