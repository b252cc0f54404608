"""Deleting an app: every resource it owns, then its change history and its record.

Controller-made (transient) objects are not deleted directly: their owners' deletion
takes them along. The app record goes last, and only once nothing it owns is left.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kapply.app import history, record
from kapply.app.lock import hold
from kapply.apply.loop import ApplyLoop
from kapply.apply.options import ApplyOptions, WaitOptions
from kapply.apply.planning import ClusterChange, cluster_changes, order
from kapply.apply.progress import LoggedProgress, Progress
from kapply.config.config import Config
from kapply.config.default import default_config
from kapply.diff.change import calculate
from kapply.diff.render import DiffFormat, Hunk, hunks, line_diffs
from kapply.errors import KapplyError
from kapply.graph import ChangeGraph
from kapply.objects import describe
from kapply.resources.cluster import Cluster, Discovery
from kapply.resources.kubeconfig import default_namespace
from kapply.resources.labeled import is_transient


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    apply: ApplyOptions = field(default_factory=ApplyOptions)
    wait: WaitOptions = field(default_factory=WaitOptions)


@dataclass(frozen=True)
class DeletePlan:
    app: record.App
    options: DeleteOptions
    config: Config
    discovery: Discovery
    changes: tuple[ClusterChange, ...]
    graph: ChangeGraph

    def hunks(self, fmt: DiffFormat = DiffFormat()) -> list[Hunk]:
        """The plan's diffs, one per change that applies something, Secret values masked."""
        return hunks((c.change for c in self.changes), self.config, fmt)

    def line_diffs(self, fmt: DiffFormat = DiffFormat()) -> str:
        return line_diffs((c.change for c in self.changes), self.config, fmt)


async def plan(
    cluster: Cluster, app_name: str, options: DeleteOptions = DeleteOptions(), *, namespace_name: str | None = None
) -> DeletePlan | None:
    """What deleting the app does; None when the app does not exist (in `namespace_name`, default as for deploy)."""
    app = await record.find(cluster, default_namespace(namespace_name, cluster.namespace), app_name)
    if app is None:
        return None
    discovery = await cluster.discovery()
    config = default_config()
    owned = [obj for obj in await record.list_resources(cluster, app) if not is_transient(obj)]
    changes = [calculate(None, obj, config) for obj in owned]
    planned = tuple(cluster_changes(changes, config, options.wait.wait))
    return DeletePlan(app, options, config, discovery, planned, order(planned, config))


async def run(cluster: Cluster, plan: DeletePlan, progress: Progress | None = None) -> tuple[ClusterChange, ...]:
    """Delete the app's resources, its history and its record; returns the changes waited on."""
    async with hold(cluster, plan.app) as app:
        return await _delete(cluster, plan, app, progress or LoggedProgress())


async def _delete(cluster: Cluster, plan: DeletePlan, app: record.App, progress: Progress) -> tuple[ClusterChange, ...]:
    app, _ = await history.begin(cluster, app, "delete", [], "", record=False)
    loop = ApplyLoop(
        cluster, plan.discovery, plan.config, app.meta.label_selector, plan.options.apply, plan.options.wait, progress
    )
    try:
        waited = await loop.run(plan.changes, plan.graph)
    except KapplyError as failure:
        await history.record_failure(cluster, app, "", failure)
        raise
    await history.delete_all(cluster, app)
    await cluster.discovery(refresh=True)
    left = [obj for obj in await record.list_resources(cluster, app) if not is_transient(obj)]
    if left:
        raise KapplyError("Expected all resources to be gone, but found: " + ", ".join(describe(o) for o in left))
    await record.delete(cluster, app)
    return waited
