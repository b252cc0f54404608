"""Finding an app's resources on the cluster by its label.

Controllers copy the app label onto what they create (a Deployment's ReplicaSets and
Pods inherit it from the pod template). kapp tells its own resources from those by
the identity annotation it writes on every create and update: a labeled object
without a valid one is *transient* and is never deleted by a deploy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kapply import objects
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj, api_group, key_of
from kapply.resources.cluster import Cluster, Discovery, ResourceType
from kapply.resources.filters import FilterError, Operator, Requirement, parse_selector


def identity_value(obj: Obj) -> str:
    return f"v1;{key_of(obj)};{objects.api_version(obj)}"


def is_transient(obj: Obj) -> bool:
    parts = objects.annotations(obj).get(objects.IDENTITY, "").split(";")
    return not (len(parts) == 3 and parts[0] == "v1" and parts[1] == str(key_of(obj)))


def identity_version(obj: Obj) -> str:
    """The API version the identity annotation names: the one the object was last written at; "" without one."""
    parts = objects.annotations(obj).get(objects.IDENTITY, "").split(";")
    return parts[2] if len(parts) == 3 and parts[0] == "v1" else ""


def with_identity(obj: Obj) -> Obj:
    return objects.with_annotations(obj, {objects.IDENTITY: identity_value(obj)})


def _only(text: str) -> Requirement | None:
    """The one requirement `text` parses to as a label selector; None when it parses to anything else or not at all."""
    try:
        requirements = parse_selector(text).requirements
    except FilterError:
        return None
    return requirements[0] if len(requirements) == 1 else None


def is_label_key(key: str) -> bool:
    return _only(key) == Requirement(key, Operator.EXISTS)


def is_label_value(value: str) -> bool:
    return _only(f"k={value}") == Requirement("k", Operator.EQUALS, (value,))


def equality_selector(key: str, value: str) -> str:
    """The selector `key=value`, built only from a label key and a label value: pasted text from a record could
    otherwise change the operator (key `app!` makes `app!=value`) or add requirements (value `x,other`)."""
    if not is_label_key(key):
        raise KapplyError(f"Expected a label key, but was {key!r}")
    if not is_label_value(value):
        raise KapplyError(f"Expected a label value, but was {value!r}")
    return f"{key}={value}"


def types_in_scope(discovery: Discovery, group_kinds: Iterable[tuple[str, str]] | None) -> list[ResourceType]:
    """Listable types, limited to the given (group, kind)s unless None (then every listable type, except events,
    which are never an app's and are the largest collection on most clusters)."""
    listable = discovery.listable()
    if group_kinds is None:
        return [
            t
            for t in listable
            if (t.group, t.kind) not in {("", "Event"), ("events.k8s.io", "Event"), ("", "ComponentStatus")}
        ]
    wanted = set(group_kinds)
    return [t for t in listable if (t.group, t.kind) in wanted]


@dataclass(frozen=True)
class Listed:
    """What cluster-wide LISTs found ahead of `list_labeled` (see `list_cluster_wide`)."""

    by_type: Mapping[ResourceType, Sequence[Obj]]  # the objects of each type listed
    forbidden: frozenset[ResourceType]  # the user may not list them cluster-wide


async def list_cluster_wide(cluster: Cluster, rtypes: Iterable[ResourceType], selector: str) -> Listed:
    """One cluster-wide LIST per type, concurrently, ahead of knowing every type `list_labeled` will need (a deploy
    lists the types its app used while it still reads the manifests). Never fails: a type whose LIST fails is left
    for `list_labeled`, which lists it again and says why it failed where a deploy always has."""

    async def one(rtype: ResourceType) -> list[Obj] | KapplyError:
        try:
            return await cluster.list(rtype, label_selector=selector)
        except KapplyError as e:
            return e

    types = list(rtypes)
    results = dict(zip(types, await asyncio.gather(*(one(t) for t in types)), strict=True))
    return Listed(
        {t: r for t, r in results.items() if not isinstance(r, KapplyError)},
        frozenset(t for t, r in results.items() if isinstance(r, ClusterError) and r.forbidden),
    )


async def list_labeled(
    cluster: Cluster,
    rtypes: Iterable[ResourceType],
    selector: str,
    fallback_namespaces: Iterable[str] = (),
    *,
    scope_to_fallback: bool = False,
    listed: Listed | None = None,
    needed: Collection[tuple[str, str]] = (),
) -> list[Obj]:
    """Every object with the label selector among the types: one cluster-wide LIST per type, concurrently, but for
    the types `listed` already has (with the same selector).

    A type answered 404 is no longer served: discovered and then gone (its CRD deleted by another app's delete, say).
    It has no objects left, so it is skipped, unless it is one of the (group, kind)s `needed` (those of the
    resources being deployed), whose error is the deploy's.

    A user whose rights end at some namespaces may not list cluster-wide: as kapp, kapply then lists a namespaced
    type in each of the `fallback_namespaces` (the namespaces the app uses), and skips what it may not list: a
    cluster-scoped type (a namespace-only user cannot have created one), and a type it may not list even in a
    namespace (the `admin` role may not list PodTemplates, say), as kapp does. What the user may not list, kapply
    does not see: it neither prunes nor deletes it. With `scope_to_fallback` (kapp's
    --dangerous-scope-to-fallback-allowed-namespaces) namespaced types are listed in those namespaces only, never
    cluster-wide: what the app has elsewhere is not seen."""
    namespaces = sorted(set(fallback_namespaces) - {"", "(cluster)"})
    ahead = listed.by_type if listed is not None else {}
    forbidden = listed.forbidden if listed is not None else frozenset()

    needs = set(needed)

    def vanished(rtype: ResourceType, e: ClusterError) -> bool:
        return e.not_found and (rtype.group, rtype.kind) not in needs

    async def in_namespace(rtype: ResourceType, namespace: str) -> list[Obj]:
        try:
            return await cluster.list(rtype, label_selector=selector, namespace=namespace)
        except ClusterError as e:
            if not e.forbidden and not vanished(rtype, e):
                raise
            return []

    async def one(rtype: ResourceType) -> list[Obj]:
        cluster_wide = not (scope_to_fallback and rtype.namespaced)
        if cluster_wide and rtype in ahead:
            return list(ahead[rtype])
        try:
            if cluster_wide and rtype not in forbidden:
                return await cluster.list(rtype, label_selector=selector)
        except ClusterError as e:
            if vanished(rtype, e):
                return []
            if not e.forbidden:
                raise
        if not rtype.namespaced:
            return []
        per_namespace = await asyncio.gather(*(in_namespace(rtype, ns) for ns in namespaces))
        return [obj for objs in per_namespace for obj in objs]

    results = await asyncio.gather(*(one(t) for t in rtypes))
    return [obj for objs in results for obj in objs]


LIST_FROM = 20  # resources of one type in one namespace from which one LIST costs less than a GET each
# Lookups sent at once from which GETs give way to LISTs (`_listed_too`): the connections a step has open once its
# first requests went (the nodes, discovery's two, the record's two names); more would each open one (TCP and TLS: 2
# round trips at a distance) or wait for one (a round trip).
LOOKUPS_AT_ONCE = 5


async def get_each(cluster: Cluster, discovery: Discovery, resources: Iterable[Obj]) -> list[Obj]:
    """The live copy of each resource that exists (none for one the server is still to name): a GET each for a few
    of one type and namespace, one LIST of that type and namespace for more (a first deploy of 1,000 ConfigMaps costs
    one request, not 1,000), and for fewer too when the GETs would be more than LOOKUPS_AT_ONCE (`_listed_too`); a
    LIST that RBAC forbids falls back to the GETs."""
    wanted: dict[tuple[ResourceType, str | None], list[Obj]] = {}
    for res in resources:
        if not res["metadata"].get("name"):
            continue  # only `generateName`: the server is still to name it, so nothing has its name yet
        rtype = discovery.find(res["apiVersion"], res["kind"]) or discovery.preferred(
            api_group(res["apiVersion"]), res["kind"]
        )
        if rtype is not None:  # else a custom resource whose CRD is in the same deploy
            wanted.setdefault((rtype, res["metadata"].get("namespace") or None), []).append(res)

    async def one(rtype: ResourceType, res: Obj) -> list[Obj]:
        obj = await cluster.get(rtype, res["metadata"].get("namespace"), res["metadata"]["name"])
        if obj is None:
            return []
        obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind
        return [obj]

    async def each(rtype: ResourceType, members: list[Obj]) -> list[Obj]:
        found = await asyncio.gather(*(one(rtype, res) for res in members))
        return [obj for objs in found for obj in objs]

    listed_too = _listed_too(wanted)

    async def listed(rtype: ResourceType, namespace: str | None, members: list[Obj]) -> list[Obj]:
        if len(members) < LIST_FROM and (rtype, namespace) not in listed_too:
            return await each(rtype, members)
        try:
            items = await cluster.list(rtype, namespace=namespace)
        except ClusterError as e:
            if not e.forbidden:
                raise
            return await each(rtype, members)
        names = {res["metadata"]["name"] for res in members}
        return [obj for obj in items if objects.name(obj) in names]

    found = await asyncio.gather(*(listed(rtype, ns, members) for (rtype, ns), members in wanted.items()))
    return [obj for objs in found for obj in objs]


def _listed_too(wanted: Mapping[tuple[ResourceType, str | None], list[Obj]]) -> set[tuple[ResourceType, str | None]]:
    """The types (and namespaces) of fewer than LIST_FROM resources listed all the same, largest first, until the
    requests are at most LOOKUPS_AT_ONCE (issue 33: a first deploy of 80 ConfigMaps, 10 Secrets and 10 Services
    looks them up with 3 LISTs on the connections already open, not with a LIST and 20 GETs that opened 11 more and
    took two waves)."""
    few = sorted((key for key, members in wanted.items() if len(members) < LIST_FROM), key=lambda k: -len(wanted[k]))
    requests = len(wanted) - len(few) + sum(len(wanted[key]) for key in few)
    listed: set[tuple[ResourceType, str | None]] = set()
    for key in few:
        if requests <= LOOKUPS_AT_ONCE:
            break
        listed.add(key)
        requests -= len(wanted[key]) - 1
    return listed


async def at_written_versions(cluster: Cluster, discovery: Discovery, found: Sequence[Obj]) -> list[Obj]:
    """`found` (listed at each group's preferred version), each object at the version it was last written at (its
    identity annotation's) where that version is still served, as kapp reads it: kapp lists every served version
    and keeps that copy. A custom resource written at `v1beta1` of a CRD whose storage version is `v1` then compares
    with its manifest unchanged. Read again only for the objects that need it (GETs, or a LIST for many, see
    `get_each`); an object gone meanwhile stays as listed."""
    elsewhere = [
        {**obj, "apiVersion": version}
        for obj in found
        if (version := identity_version(obj)) not in ("", obj.get("apiVersion"))
        and discovery.find(version, objects.kind(obj)) is not None
    ]
    if not elsewhere:
        return list(found)
    reread = {objects.uid(obj): obj for obj in await get_each(cluster, discovery, elsewhere)}
    return [reread.get(objects.uid(obj), obj) for obj in found]
