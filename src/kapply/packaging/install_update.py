"""A person's update of a PackageInstall (`kapply package installed update`, `installed rollback`, the dashboard's
rollback) against the controller's writes: the update is read, changed and written back conditionally (its
resourceVersion), and the controller writes the install's status meanwhile, as it sees the pause these commands set.
That write changes neither the spec nor the annotations a person's update changes: the update is done again over
the install read afresh. Anyone's edit of either meanwhile stays the API server's conflict, never overwritten."""

from __future__ import annotations

from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import CONFLICT_ATTEMPTS, Cluster, ResourceType


def _edited(install: Obj) -> tuple[object, object]:
    """What a person's update changes: the spec and the annotations."""
    return install.get("spec"), (install.get("metadata") or {}).get("annotations")


async def update_install(cluster: Cluster, rtype: ResourceType, read: Obj, updated: Obj) -> Obj:
    """PUT `updated`, a change of the install as it was `read`, then again (at most CONFLICT_ATTEMPTS times) with its
    spec and annotations over the install read afresh, when a conflict came from a write that left both as `read`
    had them."""
    meta, attempt = read["metadata"], 1
    while True:
        try:
            return await cluster.update(rtype, updated)
        except ClusterError as e:
            if not e.conflict or attempt == CONFLICT_ATTEMPTS:
                raise
            fresh = await cluster.get(rtype, meta["namespace"], meta["name"])
            if fresh is None or _edited(fresh) != _edited(read):
                raise
        attempt += 1
        mine = {k: v for k, v in updated["metadata"].items() if k == "annotations"}
        theirs = {k: v for k, v in fresh["metadata"].items() if k != "annotations"}
        read, updated = fresh, {**fresh, "spec": updated.get("spec"), "metadata": {**theirs, **mine}}
