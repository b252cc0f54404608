"""Deleting an app: every resource it owns, then its change history and its record.

Controller-made (transient) objects are not deleted directly: their owners' deletion
takes them along. The app record goes last, and only once nothing it owns is left.
"""

from __future__ import annotations

from dataclasses import dataclass

from kapply.app import history, record
from kapply.apply.execute import ApplyOptions
from kapply.apply.loop import ApplyLoop, ClusterChange, WaitOptions, cluster_changes, order
from kapply.config.config import Config
from kapply.config.default import default_config
from kapply.diff.change import calculate
from kapply.errors import KapplyError
from kapply.graph import ChangeGraph
from kapply.resources.cluster import Cluster, Discovery
from kapply.resources.identity import describe
from kapply.resources.labeled import is_transient, list_labeled, types_in_scope
from kapply.ui.messages import Progress


@dataclass(frozen=True)
class DeletePlan:
    app: record.App
    config: Config
    discovery: Discovery
    changes: tuple[ClusterChange, ...]
    graph: ChangeGraph


async def app_resources(cluster: Cluster, app: record.App, discovery: Discovery) -> list[dict]:
    """Everything labeled for the app, of every type (not limited to the types the app recorded)."""
    return await list_labeled(cluster, types_in_scope(discovery, None), app.meta.label_selector)


async def plan(cluster: Cluster, namespace: str, name: str, wait: bool = True) -> DeletePlan | None:
    """None when the app does not exist."""
    app = await record.find(cluster, namespace, name)
    if app is None:
        return None
    discovery = await cluster.discovery()
    config = default_config()
    owned = [obj for obj in await app_resources(cluster, app, discovery) if not is_transient(obj)]
    changes = [calculate(None, obj, config) for obj in owned]
    planned = tuple(cluster_changes(changes, config, wait))
    return DeletePlan(app, config, discovery, planned, order(planned, config))


async def run(cluster: Cluster, plan: DeletePlan, options: ApplyOptions, wait: WaitOptions,
              progress: Progress) -> None:
    app, _ = await history.begin(cluster, plan.app, "delete", [], "", record=False)
    try:
        await ApplyLoop(cluster, plan.discovery, plan.config, app.meta.label_selector, options, wait,
                        progress).run(plan.changes, plan.graph)
    except KapplyError:
        await history.finish(cluster, app, "", successful=False)
        raise
    await history.delete_all(cluster, app)
    left = [obj for obj in await app_resources(cluster, app, await cluster.discovery(refresh=True))
            if not is_transient(obj)]
    if left:
        raise KapplyError("Expected all resources to be gone, but found: " + ", ".join(describe(o) for o in left))
    await record.delete(cluster, app)
