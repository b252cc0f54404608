"""Renaming an app, as kapp's `rename` does: its record (the app ConfigMap) moves to a new name and namespace.

The app's resources keep their label (the record holds its value, and the copy keeps it), so they stay the app's.
App-change ConfigMaps are not renamed: kapp leaves them behind, and lists a renamed app's history by its label.
"""

from __future__ import annotations

from kapply import objects
from kapply.app.record import CONFIGMAPS, FQ_SUFFIX, App, fq_names
from kapply.errors import AppNotFoundError, ClusterError, KapplyError
from kapply.resources.cluster import Cluster


async def rename(cluster: Cluster, app: App, new_name: str, new_namespace: str) -> None:
    """Create the app's record as `new_name` in `new_namespace` (labels, annotations and data copied; a record with
    the fully qualified name, or any record while KAPP_FQ_CONFIGMAP_NAMES is on, gets `<new_name>.apps.k14s.io`),
    then delete the old one. A failed delete leaves both, as kapp does: the copy may not be deletable either."""
    if app.labeled:  # kapp: a labeled app has no record to rename
        raise KapplyError("Not supported")
    cm = await cluster.get(CONFIGMAPS, app.namespace, app.configmap_name)
    if cm is None:
        raise AppNotFoundError(f"{app.describe()} does not exist")
    meta = objects.metadata(cm)
    fully_qualified = app.configmap_name.endswith(FQ_SUFFIX) or fq_names()
    copied: dict[str, object] = {"name": new_name + FQ_SUFFIX if fully_qualified else new_name}
    copied["namespace"] = new_namespace
    if meta.get("labels"):
        copied["labels"] = meta["labels"]
    annotations = dict(meta.get("annotations") or {})
    if fully_qualified:
        annotations.setdefault(objects.IS_CONFIGMAP_MIGRATED, "")
    if annotations:
        copied["annotations"] = annotations
    try:
        await cluster.create(CONFIGMAPS, {**cm, "metadata": copied})
    except ClusterError as e:
        raise KapplyError(f"Creating app: {e}") from e
    try:
        await cluster.delete(CONFIGMAPS, app.namespace, app.configmap_name)
    except ClusterError as e:
        raise KapplyError(f"Deleting app: {e}") from e
