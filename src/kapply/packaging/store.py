"""The packaging objects on the cluster, as the controllers read and write them: their types, a status written through
the status subresource, and finalizers. Every write of the packaging controllers to a PackageRepository or
PackageInstall goes through here (kapply.controller.apps is the same for Apps)."""

from __future__ import annotations

from kapply.controller import status as st
from kapply.errors import ClusterError, ConcurrencyError
from kapply.objects import Obj
from kapply.packaging import names
from kapply.resources.cluster import Cluster, ResourceType

ATTEMPTS = 5  # writes tried again after a conflict (409), each after reading the object afresh
_VERBS = frozenset({"get", "list", "watch", "update"})


def resource_type(resource: names.Resource) -> ResourceType:
    return ResourceType(resource.group, names.VERSION, resource.kind, resource.plural, True, _VERBS)


REPOSITORIES = resource_type(names.PACKAGE_REPOSITORY)
INSTALLS = resource_type(names.PACKAGE_INSTALL)
PACKAGES = resource_type(names.PACKAGE)
PACKAGE_METADATAS = resource_type(names.PACKAGE_METADATA)


async def get(cluster: Cluster, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
    return await cluster.get(rtype, namespace, name)


async def write_status(cluster: Cluster, rtype: ResourceType, obj: Obj, status: Obj) -> None:
    """PUT the status (reading the object again on a conflict), unless only times would change: an unchanged object's
    periodic sync writes nothing. `obj` takes the stored status and resourceVersion. An object gone meanwhile (404:
    deleted during the reconcile, its finalizer already off) has no status left to write."""
    current = obj
    for _ in range(ATTEMPTS):
        if st.same_but_times(current.get("status") or {}, status):
            return
        meta = current["metadata"]
        try:
            saved = await cluster.request(
                "PUT", rtype.path(meta["namespace"], meta["name"]) + "/status", body={**current, "status": status}
            )
            obj["metadata"]["resourceVersion"] = saved["metadata"]["resourceVersion"]
            obj["status"] = saved.get("status")
            return
        except ClusterError as e:
            if e.status == 404:
                return
            if e.status != 409:
                raise
        latest = await get(cluster, rtype, meta["namespace"], meta["name"])
        if latest is None:
            return
        obj["metadata"]["resourceVersion"] = latest["metadata"]["resourceVersion"]
        obj["status"] = latest.get("status")
        current = latest
    raise ConcurrencyError(f"Updating the status of {rtype.kind} {obj['metadata']['name']}: changed by others")


def has_finalizer(obj: Obj, finalizer: str) -> bool:
    return finalizer in (obj["metadata"].get("finalizers") or [])


async def add_finalizer(cluster: Cluster, rtype: ResourceType, obj: Obj, finalizer: str) -> None:
    """Add `finalizer` (reading the object again on a conflict), keeping `obj` current."""
    for _ in range(ATTEMPTS):
        if has_finalizer(obj, finalizer):
            return
        body = {
            **obj,
            "metadata": {**obj["metadata"], "finalizers": [*(obj["metadata"].get("finalizers") or []), finalizer]},
        }
        try:
            saved = await cluster.update(rtype, body)
        except ClusterError as e:
            if e.status != 409:
                raise
            latest = await get(cluster, rtype, obj["metadata"]["namespace"], obj["metadata"]["name"])
            if latest is None:
                return
            obj.clear()
            obj.update(latest)
            continue
        obj["metadata"] = saved["metadata"]
        return
    raise ConcurrencyError(f"Adding the finalizer of {rtype.kind} {obj['metadata']['name']}: changed by others")


async def remove_finalizer(cluster: Cluster, rtype: ResourceType, namespace: str, name: str, finalizer: str) -> None:
    """Remove `finalizer` (the object then goes); ConcurrencyError when others keep changing the object."""
    for _ in range(ATTEMPTS):
        obj = await get(cluster, rtype, namespace, name)
        if obj is None or not has_finalizer(obj, finalizer):
            return
        obj["metadata"]["finalizers"] = [f for f in obj["metadata"]["finalizers"] if f != finalizer]
        try:
            await cluster.update(rtype, obj)
            return
        except ClusterError as e:
            if e.status != 409:
                raise
    raise ConcurrencyError(f"Removing the finalizer of {rtype.kind} {namespace}/{name}: changed by others")
