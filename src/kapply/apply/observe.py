"""Reading the current state of every resource being waited on, a few requests per tick.

Waiting on N resources costs one LIST per (type, namespace) among them per tick, not one
GET per resource: the app label selects the app's objects, and the association label
groups the controller-made children (ReplicaSets, Pods) under their parents, since both
labels are copied into pod templates. A type with a single waited object is read with a
GET instead, which is cheaper than a LIST.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field

from kapply import objects
from kapply.objects import Obj, ResourceKey, api_group, key_of
from kapply.resources.cluster import Cluster, Discovery, ResourceType


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
    groups: dict[tuple[ResourceType, str | None], list[Obj]] = defaultdict(list)
    for obj in waited:
        rtype = _rtype(discovery, obj)
        if rtype is not None:
            groups[(rtype, objects.namespace(obj) or None)].append(obj)

    async def read(rtype: ResourceType, namespace: str | None, objs: list[Obj]) -> list[Obj]:
        if len(objs) == 1:
            found = await cluster.get(rtype, namespace, objs[0]["metadata"]["name"])
            if found is not None:
                found["apiVersion"], found["kind"] = rtype.api_version, rtype.kind
            return [found] if found is not None else []
        return await cluster.list(rtype, label_selector=selector, namespace=namespace)

    wanted_children = set(child_types)
    child_rtypes = [t for t in discovery.listable() if (t.group, t.plural) in wanted_children]
    namespaces = {objects.namespace(obj) for obj in waited} - {""}
    reads = [read(rtype, ns, objs) for (rtype, ns), objs in groups.items()]
    reads += [cluster.list(rtype, label_selector=selector, namespace=ns) for rtype in child_rtypes for ns in namespaces]
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
