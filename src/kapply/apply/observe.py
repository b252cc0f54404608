"""Reading the current state of every resource being waited on, a few requests per tick.

Waiting on N resources costs one LIST per (type, namespace) among them per tick, not one
GET per resource: the app label selects the app's objects, and the association label
groups the controller-made children (ReplicaSets, Pods) under their parents, since both
labels are copied into pod templates. A type with a single waited object is read with a
GET instead, which is cheaper than a LIST.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field

from kapply import objects
from kapply.errors import KapplyError
from kapply.objects import Obj, ResourceKey, api_group, key_of
from kapply.resources.cluster import Cluster, Discovery, ResourceType

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Snapshot:
    objects: dict[ResourceKey, Obj] = field(default_factory=dict)  # waited objects that exist now
    children: dict[str, list[Obj]] = field(default_factory=dict)  # association label value -> children

    def get(self, obj: Obj) -> Obj | None:
        return self.objects.get(key_of(obj))

    def children_of(self, obj: Obj) -> list[Obj]:
        association = objects.labels(obj).get(objects.ASSOCIATION_LABEL)
        return self.children.get(association, []) if association else []


def _rtype(discovery: Discovery, obj: Obj) -> ResourceType | None:
    return discovery.find(obj["apiVersion"], obj["kind"]) or discovery.preferred(
        api_group(obj["apiVersion"]), obj["kind"]
    )


async def snapshot(
    cluster: Cluster,
    discovery: Discovery,
    waited: Sequence[Obj],
    selector: str,
    child_types: Iterable[tuple[str, str]] = (),
    concurrency: int = 5,
) -> Snapshot:
    """The live copies of `waited` (absent when gone) and, for parents, their children of `child_types`
    ((group, plural) pairs) in the parents' namespaces."""
    groups = _by_type(discovery, waited)

    async def read(rtype: ResourceType, namespace: str | None, objs: list[Obj]) -> list[Obj]:
        if len(objs) == 1:
            found = await cluster.get(rtype, namespace, objs[0]["metadata"]["name"])
            if found is not None:
                found["apiVersion"], found["kind"] = rtype.api_version, rtype.kind
            return [found] if found is not None else []
        return await cluster.list(rtype, label_selector=selector, namespace=namespace)

    reads = [read(rtype, ns, objs) for (rtype, ns), objs in groups.items()]
    reads += [
        cluster.list(rtype, label_selector=selector, namespace=ns)
        for rtype, ns in _children(discovery, waited, child_types)
    ]
    semaphore = asyncio.Semaphore(concurrency)

    async def bounded(read: Awaitable[list[Obj]]) -> list[Obj]:
        async with semaphore:
            return await read

    results = await asyncio.gather(*(bounded(r) for r in reads))

    waited_objects: dict[ResourceKey, Obj] = {}
    for found in results[: len(groups)]:
        for obj in found:
            waited_objects[key_of(obj)] = obj
    children: dict[str, list[Obj]] = defaultdict(list)
    for found in results[len(groups) :]:
        for obj in found:
            association = objects.labels(obj).get(objects.ASSOCIATION_LABEL)
            if association:
                children[association].append(obj)
    return Snapshot(waited_objects, dict(children))


Place = tuple[ResourceType, str | None]  # a type, in a namespace (None: cluster-wide)


def _by_type(discovery: Discovery, waited: Sequence[Obj]) -> dict[Place, list[Obj]]:
    groups: dict[Place, list[Obj]] = defaultdict(list)
    for obj in waited:
        rtype = _rtype(discovery, obj)
        if rtype is not None:
            groups[(rtype, objects.namespace(obj) or None)].append(obj)
    return groups


def _children(discovery: Discovery, waited: Sequence[Obj], child_types: Iterable[tuple[str, str]]) -> list[Place]:
    wanted = set(child_types)
    namespaces = {objects.namespace(obj) for obj in waited} - {""}
    return [(t, ns) for t in discovery.listable() if (t.group, t.plural) in wanted for ns in sorted(namespaces)]


def places(discovery: Discovery, waited: Sequence[Obj]) -> list[Place]:
    """The types of `waited` in their namespaces: where `snapshot` reads them."""
    return list(_by_type(discovery, waited))


class Wakes:
    """Watches that end a wait's sleep as soon as a waited object changes (kapply beyond kapp, which looks again
    only every `--wait-check-interval`, 3 s by default: on average half of it lost after each change converged, and
    each look a round trip at a distance). A watch follows each place the waited objects are in (`places`; not their
    children's, whose changes a parent's status shows when they matter), by the app's label selector, from the
    version of a one-object LIST made when it starts; any event but a bookmark wakes the sleeper, who then reads as
    before (the watch carries no state of its own to trust). A place whose watch cannot be had (no right to watch, a
    version too old, the connection broken) is looked at only every interval, as kapp's: the watch is an
    accelerator, never what a verdict rests on. Watches hold connections of their own, not the pool's slots."""

    LIMIT = 8  # watches at most: an app across many namespaces has its other places looked at every interval
    RESTART_AFTER = 60.0  # a watch the server ended after this long is started again; an earlier end stops it
    WATCH_SECONDS = 300  # how long the server keeps each watch open (it ends it after about that long)

    def __init__(self, cluster: Cluster, selector: str) -> None:
        self.cluster = cluster
        self.selector = selector
        self._changed = asyncio.Event()
        self._watches: dict[Place, asyncio.Task[None]] = {}

    def follow(self, where: Iterable[Place]) -> None:
        """Watch each place not yet watched (a place whose watch stopped is not tried again), LIMIT in all."""
        for place in where:
            if place not in self._watches and len(self._watches) < self.LIMIT:
                self._watches[place] = asyncio.ensure_future(self._watch(*place))

    def clear(self) -> None:
        """What changed so far is being read now: only a later change wakes the next sleep early."""
        self._changed.clear()

    async def sleep(self, longest: float, shortest: float = 0.0) -> None:
        """Until a followed place changes, but not before `shortest` seconds (a change's burst of events, read once),
        and no longer than `longest`."""
        started = time.monotonic()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(longest):
                await self._changed.wait()
        if (left := min(shortest, longest) - (time.monotonic() - started)) > 0:
            await asyncio.sleep(left)

    async def close(self) -> None:
        watches, self._watches = list(self._watches.values()), {}
        for watch in watches:
            watch.cancel()
        await asyncio.gather(*watches, return_exceptions=True)

    async def _watch(self, rtype: ResourceType, namespace: str | None) -> None:
        where = rtype.path(namespace)
        try:
            _, version = await self.cluster.list_with_version(
                rtype, namespace=namespace, label_selector=self.selector, limit=1
            )
            while True:
                started = time.monotonic()
                async for event, obj in self.cluster.watch(
                    rtype,
                    namespace=namespace,
                    label_selector=self.selector,
                    resource_version=version,
                    timeout_seconds=self.WATCH_SECONDS,
                ):
                    version = str(objects.metadata(obj).get("resourceVersion") or version)
                    if event != "BOOKMARK":
                        self._changed.set()
                if time.monotonic() - started < self.RESTART_AFTER:
                    _log.debug("Watching %s for changes: ended early; looked at every interval", where)
                    return
        except (KapplyError, ValueError) as e:  # ValueError: an event that is not JSON
            _log.debug("Watching %s for changes: %s; looked at every interval", where, e)
