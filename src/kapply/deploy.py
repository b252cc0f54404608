"""The deploy pipeline: files -> resources -> changes -> graph -> apply -> history.

`plan` reads and prepares the desired resources, finds what the app has on the
cluster and calculates the changes; it writes nothing, so bad input leaves the
cluster untouched. `run` stores the app's record (new apps get one even when
nothing changes, as with kapp), applies the plan and records it as an
app-change. The CLI shows the plan between the two and asks for confirmation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from kapply import objects
from kapply.app import history, record
from kapply.app.lock import hold
from kapply.app.meta import GroupVersionKind, kinds_of
from kapply.apply.loop import ApplyLoop
from kapply.apply.options import ApplyOptions, WaitOptions
from kapply.apply.planning import ClusterChange, cluster_changes, description, order
from kapply.apply.progress import LoggedProgress, Progress
from kapply.config.config import Config
from kapply.config.inputs import split_configs, with_defaults
from kapply.diff import ghost, server_check, versioned
from kapply.diff.change import Change, calculate
from kapply.diff.drift import DriftPolicy
from kapply.diff.fields import ABSENT
from kapply.diff.ghost import FieldDrift
from kapply.diff.render import DiffFormat, Hunk, hunks, line_diffs
from kapply.errors import KapplyError, ManifestError
from kapply.graph import ChangeGraph
from kapply.objects import Document, Obj, group_of, key_of, namespace
from kapply.resources import admission, manifests
from kapply.resources.cluster import Cluster, Discovery
from kapply.resources.kubeconfig import default_namespace
from kapply.resources.labeled import get_each, is_transient, list_labeled, types_in_scope
from kapply.resources.names import check_names
from kapply.resources.ownership import check_ownership
from kapply.resources.preparation import Placement, prepare


@dataclass(frozen=True, slots=True)
class Source:
    """What to deploy: manifest paths (files, directories, `-` for `stdin`) and resources given as dicts."""

    files: Sequence[str] = ()
    resources: Sequence[Mapping[str, object]] | None = None
    stdin: TextIO | None = None

    def documents(self) -> list[Document]:
        if self.resources is None:
            return manifests.read(self.files, self.stdin)  # kapp's error when there are no files either
        return (manifests.read(self.files, self.stdin) if self.files else []) + manifests.from_objects(self.resources)


@dataclass(frozen=True, slots=True)
class DiffOptions:
    against_last_applied: bool = True  # kapp's --diff-against-last-applied
    server_side_check: bool = True  # kapply's --diff-server-side: confirm live-object updates with a dry run


@dataclass(frozen=True, slots=True)
class DeployOptions:
    """How a deploy behaves: kapp's deploy flags other than input and output."""

    into_namespace: str = ""
    namespace_map: Mapping[str, str] = field(default_factory=dict)
    app_labels: Mapping[str, str] = field(default_factory=dict)
    diff: DiffOptions = field(default_factory=DiffOptions)
    override_ownership: bool = False
    allow_empty: bool = False
    default_label_scoping: bool = True
    app_changes_max_to_keep: int = 200
    drift_policy: DriftPolicy = DriftPolicy.ENFORCE  # kapply's: what to do with fields others changed
    apply: ApplyOptions = field(default_factory=ApplyOptions)
    wait: WaitOptions = field(default_factory=WaitOptions)


@dataclass(frozen=True)
class Plan:
    """What a deploy will do; nothing has been written yet."""

    app: record.App
    options: DeployOptions
    config: Config
    discovery: Discovery
    changes: tuple[ClusterChange, ...]  # those that apply or wait on something
    graph: ChangeGraph
    namespaces: tuple[str, ...]  # of the new resources, `(cluster)` for cluster-scoped ones
    used: frozenset[GroupVersionKind]  # of new and existing resources
    new_used: frozenset[GroupVersionKind]
    drifted: tuple[Change, ...] = ()  # changes (applied or not) of objects others changed since they were deployed

    @property
    def pending(self) -> bool:
        return bool(self.changes)

    def hunks(self, fmt: DiffFormat = DiffFormat()) -> list[Hunk]:
        """The plan's diffs, one per change that applies something, Secret values masked."""
        return hunks((c.change for c in self.changes), self.config, fmt)

    def line_diffs(self, fmt: DiffFormat = DiffFormat()) -> str:
        """kapp's `--diff-changes` text of the plan (`@@ op resource @@` and the lines), Secret values masked."""
        return line_diffs((c.change for c in self.changes), self.config, fmt)

    def outside_changes(self) -> list[tuple[Change, tuple[FieldDrift, ...]]]:
        """The changes with fields someone other than kapply/kapp wrote on the cluster, and those fields with who
        wrote them (see `kapply.diff.ghost.outside_changes`): what is reverted, or kept under preserve and warn."""
        by_key = {c.key: c for c in self.drifted} | {c.change.key: c.change for c in self.changes}
        found = ((c, ghost.outside_changes(c)) for c in by_key.values())
        return [(c, fields) for c, fields in found if fields]


@dataclass(frozen=True, slots=True)
class OutsideField:
    """A field of a change that someone other than kapply or kapp wrote on the cluster, and who, as one line of text
    (`kubectl (Update, scale)`, or the mutating webhooks that may have)."""

    change: Change
    field: FieldDrift
    written_by: str


async def attribute(
    cluster: Cluster, discovery: Discovery, found: Sequence[tuple[Change, Sequence[FieldDrift]]]
) -> list[OutsideField]:
    """Who wrote each field: its field manager; for a field on the cluster that no manager wrote, the mutating
    admission webhooks the server calls for the object (see `kapply.resources.admission`; listed only when needed)."""
    configurations: list[Obj] | None = None
    out = []
    for change, fields in found:
        for f in fields:
            written_by = ghost.writer(f.owner)
            if f.owner is None and f.live is not ABSENT and change.existing is not None:
                if configurations is None:
                    configurations = await admission.mutating_webhook_configurations(cluster)
                rtype = discovery.find(objects.api_version(change.existing), objects.kind(change.existing))
                hooks = admission.webhooks_for(configurations, rtype, change.existing) if rtype else []
                if hooks:
                    written_by = f"a mutating admission webhook ({', '.join(hooks)}); no recorded field manager"
            out.append(OutsideField(change, f, written_by))
    return out


@dataclass(frozen=True)
class Result:
    """What a deploy did."""

    app: record.App
    changes: tuple[ClusterChange, ...]  # applied (and waited on), in plan order
    app_change: str  # the app-change ConfigMap recording it; "" when none was recorded
    waited_on: tuple[ClusterChange, ...]
    deleted_app_changes: int  # older app-changes garbage-collected


async def plan(
    cluster: Cluster,
    app_name: str,
    source: Source,
    options: DeployOptions = DeployOptions(),
    *,
    namespace_name: str | None = None,
    app_namespace: str | None = None,
) -> Plan:
    """The changes that deploying `source` as app `app_name` makes. Resources without a namespace go to
    `namespace_name` (default: $KAPP_NAMESPACE, else the kubeconfig context's); the app record lives in
    `app_namespace` (default: the same)."""
    default_ns = default_namespace(namespace_name, cluster.namespace)
    docs, user_configs = split_configs(source.documents())
    config = with_defaults(user_configs)
    app, discovery = await asyncio.gather(
        record.find_or_new(cluster, app_namespace or default_ns, app_name), cluster.discovery()
    )
    placement = Placement(default_ns, options.into_namespace, options.namespace_map)
    prepared = prepare(
        docs,
        discovery,
        config,
        placement,
        {app.meta.label_key: app.meta.label_value},
        default_label_scoping=options.default_label_scoping,
    )
    check_names(prepared)
    if not prepared and not options.allow_empty:
        raise ManifestError(
            "Trying to apply empty set of resources will result in deletion of resources on cluster. "
            "Refusing to continue unless --dangerous-allow-empty-list-of-resources is specified."
        )
    labeled: list[Obj] = []
    if app.stored:
        new_gks = {(group_of(p.obj), p.obj["kind"]) for p in prepared}
        scope = None if app.meta.used_gks is None else set(app.meta.used_gks) | new_gks
        fallback = record.fallback_namespaces(app, default_ns, *(namespace(p.obj) for p in prepared))
        labeled = await list_labeled(cluster, types_in_scope(discovery, scope), app.meta.label_selector, fallback)
    resolved = versioned.resolve(prepared, labeled, config)
    new_by_key = {key_of(d.obj): d.obj for d in resolved.desired}
    origins = {key_of(d.obj): d.origin for d in resolved.desired}

    existing_by_key = {key_of(obj): obj for obj in labeled}
    unlabeled = await get_each(cluster, discovery, [r for k, r in new_by_key.items() if k not in existing_by_key])
    if not options.override_ownership:
        check_ownership(unlabeled, new_by_key, app.meta.label_value)
    existing_by_key.update((key_of(obj), obj) for obj in unlabeled)

    against_last_applied = options.diff.against_last_applied
    changes = [
        calculate(
            new,
            existing_by_key.get(key),
            config,
            origin=origins[key],
            against_last_applied=against_last_applied,
            policy=options.drift_policy,
        )
        for key, new in new_by_key.items()
    ]
    changes = [
        versioned.against_previous(c, resolved.previous[c.key], config) if c.key in resolved.previous else c
        for c in changes
    ]
    changes += [
        calculate(None, obj, config)
        for key, obj in existing_by_key.items()
        if key not in new_by_key and key not in resolved.keep and not is_transient(obj)
    ]
    if options.diff.server_side_check:
        changes = await server_check.check_all(cluster, discovery, changes, config)

    namespaces = sorted({namespace(r) or "(cluster)" for r in new_by_key.values()})
    new_used = kinds_of(new_by_key.values())
    used = new_used | kinds_of(obj for obj in existing_by_key.values() if not is_transient(obj))
    planned = tuple(cluster_changes(changes, config, options.wait.wait))
    drifted = tuple(c for c in changes if c.drifted)
    return Plan(
        app, options, config, discovery, planned, order(planned, config), tuple(namespaces), used, new_used, drifted
    )


async def run(cluster: Cluster, plan: Plan, progress: Progress | None = None) -> Result:
    """Apply the plan and record it as an app-change (with its masked diff), holding the app meanwhile (see
    `kapply.app.lock`: a concurrent deploy, or one that ran since the plan, stops this one before it applies)."""
    options = plan.options
    if not plan.changes and plan.app.stored:  # nothing to apply: kapp writes nothing but new labels
        if options.app_labels:
            await record.update_record(cluster, plan.app, lambda cm: record.merge_labels(cm, options.app_labels))
        return Result(plan.app, (), "", (), 0)
    async with hold(cluster, plan.app, options.app_labels) as app:
        if not plan.changes:  # a new app is recorded even when it has nothing to apply, as kapp does
            return Result(app, (), "", (), 0)
        return await _apply(cluster, plan, app, progress or LoggedProgress())


async def _apply(cluster: Cluster, plan: Plan, app: record.App, progress: Progress) -> Result:
    options = plan.options
    app = await record.save_meta(cluster, app, app.meta.with_used(plan.used))
    stored_diff = line_diffs((c.change for c in plan.changes), plan.config)
    app, change_name = await history.begin(
        cluster,
        app,
        description(plan.changes),
        list(plan.namespaces),
        stored_diff,
        record=options.app_changes_max_to_keep > 0,
    )
    loop = ApplyLoop(
        cluster, plan.discovery, plan.config, app.meta.label_selector, options.apply, options.wait, progress
    )
    try:
        waited = await loop.run(plan.changes, plan.graph)
    except KapplyError as failure:
        await history.record_failure(cluster, app, change_name, failure)
        raise
    app = await history.finish(cluster, app, change_name, successful=True)
    app = await record.save_meta(cluster, app, app.meta.with_used(plan.new_used))
    deleted = 0
    if options.app_changes_max_to_keep > 0:
        deleted = await history.gc(cluster, app, options.app_changes_max_to_keep)
    return Result(app, plan.changes, change_name, waited, deleted)
