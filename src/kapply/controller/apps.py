"""The App resource on the cluster: reading it, writing its status through the status subresource, and its
finalizer. Every write of the controller to an App goes through here."""

from __future__ import annotations

from kapply.controller import status as st
from kapply.controller.spec import FINALIZER, KIND, PLURAL
from kapply.errors import ClusterError, ConcurrencyError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, ResourceType

APPS = ResourceType("kapply.dev", "v1alpha1", KIND, PLURAL, True, frozenset({"get", "list", "watch", "update"}))
ATTEMPTS = 5  # writes tried again after a conflict (409), each after reading the App afresh


async def get(cluster: Cluster, namespace: str, name: str) -> Obj | None:
    return await cluster.get(APPS, namespace, name)


async def write_status(cluster: Cluster, app: Obj, status: Obj) -> None:
    """PUT the status (reading the App again on a conflict), unless only times would change: an unchanged App's
    periodic sync writes nothing. `app` takes the stored status and resourceVersion."""
    current = app
    for _ in range(ATTEMPTS):
        if st.same_but_times(current.get("status") or {}, status):
            return
        body = {**current, "status": status}
        path = APPS.path(current["metadata"]["namespace"], current["metadata"]["name"]) + "/status"
        try:
            saved = await cluster.request("PUT", path, body=body)
            app["metadata"]["resourceVersion"] = saved["metadata"]["resourceVersion"]
            app["status"] = saved.get("status")
            return
        except ClusterError as e:
            if e.status != 409:
                raise
        latest = await get(cluster, current["metadata"]["namespace"], current["metadata"]["name"])
        if latest is None:
            return
        app["metadata"]["resourceVersion"] = latest["metadata"]["resourceVersion"]
        app["status"] = latest.get("status")
        current = latest


async def add_finalizer(cluster: Cluster, app: Obj) -> None:
    """Add `finalizers.kapply.dev/delete` (before the first deploy applies anything), keeping `app` current. `app` may
    be the App as the watch last showed it: on a conflict it is read afresh and the finalizer added to that."""
    current = app
    for _ in range(ATTEMPTS):
        finalizers = current["metadata"].get("finalizers") or []
        if FINALIZER in finalizers:
            break
        current["metadata"]["finalizers"] = [*finalizers, FINALIZER]
        try:
            current = await cluster.update(APPS, current)
            break
        except ClusterError as e:
            if e.status != 409:
                raise
        latest = await get(cluster, app["metadata"]["namespace"], app["metadata"]["name"])
        if latest is None:
            return
        current = latest
    else:
        raise ConcurrencyError(
            f"Adding the finalizer of App {app['metadata']['namespace']}/{app['metadata']['name']}: changed by others "
            f"{ATTEMPTS} times"
        )
    app["metadata"]["finalizers"] = current["metadata"].get("finalizers")
    app["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    app["status"] = current.get("status")


async def remove_finalizer(cluster: Cluster, namespace: str, name: str) -> None:
    """Remove kapply's finalizer (the App then goes); ConcurrencyError when others keep changing the App, so the
    reconcile is tried again rather than leaving a deleting App behind."""
    for _ in range(ATTEMPTS):
        app = await get(cluster, namespace, name)
        if app is None or FINALIZER not in (app["metadata"].get("finalizers") or []):
            return
        app["metadata"]["finalizers"] = [f for f in app["metadata"]["finalizers"] if f != FINALIZER]
        try:
            await cluster.update(APPS, app)
            return
        except ClusterError as e:
            if e.status != 409:
                raise
    raise ConcurrencyError(f"Removing the finalizer of App {namespace}/{name}: changed by others {ATTEMPTS} times")


def has_finalizer(app: Obj) -> bool:
    return FINALIZER in (app["metadata"].get("finalizers") or [])
