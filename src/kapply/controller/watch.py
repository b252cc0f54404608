"""Watching: the Apps, and the objects Apps manage, so that drift is acted on within seconds, not at the next sync.

One watch per resource type in use by any App (never one per App): every object an App deploys carries the app label
`kapp.k14s.io/app=<value>`, so an event is routed to its App by that value. Events that are not drift are dropped:
status-only updates (same generation), controller-made objects (no kapp identity: Pods, ReplicaSets), and kapply's
own writes (the object's newest managedFields entry is kapply's).

What the watches see is also kept (`cache.Store`, one per watch, informer-style: a LIST, then a WATCH from the list's
resourceVersion, a LIST again after 410 Gone), and so are the app records (one more watch, of ConfigMaps labeled
`kapp.k14s.io/is-app`): a sync of an unchanged App plans from memory (cache.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from kapply import objects
from kapply.api import is_transient
from kapply.controller.cache import RECORD_SELECTOR, Cache, Store
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import FIELD_MANAGER, Cluster, Connect, Refusal, ResourceType, list_then_watch

_log = logging.getLogger("kapply.controller")
RETRY = 2.0  # seconds before a failed watch starts again
REPORT = 60.0  # seconds between two reports of the cache's size in the log (when it changed)
RECORDS = ResourceType("", "v1", "ConfigMap", "configmaps", True, frozenset({"get", "list", "watch"}))


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


def _no_event(kind: str, obj: Obj) -> None:
    return None


def _no_list(listed: list[Obj], gone: set[str]) -> None:
    return None


@dataclass
class Following:
    """A store as `list_then_watch` keeps it (its follower), each event applied before `event` hears of it (a
    reconcile it asks for reads the store), `relisted` told each list's objects and the uids it no longer found. After
    a broken watch the store serves nothing until the next event or bookmark shows it followed again (or a list)."""

    store: Store
    event: Callable[[str, Obj], None] = _no_event
    relisted: Callable[[list[Obj], set[str]], None] = _no_list

    @property
    def version(self) -> str:
        return self.store.version

    def replace(self, listed: list[Obj], version: str) -> None:
        self.relisted(listed, self.store.replace(listed, version))

    def apply(self, event: str, obj: Obj) -> None:
        self.store.apply(event, obj)
        self.store.synced = True
        if event != "BOOKMARK":
            self.event(event, obj)

    def lost(self) -> None:
        self.store.synced = False


Scope = tuple[ResourceType, str | None]  # a type, cluster-wide (None) or in one namespace


@dataclass
class DriftWatches:
    """The per-type watches and the routing from app label values to Apps; what they see is kept in `cache`.

    Each type is watched cluster-wide with the controller's rights. A type the controller may not list or watch
    (Secrets: its ClusterRole leaves them out on purpose) is watched instead in each namespace Apps deploy it to, with
    the service account of an App deploying there, so an App's Secrets are watched with rights its own account has."""

    cluster: Cluster
    notify: Callable[[tuple[str, str]], None]  # an App (namespace, name) whose objects drifted
    cache: Cache = field(default_factory=Cache)
    # app label value -> the Apps whose records claim it: a record lies in its tenant's namespace, so a tenant may
    # claim another App's value; every claimant is told (each then plans with its own account's rights), so a claim
    # never takes another App's drift away from it.
    apps: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    _tasks: dict[Scope, asyncio.Task[None]] = field(default_factory=dict)
    _records: list[asyncio.Task[None]] = field(default_factory=list)  # the record watch and the size report
    _seen: dict[str, str] = field(default_factory=dict)  # object uid -> drift fingerprint
    _denied: set[ResourceType] = field(default_factory=set)  # types the controller may not watch cluster-wide
    _given_up: set[Scope] = field(default_factory=set)  # not allowed there either: left to the periodic sync
    _uses: dict[tuple[str, str], tuple[list[ResourceType], tuple[str, ...], Connect]] = field(default_factory=dict)

    def track(
        self,
        app: tuple[str, str],
        label_value: str,
        types: list[ResourceType],
        namespaces: tuple[str, ...],
        connect: Connect,
    ) -> None:
        """Route events of objects labeled `label_value` to `app`, and watch their types (`namespaces`: where the
        App's namespaced objects are; `connect`: the App's service account, for types watched per namespace)."""
        if not self._records:
            self._records += [asyncio.create_task(self._watch_records()), asyncio.create_task(self._report())]
        for value in [v for v, claimants in self.apps.items() if app in claimants and v != label_value]:
            self._unclaim(value, app)  # the App's label changed (a rename)
        self.apps.setdefault(label_value, set()).add(app)
        self._uses[app] = (types, namespaces, connect)
        for rtype in types:
            if "watch" not in rtype.verbs:
                continue
            if rtype in self._denied:
                self._watch_per_namespace(rtype, namespaces, connect)
            elif (rtype, None) not in self._tasks:
                self._tasks[(rtype, None)] = asyncio.create_task(self._watch(rtype, None, None))

    def untrack(self, app: tuple[str, str]) -> None:
        for value in [v for v, claimants in self.apps.items() if app in claimants]:
            self._unclaim(value, app)
        self._uses.pop(app, None)

    def _unclaim(self, value: str, app: tuple[str, str]) -> None:
        self.apps[value].discard(app)
        if not self.apps[value]:
            del self.apps[value]

    def _claimants(self, obj: Obj) -> set[tuple[str, str]]:
        return self.apps.get(objects.labels(obj).get(objects.APP_LABEL, ""), set())

    @property
    def watched(self) -> int:
        return len(self._tasks)

    def stop(self) -> None:
        for task in [*self._tasks.values(), *self._records]:
            task.cancel()
        self._tasks.clear()
        self._records.clear()

    def _watch_per_namespace(self, rtype: ResourceType, namespaces: tuple[str, ...], connect: Connect) -> None:
        for ns in namespaces if rtype.namespaced else ():
            if (rtype, ns) not in self._tasks and (rtype, ns) not in self._given_up:
                self._tasks[(rtype, ns)] = asyncio.create_task(self._watch(rtype, ns, connect))

    def _denied_cluster_wide(self, rtype: ResourceType) -> None:
        """The controller may not watch `rtype` everywhere: each App using it has it watched in its namespaces."""
        self._denied.add(rtype)
        for types, namespaces, connect in list(self._uses.values()):
            if rtype in types:
                self._watch_per_namespace(rtype, namespaces, connect)

    def _event(self, kind: str, obj: Obj) -> None:
        claimants = self._claimants(obj)
        if not claimants or is_transient(obj):
            return
        uid = objects.uid(obj)
        if kind == "DELETED":
            self._seen.pop(uid, None)
            self._notify(claimants)
            return
        fingerprint = drift_fingerprint(obj)
        previous = self._seen.get(uid)
        self._seen[uid] = fingerprint
        if previous is None or previous == fingerprint or only_written_by(obj, FIELD_MANAGER):
            return  # first sight (from the initial list), no drift, or kapply's own write
        self._notify(claimants)

    def _notify(self, claimants: set[tuple[str, str]]) -> None:
        for app in sorted(claimants):
            self.notify(app)

    async def _watch(self, rtype: ResourceType, namespace: str | None, connect: Connect | None) -> None:
        """Keep the type's store (kapply.resources.cluster.list_then_watch: a LIST, then a WATCH from its version,
        a LIST again after 410 Gone), each change told to `_event`; a connection with an App's account is asked for
        afresh each time (its token is renewed)."""
        where = f"{rtype.plural} in {namespace}" if namespace else rtype.plural

        def relisted(listed: list[Obj], gone: set[str]) -> None:
            for uid in gone:  # deleted while no watch ran (before a 410 Gone)
                self._seen.pop(uid, None)
            for obj in listed:
                self._event("ADDED", obj)
            # What changed before this list (since the deploy that made us watch the type, or during a watch gap) is
            # not an event: each App with objects here is looked at once more.
            self._notify({app for o in listed for app in self._claimants(o)})

        def refused(refusal: Refusal, error: ClusterError) -> None:
            self.cache.drop(rtype, namespace, objects.APP_LABEL)
            if refusal is Refusal.FORBIDDEN and namespace is None:
                _log.info("watching %s: not allowed cluster-wide; watched per namespace with Apps' accounts", where)
                del self._tasks[(rtype, None)]
                self._denied_cluster_wide(rtype)
                return
            _log.warning("watching %s: %s", where, error)  # the periodic sync still catches drift of this type
            self._tasks.pop((rtype, namespace), None)
            self._given_up.add((rtype, namespace))

        store = self.cache.store(rtype, namespace, objects.APP_LABEL)
        try:
            await list_then_watch(
                connect or self.cluster,
                rtype,
                Following(store, self._event, relisted),
                namespace=namespace,
                label_selector=objects.APP_LABEL,
                refused=refused,
                retry=RETRY,
            )
        except KapplyError as e:  # no token for the App's account any more
            _log.warning("watching %s: %s", where, e)
            self._tasks.pop((rtype, namespace), None)
            self.cache.drop(rtype, namespace, objects.APP_LABEL)

    async def _watch_records(self) -> None:
        """The app records of every namespace, with the controller's rights (for the GETs of records that deploys and
        deletes make); without them (401, 403), records are read from the API server."""

        def refused(refusal: Refusal, error: ClusterError) -> None:
            _log.warning("watching app records: %s", error)
            self.cache.drop(RECORDS, None, RECORD_SELECTOR)

        store = self.cache.store(RECORDS, None, RECORD_SELECTOR)
        await list_then_watch(
            self.cluster, RECORDS, Following(store), label_selector=RECORD_SELECTOR, refused=refused, retry=RETRY
        )

    async def _report(self) -> None:
        """The cache's size in the log, every REPORT seconds while it changes, with the watch events applied since the
        last report (every kapp app's objects in the watched types, not only the Apps')."""
        said = (0, 0, 0, 0)
        while True:
            await asyncio.sleep(REPORT)
            stores, count, size, events = now = self.cache.stats()
            if now != said:
                _log.info(
                    "cache: %d objects, %.1f MB of JSON, in %d stores; %d events in %.0fs",
                    count,
                    size / 1e6,
                    stores,
                    events - said[3],
                    REPORT,
                )
                said = now
