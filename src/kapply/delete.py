"""Deleting an app: every resource it owns, then its change history and its record.

Controller-made (transient) objects are not deleted directly (kapp's "ignored" changes, unless
--apply-ignored): their owners' deletion takes them along, and they are waited on until gone
(--wait-ignored, on by default for delete). The app record goes last, and only once nothing it owns
is left; when resource or change filters leave some of its resources out, the app and its history stay.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from kapply import objects
from kapply.app import history, record
from kapply.apply.options import ApplyOptions, WaitOptions
from kapply.apply.planning import ClusterChange, cluster_changes, order
from kapply.apply.progress import LoggedProgress, Progress
from kapply.apply.view import ChangeSetText, change_set_text
from kapply.config.config import Config
from kapply.config.default import default_config
from kapply.diff.change import calculate
from kapply.diff.filter import ChangeFilter
from kapply.diff.render import DiffFormat, Hunk
from kapply.errors import KapplyError
from kapply.graph import ChangeGraph
from kapply.objects import Obj, describe
from kapply.resources import api_services
from kapply.resources.cluster import Cluster, Discovery, ResourceType
from kapply.resources.filters import ResourceFilter
from kapply.resources.kubeconfig import default_namespace
from kapply.resources.labeled import (
    Listed,
    at_written_versions,
    is_transient,
    list_cluster_wide,
    list_labeled,
    types_in_scope,
)

# Imported where a delete runs, not planned: the hold (kapply.app.lock) and the apply loop, which planning and a
# deploy that changes nothing never use (start-up, bench/why.md).

PARTIAL_DELETE_CHANGES_TO_KEEP = 200  # kapp's app-change GC after a delete that keeps the app


def _wait_ignored() -> WaitOptions:
    return WaitOptions(ignored=True)


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    apply: ApplyOptions = field(default_factory=ApplyOptions)
    wait: WaitOptions = field(default_factory=_wait_ignored)  # kapp's delete waits on ignored changes by default
    resource_filter: ResourceFilter | None = None  # kapp's --filter*: delete only these resources
    change_filter: ChangeFilter | None = None  # kapp's --diff-filter: make only these changes
    prev_app: str = ""  # kapp's --prev-app: the app's earlier name, deleted when the app has no record by its name
    ignore_failing_api_services: bool = False  # kapp's --dangerous-ignore-failing-api-services (see api_services)
    scope_to_fallback_namespaces: bool = False  # kapp's --dangerous-scope-to-fallback-allowed-namespaces
    # Look for the app's resources only in the kinds its record names, as a deploy does (the controller's delete);
    # False: in every type, as `kapp delete` does. An app recorded without its kinds is looked for everywhere.
    used_kinds_only: bool = False


@dataclass(frozen=True)
class DeletePlan:
    app: record.App
    options: DeleteOptions
    config: Config
    discovery: Discovery
    changes: tuple[ClusterChange, ...]
    graph: ChangeGraph
    complete: bool = True  # False when filters leave resources out: the app and its history are kept

    def text(self, fmt: DiffFormat = DiffFormat(), *, yaml: bool = False, diffs: bool = True) -> ChangeSetText:
        """kapp's `--diff-changes-yaml` blocks (when `yaml`) and `--diff-changes` diffs (when `diffs`)."""
        return change_set_text(self.changes, self.config, fmt, yaml=yaml, diffs=diffs)

    def hunks(self, fmt: DiffFormat = DiffFormat()) -> list[Hunk]:
        """The plan's diffs, one per change (a noop's has no lines), Secret values masked."""
        return list(self.text(fmt).hunks)

    def line_diffs(self, fmt: DiffFormat = DiffFormat()) -> str:
        return "".join(str(h) for h in self.hunks(fmt))


async def plan(
    cluster: Cluster, app_name: str, options: DeleteOptions = DeleteOptions(), *, namespace_name: str | None = None
) -> DeletePlan | None:
    """What deleting the app does; None when the app does not exist (in `namespace_name`, default as for deploy),
    nor the app `options.prev_app` names."""
    namespace = default_namespace(namespace_name, cluster.namespace)
    # Discovery beside the record's lookup (issue 33: one round trip less); its error counts only for an app found.
    found, discovered = await asyncio.gather(
        record.find(cluster, namespace, app_name), cluster.discovery(), return_exceptions=True
    )
    if isinstance(found, BaseException):
        raise found
    app = found
    if app is None and options.prev_app:
        app = await record.find(cluster, namespace, options.prev_app)
    if app is None:
        return None
    if isinstance(discovered, BaseException):
        raise discovered
    discovery = discovered
    used = {api_services.group_version(g, v) for g, v in app.meta.used_gvs}
    api_services.check_required(discovery, used, ignore=options.ignore_failing_api_services)
    config = default_config()
    listed = await _resources(cluster, app, options.used_kinds_only, options.scope_to_fallback_namespaces)
    owned = listed if options.resource_filter is None else options.resource_filter.apply(listed)
    complete = len(owned) == len(listed)
    changes = [calculate(None, obj, config, transient=_transient(obj)) for obj in owned]
    if options.change_filter is not None:
        kept = options.change_filter.apply(changes)
        complete = complete and len(kept) == len(changes)
        changes = kept
    planned = tuple(
        cluster_changes(
            changes, config, options.wait.wait, apply_ignored=options.apply.ignored, wait_ignored=options.wait.ignored
        )
    )
    return DeletePlan(app, options, config, discovery, planned, order(planned, config), complete)


async def _resources(
    cluster: Cluster, app: record.App, used_kinds_only: bool, scope_to_fallback: bool, listed: Listed | None = None
) -> list[Obj]:
    """The app's resources (`record.list_resources`), only of the kinds its record names when `used_kinds_only`;
    the types `listed` already has are not listed again."""
    discovery = await cluster.discovery()
    found = await list_labeled(
        cluster,
        _types(discovery, app, used_kinds_only),
        app.label_selector,
        record.fallback_namespaces(app),
        scope_to_fallback=scope_to_fallback,
        listed=listed,
    )
    return await at_written_versions(cluster, discovery, found)


def _types(discovery: Discovery, app: record.App, used_kinds_only: bool) -> list[ResourceType]:
    """The types the app's resources are looked for in: every listable one, or (`used_kinds_only`) those of the
    kinds the app's record names, if it names them."""
    return types_in_scope(discovery, app.meta.used_gks if used_kinds_only else None)


def _transient(obj: Obj) -> bool:
    """Made by a controller, so deleted by deleting its owner (an ignored change), unless annotated
    `kapp.k14s.io/owned-for-deletion` (a StatefulSet's PersistentVolumeClaims, say), as kapp."""
    return is_transient(obj) and not objects.has_annotation(obj, objects.OWNED_FOR_DELETION)


async def run(cluster: Cluster, plan: DeletePlan, progress: Progress | None = None) -> tuple[ClusterChange, ...]:
    """Delete the app's resources, its history and its record; returns the changes waited on."""
    from kapply.app.lock import hold

    if plan.app.labeled:  # no record and no history: only the resources
        return await _delete_labeled(cluster, plan, progress or LoggedProgress())
    # The delete's change begins with the hold: one write of the record (issue 33: round trips).
    async with hold(cluster, plan.app, meta=history.unrecorded(plan.app, "delete")) as app:
        return await _delete(cluster, plan, app, progress or LoggedProgress())


async def _delete(cluster: Cluster, plan: DeletePlan, app: record.App, progress: Progress) -> tuple[ClusterChange, ...]:
    """Delete the app's resources, its history and its record; `app` as held, its change begun."""
    from kapply.app.lock import released
    from kapply.apply.loop import ApplyLoop

    change = history.Begun()
    loop = ApplyLoop(
        cluster, plan.discovery, plan.config, app.meta.label_selector, plan.options.apply, plan.options.wait, progress
    )
    # The history listed while the resources are deleted (issue 33: round trips), under the hold (no kapply deploy
    # records a change meanwhile; delete_all lists it again at the end for kapp's, which ignore the hold).
    listed = asyncio.ensure_future(history.listing(cluster, app)) if plan.complete else None
    if listed is not None:
        types = len(_types(plan.discovery, app, plan.options.used_kinds_only))
        listed.add_done_callback(lambda done: _warm_for_end(cluster, done, types))
    try:
        waited = await loop.run(plan.changes, plan.graph)
    except KapplyError as failure:
        await _stop(listed)
        await history.record_failure(cluster, app, change, failure)
        raise
    except asyncio.CancelledError:  # interrupted (Ctrl-C, SIGTERM): recorded as failed too
        await _stop(listed)
        await history.record_interrupted(cluster, app, change)
        raise
    if listed is None:  # filters left resources out: the app stays, as kapp, with at most 200 changes
        app = await history.finish(cluster, app, change, successful=True, also=released(app))
        await history.gc(cluster, app, PARTIAL_DELETE_CHANGES_TO_KEEP)
        return waited
    # The history deleted while the app's types are listed once more (issue 33: round trips); an error of the
    # history first, as when one followed the other; the record goes last, once both are done.
    done = await asyncio.gather(
        history.delete_all(cluster, app, listed),
        _check_gone(cluster, app, plan.options.used_kinds_only),
        return_exceptions=True,
    )
    for result in done:
        if isinstance(result, BaseException):
            raise result
    await record.delete(cluster, app)
    return waited


def _warm_for_end(cluster: Cluster, listed: asyncio.Future[history.Listing], types: int) -> None:
    """Once the history is listed (while the resources are deleted), the connections the end will use are opened:
    each change's two DELETEs go on connections of their own beside the all-gone check's LISTs and discovery, which
    the transport pipelines on fewer; with too few connections open, the end opened the rest at once, their
    handshakes on its way (2 round trips; bench/why.md, "The delete's end and its connections")."""
    if listed.cancelled() or listed.exception() is not None:
        return
    gets = types + 4  # the LISTs of every type, discovery (2), the history listed again (2)
    cluster.warm(2 * len(listed.result().changes), gets)


async def _stop(running: asyncio.Future[history.Listing] | None) -> None:
    if running is not None:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


async def _check_gone(cluster: Cluster, app: record.App, used_kinds_only: bool = False) -> None:
    """kapp's last check before the record goes: discovery asked again (a type that appeared meanwhile is listed
    too), then nothing of the app's found. The types known before are listed while discovery is asked (issue 33: a
    round trip less); those it no longer serves are left out, those it newly serves listed after it."""
    known = _types(await cluster.discovery(), app, used_kinds_only)
    discovering = asyncio.ensure_future(cluster.discovery(refresh=True))  # first: its requests go out before the LISTs
    listing = asyncio.ensure_future(list_cluster_wide(cluster, known, app.label_selector))
    try:
        await discovering
        listed = await listing
    finally:
        for running in (discovering, listing):
            running.cancel()
        await asyncio.gather(discovering, listing, return_exceptions=True)
    left = [obj for obj in await _resources(cluster, app, used_kinds_only, False, listed) if not is_transient(obj)]
    if left:
        raise KapplyError("Expected all resources to be gone, but found: " + ", ".join(describe(o) for o in left))


async def _delete_labeled(cluster: Cluster, plan: DeletePlan, progress: Progress) -> tuple[ClusterChange, ...]:
    from kapply.apply.loop import ApplyLoop

    options = plan.options
    loop = ApplyLoop(
        cluster, plan.discovery, plan.config, plan.app.label_selector, options.apply, options.wait, progress
    )
    waited = await loop.run(plan.changes, plan.graph)
    if plan.complete:
        await _check_gone(cluster, plan.app, options.used_kinds_only)
    return waited
