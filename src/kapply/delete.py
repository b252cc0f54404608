"""Deleting an app: every resource it owns, then its change history and its record.

Controller-made (transient) objects are not deleted directly: their owners' deletion
takes them along. The app record goes last, and only once nothing it owns is left.
"""

from __future__ import annotations

from dataclasses import dataclass

from kapply.app import history, record
from kapply.apply.execute import Applier, ApplyOptions
from kapply.config.config import Config
from kapply.config.default import default_config
from kapply.diff.change import Change, calculate
from kapply.errors import KapplyError
from kapply.resources.cluster import Cluster, Discovery
from kapply.resources.identity import describe
from kapply.resources.labeled import is_transient, list_labeled, types_in_scope
from kapply.ui.messages import Progress


@dataclass(frozen=True)
class DeletePlan:
    app: record.App
    config: Config
    discovery: Discovery
    changes: tuple[Change, ...]


async def app_resources(cluster: Cluster, app: record.App, discovery: Discovery) -> list[dict]:
    """Everything labeled for the app, of every type (not limited to the types the app recorded)."""
    return await list_labeled(cluster, types_in_scope(discovery, None), app.meta.label_selector)


async def plan(cluster: Cluster, namespace: str, name: str) -> DeletePlan | None:
    """None when the app does not exist."""
    app = await record.find(cluster, namespace, name)
    if app is None:
        return None
    discovery = await cluster.discovery()
    config = default_config()
    owned = [obj for obj in await app_resources(cluster, app, discovery) if not is_transient(obj)]
    return DeletePlan(app, config, discovery, tuple(calculate(None, obj, config) for obj in owned))


async def run(cluster: Cluster, plan: DeletePlan, options: ApplyOptions, progress: Progress) -> None:
    app, _ = await history.begin(cluster, plan.app, "delete", [], "", record=False)
    try:
        await Applier(cluster, plan.discovery, plan.config, options, progress).apply(plan.changes)
    except KapplyError:
        await history.finish(cluster, app, "", successful=False)
        raise
    await history.delete_all(cluster, app)
    left = [obj for obj in await app_resources(cluster, app, await cluster.discovery(refresh=True))
            if not is_transient(obj)]
    if left:
        raise KapplyError("Expected all resources to be gone, but found: " + ", ".join(describe(o) for o in left))
    await record.delete(cluster, app)
