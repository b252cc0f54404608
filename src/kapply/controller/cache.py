"""What the controller's syncs read, kept from its watches (informer-style), so that a sync of an unchanged App asks
the API server nothing.

Stores: one per watched scope (a resource type, cluster-wide or in one namespace, and a label selector), fed by the
watches of `watch.DriftWatches`: a LIST, whose resourceVersion the WATCH then starts from, replaces the store (again
after 410 Gone); each event is applied in order; a bookmark only moves the version. Objects are keyed by uid and kept
as the API returns them, as compact JSON (every read decodes a fresh copy, which the deploy pipeline may change, and
JSON takes a fraction of the memory of the same object as Python dicts), indexed by the value of the store's label
(the app label: an app's objects) and by namespace and name (app records). Beside them the Apps themselves, from the
App watch, which the reconcile reads instead of GETting its App.

Reads through the cache: `CachedCluster`, the cluster client of an App's service account. While `cached_reads()` is
in effect (the planning of a deploy or a delete, never its run), a LIST by an app label is answered from a synced
store and a GET of an app record from the record store, but only where this token has had a LIST (a GET) of that type
and namespace answered by the API server before: the cache is filled with the controller's rights, and an App reads
through it only what its own account may read. Everything else, every write and every read while running, goes to
the API server. See docs/design.md ("The controller at scale") and docs/reconciler.md ("Security").
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Unpack

import orjson

from kapply import objects
from kapply.api import AsyncClient
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, RequestOptions, ResourceType
from kapply.resources.kubeconfig import KubeContext

Key = tuple[str, str]  # an App: (namespace, name)
StoreKey = tuple[str, str, str, str | None, str]  # group, version, plural, namespace (None: cluster-wide), selector
RECORD_SELECTOR = objects.IS_APP_LABEL  # app records carry this label (kapp's and kapply's alike)
Read = tuple[str, ResourceType, str | None, str]  # "list" (by a selector) or "get" (a name), type, namespace, either


def store_key(rtype: ResourceType, namespace: str | None, selector: str) -> StoreKey:
    return rtype.group, rtype.version, rtype.plural, namespace, selector


@dataclass(frozen=True, slots=True)
class Entry:
    """One object of a store: what indexes it, its resourceVersion, and the object itself as compact JSON."""

    namespace: str
    name: str
    value: str  # the value of the store's label
    version: str
    raw: bytes


def _json(obj: Obj) -> bytes:
    """`obj` as compact JSON, in a bytes object of its own size: orjson's own answer keeps the buffer it grew while
    encoding (measured: about 8 KB of memory for 1.4 KB of JSON), which a store holding thousands would pay for."""
    return memoryview(orjson.dumps(obj)).tobytes()


def _entry(obj: Obj, label: str) -> Entry:
    meta = objects.metadata(obj)
    return Entry(
        sys.intern(meta.get("namespace") or ""),  # shared by every object of the namespace
        meta.get("name") or "",
        sys.intern(str((meta.get("labels") or {}).get(label, ""))),  # by every object of the app
        str(meta.get("resourceVersion") or ""),
        _json(obj),
    )


class Store:
    """The objects one watch sees. `synced`: listed and followed since; only a synced store answers reads."""

    def __init__(self, label: str) -> None:
        self.label = label  # the label whose value indexes the objects
        self.version = ""  # of the last list, event or bookmark
        self.synced = False
        self.events = 0  # applied since the store was made (bookmarks aside)
        self._objects: dict[str, Entry] = {}  # uid -> entry
        self._by_value: dict[str, set[str]] = {}
        self._by_name: dict[tuple[str, str], str] = {}

    def __len__(self) -> int:
        return len(self._objects)

    @property
    def size(self) -> int:
        """Bytes of JSON held: what the store's memory grows with (each object once, whatever reads it)."""
        return sum(len(e.raw) for e in self._objects.values())

    def replace(self, listed: Iterable[Obj], version: str) -> set[str]:
        """A LIST's answer replaces everything (objects deleted while no watch ran go); returns the uids gone."""
        before = set(self._objects)
        self._objects.clear()
        self._by_value.clear()
        self._by_name.clear()
        for obj in listed:
            self._put(obj)
        self.version = version
        self.synced = True
        return before - set(self._objects)

    def apply(self, event: str, obj: Obj) -> None:
        """A watch event, in the order the watch sent it: ADDED and MODIFIED put the object, DELETED removes it, a
        BOOKMARK only moves the version."""
        version = objects.metadata(obj).get("resourceVersion")
        if event in ("ADDED", "MODIFIED"):
            self._put(obj)
            self.events += 1
        elif event == "DELETED":
            self._remove(objects.uid(obj))
            self.events += 1
        if version:
            self.version = str(version)

    def select(self, value: str, namespace: str | None) -> list[Obj]:
        """Fresh copies of the objects labeled `value` (in `namespace`, or everywhere)."""
        entries = (self._objects[uid] for uid in self._by_value.get(value, ()))
        return [orjson.loads(e.raw) for e in entries if namespace is None or e.namespace == namespace]

    def versions(self, value: str, namespace: str | None) -> frozenset[tuple[str, str]]:
        """(uid, resourceVersion) of what `select` gives, without decoding anything."""
        return frozenset(
            (uid, self._objects[uid].version)
            for uid in self._by_value.get(value, ())
            if namespace is None or self._objects[uid].namespace == namespace
        )

    def named(self, namespace: str, name: str) -> Obj | None:
        uid = self._by_name.get((namespace, name))
        return None if uid is None else orjson.loads(self._objects[uid].raw)

    def version_of(self, namespace: str, name: str) -> str:
        """The resourceVersion of what `named` gives ("" for none)."""
        uid = self._by_name.get((namespace, name))
        return "" if uid is None else self._objects[uid].version

    def _put(self, obj: Obj) -> None:
        uid = objects.uid(obj)
        self._remove(uid)
        entry = self._objects[uid] = _entry(obj, self.label)
        self._by_value.setdefault(entry.value, set()).add(uid)
        self._by_name[(entry.namespace, entry.name)] = uid

    def _remove(self, uid: str) -> None:
        entry = self._objects.pop(uid, None)
        if entry is None:
            return
        uids = self._by_value[entry.value]
        uids.discard(uid)
        if not uids:
            del self._by_value[entry.value]
        if self._by_name.get((entry.namespace, entry.name)) == uid:
            del self._by_name[(entry.namespace, entry.name)]


class AppStore:
    """The Apps as the App watch last showed them. An App's own writes (its status) come back through the watch."""

    def __init__(self) -> None:
        self._apps: dict[Key, tuple[str, int, bytes]] = {}  # uid, resourceVersion, the App as JSON

    def put(self, app: Obj) -> None:
        """Keep `app`, unless it is an older version of the App kept: a reconcile must never read an older spec than
        one seen before (an event delivered late, after a list that already showed a newer version)."""
        meta = objects.metadata(app)
        key, uid = (meta["namespace"], meta["name"]), objects.uid(app)
        version = _number(meta.get("resourceVersion"))
        kept = self._apps.get(key)
        if kept is not None and kept[0] == uid and version < kept[1]:
            return
        self._apps[key] = (uid, version, _json(app))

    def forget(self, key: Key) -> None:
        self._apps.pop(key, None)

    def get(self, key: Key) -> Obj | None:
        """A fresh copy of the App, None when the watch has not shown it (or showed it deleted)."""
        kept = self._apps.get(key)
        return None if kept is None else orjson.loads(kept[2])


def _number(version: Any) -> int:
    """etcd's resourceVersions are increasing integers (only one object's are compared here); anything else is 0."""
    try:
        return int(version)
    except (TypeError, ValueError):
        return 0


@dataclass
class Cache:
    """Every store, the app records' and the Apps."""

    stores: dict[StoreKey, Store] = field(default_factory=dict)
    apps: AppStore = field(default_factory=AppStore)

    def store(self, rtype: ResourceType, namespace: str | None, selector: str) -> Store:
        """The store of a watch (made, not yet synced, on first use)."""
        key = store_key(rtype, namespace, selector)
        found = self.stores.get(key)
        if found is None:  # indexed by the value of the label selected (the app label's: an app's objects)
            found = self.stores[key] = Store(selector)
        return found

    def drop(self, rtype: ResourceType, namespace: str | None, selector: str) -> None:
        """A watch given up: what it kept is no longer followed, so no longer served."""
        self.stores.pop(store_key(rtype, namespace, selector), None)

    def _synced(self, rtype: ResourceType, namespace: str | None, selector: str) -> Store | None:
        found = self.stores.get(store_key(rtype, namespace, selector))
        return found if found is not None and found.synced else None

    def _serving(self, rtype: ResourceType, selector: str | None, namespace: str | None) -> tuple[Store, str] | None:
        """The synced store that sees everything a LIST of `rtype` by `selector` (an app label) in `namespace` (None:
        cluster-wide) finds, and the label value; None when there is none."""
        value = app_label_value(selector)
        if value is None:
            return None
        for scope in (None, namespace) if namespace else (None,):
            found = self._synced(rtype, scope, objects.APP_LABEL)
            if found is not None:
                return found, value
        return None

    def labeled(self, rtype: ResourceType, selector: str | None, namespace: str | None) -> list[Obj] | None:
        """What a LIST of `rtype` by `selector` (`kapp.k14s.io/app=<value>`) in `namespace` (None: cluster-wide)
        answers, from a synced store that sees all of it; None when no store does."""
        serving = self._serving(rtype, selector, namespace)
        return None if serving is None else serving[0].select(serving[1], namespace)

    def record(self, rtype: ResourceType, namespace: str | None, name: str) -> tuple[bool, Obj | None]:
        """An app record (`namespace`/`name`) from the synced record store: (True, the ConfigMap, or None when there
        is no record of that name), or (False, None) when the cache cannot say (no synced store, not a ConfigMap)."""
        found = self._records(rtype, namespace)
        return (False, None) if found is None or not namespace else (True, found.named(namespace, name))

    def _records(self, rtype: ResourceType, namespace: str | None) -> Store | None:
        found = self._synced(rtype, None, RECORD_SELECTOR)
        return found if found is not None and (rtype.group, rtype.plural) == ("", "configmaps") and namespace else None

    def versions(self, read: Read) -> Hashable:
        """The versions of what `read` would give now, without decoding anything (None: the cache cannot say)."""
        verb, rtype, namespace, what = read
        if verb == "get":
            found = self._records(rtype, namespace)
            return None if found is None else found.version_of(namespace or "", what)
        serving = self._serving(rtype, what, namespace)
        return None if serving is None else serving[0].versions(serving[1], namespace)

    def unchanged(self, seen: Iterable[tuple[Read, Hashable]]) -> bool:
        """Whether every read of `seen` would give the same versions now (see `Reads`)."""
        return all(versions is not None and self.versions(read) == versions for read, versions in seen)

    def stats(self) -> tuple[int, int, int, int]:
        """(stores, objects, bytes of JSON, events applied) of every store."""
        stores = self.stores.values()
        return len(self.stores), sum(len(s) for s in stores), sum(s.size for s in stores), sum(s.events for s in stores)


def app_label_value(selector: str | None) -> str | None:
    """`<value>` of the selector `kapp.k14s.io/app=<value>` (the one an app's objects are listed by), else None."""
    key, sep, value = (selector or "").partition("=")
    if key != objects.APP_LABEL or not sep or not value or any(c in value for c in ",=!() "):
        return None
    return value


@dataclass
class Reads:
    """What the reads of one `cached_reads()` did: answered from the cache (`seen`: each read, with the versions of
    what it gave, taken as it was answered), or asked of the API server."""

    asked: int = 0
    seen: list[tuple[Read, Hashable]] = field(default_factory=list)

    @property
    def served(self) -> int:
        return len(self.seen)


_reads: ContextVar[Reads | None] = ContextVar("kapply_controller_cached_reads", default=None)


@contextlib.contextmanager
def cached_reads() -> Iterator[Reads]:
    """Within: a `CachedCluster` answers the reads it can from the cache (the tasks started within too)."""
    reads = Reads()
    token = _reads.set(reads)
    try:
        yield reads
    finally:
        _reads.reset(token)


Right = tuple[str, str, str, str | None]  # verb, group, plural, namespace (None: cluster-wide)


class CachedCluster(Cluster):
    """The cluster client of one App service-account token (see the module's docstring). It also remembers, for the
    token's life, what the API server answered about its rights: which LISTs and GETs it was allowed (the reads the
    cache may then answer), and which cluster-wide LISTs it was refused (a namespace-scoped account is refused them
    at every sync: refused once, they are not asked again; kapply then lists in the app's namespaces). A refusal in a
    namespace is never remembered: rights granted later count at once. A 401 (the token no longer valid: its service
    account deleted) calls `unauthorized`, so that the next sync asks for a new token."""

    def __init__(
        self, context: KubeContext, cache: Cache, unauthorized: Callable[[], None], *, timeout: float = 60
    ) -> None:
        super().__init__(context, timeout=timeout)
        self.cache = cache
        self.unauthorized = unauthorized
        self._allowed: set[Right] = set()
        self._refused: dict[Right, ClusterError] = {}

    async def request(self, method: str, path: str, **options: Unpack[RequestOptions]) -> Any:
        try:
            return await super().request(method, path, **options)
        except ClusterError as e:
            if e.unauthorized:
                self.unauthorized()
            raise

    async def get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        right: Right = ("get", rtype.group, rtype.plural, namespace)
        reads = _reads.get()
        if reads is not None and right in self._allowed:
            known, found = self.cache.record(rtype, namespace, name)
            if known:
                read: Read = ("get", rtype, namespace, name)
                reads.seen.append((read, self.cache.versions(read)))
                return found
        if reads is not None:
            reads.asked += 1
        obj = await super().get(rtype, namespace, name)  # 200 or 404: allowed either way
        self._allowed.add(right)
        return obj

    async def list(
        self, rtype: ResourceType, *, label_selector: str | None = None, namespace: str | None = None
    ) -> list[Obj]:
        right: Right = ("list", rtype.group, rtype.plural, namespace)
        refused = self._refused.get(right)
        if refused is not None:
            raise refused.again()
        reads = _reads.get()
        if reads is not None and right in self._allowed:
            found = self.cache.labeled(rtype, label_selector, namespace)
            if found is not None:
                listed: Read = ("list", rtype, namespace, label_selector or "")
                reads.seen.append((listed, self.cache.versions(listed)))
                return found
        if reads is not None:
            reads.asked += 1
        try:
            items = await super().list(rtype, label_selector=label_selector, namespace=namespace)
        except ClusterError as e:
            if e.forbidden and namespace is None:
                self._refused[right] = e
            raise
        self._allowed.add(right)
        return items


def app_client(
    controller: AsyncClient, token: str, namespace: str, cache: Cache, unauthorized: Callable[[], None]
) -> AsyncClient:
    """A client acting as an App's service account (`token`) whose cluster is a `CachedCluster`."""
    client = controller.with_token(token, namespace)
    client.cluster = CachedCluster(client.cluster.context, cache, unauthorized)
    return client
