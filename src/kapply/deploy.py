"""The deploy pipeline: files -> resources -> changes -> graph -> apply -> history.

`plan` reads and prepares the desired resources, finds what the app has on the
cluster and calculates the changes; it writes nothing, so bad input leaves the
cluster untouched. Its stages, in order: `read_manifests` (while `locate_app`
runs), `check_record` (while `desired_resources` and `existing_resources`
run), `calculate_changes`. `run` stores the app's record (new apps get one even when
nothing changes, as with kapp), applies the plan and records it as an
app-change. The CLI shows the plan between the two and asks for confirmation.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, TextIO, TypeVar

from kapply import objects
from kapply.app import history, record
from kapply.app.meta import AppMeta, GroupVersionKind, kinds_of
from kapply.apply import preflight
from kapply.apply.options import ApplyOptions, WaitOptions
from kapply.apply.planning import ClusterChange, cluster_changes, description, order
from kapply.apply.view import ChangeSetText, change_set_text
from kapply.config.config import Config
from kapply.config.inputs import split_configs, with_defaults
from kapply.config.rules import MaskCounter
from kapply.diff import ghost, server_check, versioned
from kapply.diff.change import ApplyOp, Change, Op, calculate
from kapply.diff.drift import DriftPolicy
from kapply.diff.filter import ChangeFilter
from kapply.diff.ghost import FieldDrift
from kapply.diff.kapp_order import in_kapp_order
from kapply.diff.render import DiffFormat, Hunk
from kapply.diff.renew import renewed
from kapply.errors import AppNotFoundError, ConcurrencyError, KapplyError, ManifestError
from kapply.graph import ChangeGraph
from kapply.objects import Document, Obj, ResourceKey, group_of, key_of, namespace
from kapply.resources import api_services, manifests
from kapply.resources.cluster import Cluster, Discovery
from kapply.resources.filters import ResourceFilter
from kapply.resources.kubeconfig import default_namespace
from kapply.resources.labeled import (
    Listed,
    at_written_versions,
    get_each,
    is_transient,
    list_cluster_wide,
    list_labeled,
    types_in_scope,
)
from kapply.resources.names import check_names
from kapply.resources.ownership import check_disallowed_labels, check_ownership, foreign
from kapply.resources.preparation import Placement, prepare

if TYPE_CHECKING:
    from kapply.apply.progress import Progress
    from kapply.resources.allow import AllowRules

T = TypeVar("T")


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
    run: bool = False  # kapp's --diff-run: the plan is only shown (a new app's record need not be creatable)
    anchored: bool = False  # kapp's --diff-anchored: an anchored line diff for resources over 500 lines


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
    patch: bool = False  # kapp's --patch: add or update only, never delete
    resource_filter: ResourceFilter | None = None  # kapp's --filter*: only these new and existing resources
    change_filter: ChangeFilter | None = None  # kapp's --diff-filter: only these changes
    logs: bool = True  # kapp's --logs; here only: the app's Pods are among its existing resources (see plan)
    prev_app: str = ""  # kapp's --prev-app: the app's earlier name, whose record the deploy renames
    app_metadata_file: str = ""  # kapp's --app-metadata-file-output: where to write the app's metadata (JSON)
    allow: AllowRules | None = None  # kapp's --allow-check (--allow-ns, ...): where resources may go; None: anywhere
    ignore_failing_api_services: bool = False  # kapp's --dangerous-ignore-failing-api-services (see api_services)
    scope_to_fallback_namespaces: bool = False  # kapp's --dangerous-scope-to-fallback-allowed-namespaces
    disable_gk_scoping: bool = False  # kapp's --dangerous-disable-gk-scoping: look for the app's resources in all types
    # kapp's --preflight: the checks run before anything is applied (apply.preflight); None: the Config's preflightRules
    preflight: tuple[str, ...] | None = None
    rollback_of: str = ""  # kapply's `app-change rollback --to`: the app-change this deploy goes back to


@dataclass(frozen=True)
class Listing:
    """How `plan` found the app's objects on the cluster, and the ones it found (those the app made, by key and UID):
    what `run` looks at again when another deploy ran since the plan."""

    scope: frozenset[tuple[str, str]] | None  # the (group, kind)s listed; None: every type
    fallback_namespaces: frozenset[str]
    found: frozenset[tuple[ResourceKey, str]]


def _found(listed: Iterable[Obj]) -> frozenset[tuple[ResourceKey, str]]:
    return frozenset((key_of(obj), objects.uid(obj)) for obj in listed if not is_transient(obj))


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
    renamed_from: record.App | None = None  # the record of the app's earlier name (--prev-app), renamed by `run`
    not_allowed: tuple[str, ...] = ()  # what --allow-check refuses (see check_allowed)
    listing: Listing | None = None  # how the app's objects were found (None: a new app, which has none)
    applied: history.Applied | None = None  # what the app-change keeps, for a rollback to it (kapply.app.history)
    # numbers masked values wherever the plan's changes are shown, and in the diff of a conflict while it runs: one
    # numbering per deploy, as kapp's is per process
    masks: MaskCounter = field(default_factory=MaskCounter, compare=False, repr=False)

    @property
    def pending(self) -> bool:
        return bool(self.changes)

    def check_allowed(self) -> None:
        """Refuse resources outside the namespaces `--allow-*` allows (kapp shows the plan, then refuses)."""
        if self.not_allowed:
            raise ManifestError("Validation errors:\n" + "\n".join(f"- {v}" for v in self.not_allowed))

    def write_app_metadata(self) -> None:
        """Write the app's metadata to `--app-metadata-file-output`, as a deploy that applies nothing leaves it."""
        write_app_metadata(self.options.app_metadata_file, self.app)

    def text(self, fmt: DiffFormat = DiffFormat(), *, yaml: bool = False, diffs: bool = True) -> ChangeSetText:
        """kapp's `--diff-changes-yaml` blocks (when `yaml`) and `--diff-changes` diffs (when `diffs`) of the plan,
        Secret values masked with one numbering."""
        strategy = self.options.apply.default_update_strategy
        if self.options.diff.anchored:
            fmt = replace(fmt, anchored=True)
        return change_set_text(
            self.changes,
            self.config,
            fmt,
            yaml=yaml,
            diffs=diffs,
            default_update_strategy=strategy,
            counter=self.masks,
        )

    def hunks(self, fmt: DiffFormat = DiffFormat()) -> list[Hunk]:
        """The plan's diffs, one per change (a noop's has no lines), Secret values masked."""
        return list(self.text(fmt).hunks)

    def line_diffs(self, fmt: DiffFormat = DiffFormat()) -> str:
        """The `--diff-changes` text (`@@ op resource @@` and the lines) of the changes that apply something, Secret
        values masked: what the app-change history keeps. Numbered as shown, but without taking numbers from the
        plan's: kapp, which keeps no such text, numbers a conflict's diff after what it showed only."""
        applying = [c for c in self.changes if c.apply_op is not ApplyOp.NOOP]
        if self.options.diff.anchored:
            fmt = replace(fmt, anchored=True)
        return "".join(str(h) for h in change_set_text(applying, self.config, fmt, counter=self.masks.copy()).hunks)

    def outside_changes(self) -> list[tuple[Change, tuple[FieldDrift, ...]]]:
        """The changes with fields someone other than kapply/kapp wrote on the cluster, and those fields with who
        wrote them (see `kapply.diff.ghost.outside_changes`): what is reverted, or kept under preserve and warn."""
        by_key = {c.key: c for c in self.drifted} | {c.change.key: c.change for c in self.changes}
        found = ((c, ghost.outside_changes(c)) for c in by_key.values())
        return [(c, fields) for c, fields in found if fields]


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
    `app_namespace` (default: the same).

    In stages: the manifests are read (on a thread, while the event loop locates the app), the app's record checked,
    the desired resources prepared, the app's existing resources found, and the changes between them calculated."""
    default_ns = default_namespace(namespace_name, cluster.namespace)
    placement = Placement(default_ns, options.into_namespace, options.namespace_map)
    locating = asyncio.ensure_future(locate_app(cluster, app_namespace or default_ns, app_name, options))
    manifests = await read_manifests(source, meanwhile=locating)
    located = await locating
    # The record's check (a dry-run create for a new app) in flight with the lookups of the desired resources: one
    # round trip less (issue 33); its error still comes first, as kapp stops at the record before it plans.
    checking = asyncio.ensure_future(check_record(cluster, located, options))
    try:
        desired = desired_resources(manifests, located, placement, options)
        existing = await existing_resources(cluster, located, desired, placement, options)
    except Exception:
        await checking
        raise
    except BaseException:
        checking.cancel()
        raise
    await checking
    changes = await calculate_changes(cluster, located.discovery, manifests.config, desired, existing, options)
    planned = _cluster_changes(changes.changes, manifests.config, options)
    return Plan(
        located.app,
        options,
        manifests.config,
        located.discovery,
        planned,
        order(planned, manifests.config),
        desired.namespaces,
        changes.used,
        changes.new_used,
        tuple(c for c in changes.changes if c.drifted),
        renamed_from=located.renamed_from,
        not_allowed=desired.not_allowed,
        listing=existing.listing,
        applied=_applied(manifests, placement, options),
    )


def _applied(manifests: Manifests, placement: Placement, options: DeployOptions) -> history.Applied | None:
    """What the app-change keeps for a rollback; nothing for a partial deploy (`--patch`, `--filter*`,
    `--diff-filter`), whose documents are not the app's state: deploying them whole would delete the rest."""
    if options.patch or options.resource_filter is not None or options.change_filter is not None:
        return None
    return history.Applied(
        manifests.source, placement.default_namespace, placement.into_namespace, placement.namespace_map
    )


@dataclass(frozen=True)
class Manifests:
    """What the manifests hold: the resources, and the Config their Config documents make with kapp's defaults."""

    docs: tuple[Document, ...]
    config: Config
    source: tuple[Obj, ...] = ()  # every document as read, Configs included: what an app-change keeps


def split_manifests(documents: Sequence[Document]) -> Manifests:
    """The manifests' documents, the Configs taken out of the resources and merged with kapp's default Config."""
    docs, user_configs = split_configs(documents)
    return Manifests(tuple(docs), with_defaults(user_configs), tuple(d.obj for d in documents))


async def read_manifests(source: Source, *, meanwhile: asyncio.Future[T]) -> Manifests:
    """The manifests of `source`, read on a thread while the event loop works on `meanwhile` (a deploy's first
    requests go out while it reads). What is wrong with the manifests is said first, as before: `meanwhile` is then
    cancelled, and whatever it failed with is dropped."""
    try:
        return split_manifests(await _in_thread(source.documents))
    except BaseException:
        meanwhile.cancel()
        await asyncio.gather(meanwhile, return_exceptions=True)
        raise


@dataclass(frozen=True)
class Located:
    """The app as the cluster has it before the manifests are read, and the cluster's types."""

    app: record.App
    namespace: str  # where the app's record was looked for
    renamed_from: record.App | None  # the record the app is renamed from (`--prev-app`), renamed by `run`
    discovery: Discovery
    listed: Listed | None  # the app's objects of the types its record says it used, listed cluster-wide ahead


async def locate_app(cluster: Cluster, namespace: str, app_name: str, options: DeployOptions) -> Located:
    """The app, the record it is renamed from (`--prev-app`), discovery, and the app's objects of the types its
    record says it used, listed cluster-wide (`plan` lists what else it needs once it has read the manifests)."""
    (app, renamed_from), discovery = await asyncio.gather(
        record.find_or_rename(cluster, namespace, app_name, options.prev_app), cluster.discovery()
    )
    scope = _used_scope(app, options)
    if not app.stored or renamed_from is not None or scope is None or options.scope_to_fallback_namespaces:
        return Located(app, namespace, renamed_from, discovery, None)
    listed = await list_cluster_wide(cluster, types_in_scope(discovery, scope), app.label_selector)
    return Located(app, namespace, renamed_from, discovery, listed)


def _used_scope(app: record.App, options: DeployOptions) -> set[tuple[str, str]] | None:
    """The (group, kind)s the app's record says it used, where a deploy looks for the app's objects with those of
    its manifests; None: in every type (an app recorded without them, or `--dangerous-disable-gk-scoping`)."""
    if app.meta.used_gks is None or options.disable_gk_scoping:
        return None
    scope = set(app.meta.used_gks)
    if options.logs and (options.apply.ignored or options.wait.ignored):
        scope.add(("", "Pod"))  # kapp lists Pods to show their logs: their deletes are ignored changes it shows
    return scope


async def check_record(cluster: Cluster, located: Located, options: DeployOptions) -> None:
    """What stops kapp at the app's record, before it plans: a rename (`--prev-app`) in a diff run, and the record of
    a new app that could not be created."""
    app = located.app
    if located.renamed_from is not None and options.diff.run:
        # kapp renames before planning, but not in a diff run: it fails
        raise AppNotFoundError(
            f"{record.missing(app.namespace, app.name)}: {await record.elsewhere(cluster, app.name)}"
        )
    if not app.stored and not options.diff.run:  # kapp creates the record first: a missing namespace stops it here
        await record.check_creatable(cluster, app, options.app_labels)


@dataclass(frozen=True)
class Desired:
    """The resources to deploy, prepared for the app (validated, placed, labeled) and filtered (`--filter*`)."""

    resources: tuple[Document, ...]
    namespaces: tuple[str, ...]  # of the resources before the filters, as kapp: `(cluster)` for cluster-scoped ones
    not_allowed: tuple[str, ...]  # what --allow-check refuses (see Plan.check_allowed)


def desired_resources(manifests: Manifests, located: Located, placement: Placement, options: DeployOptions) -> Desired:
    """The manifests' resources prepared for the app. Refused: resources of a group version whose API service fails
    (see `api_services`), invalid ones, and none at all (it would delete the app's resources) unless allowed."""
    _check_api_services(manifests, located, options)
    label_key, label_value = record.ownership_label(located.app)
    prepared = prepare(
        manifests.docs,
        located.discovery,
        manifests.config,
        placement,
        {label_key: label_value},
        default_label_scoping=options.default_label_scoping,
    )
    check_names(prepared)
    namespaces = sorted({namespace(p.obj) or "(cluster)" for p in prepared})  # before the filters, as kapp
    if options.resource_filter is not None:
        prepared = [p for p in prepared if options.resource_filter.matches(p.obj)]
    not_allowed = _violations(prepared, options.allow, placement) if options.allow is not None else []
    if not prepared and not options.allow_empty and not options.patch:
        raise ManifestError(
            "Trying to apply empty set of resources will result in deletion of resources on cluster. "
            "Refusing to continue unless --dangerous-allow-empty-list-of-resources is specified."
        )
    return Desired(tuple(prepared), tuple(namespaces), tuple(not_allowed))


def _check_api_services(manifests: Manifests, located: Located, options: DeployOptions) -> None:
    """Refuse when an API service fails that serves a group version of the manifests' resources or one the app's
    record says it used (kapp's check, unless `--dangerous-ignore-failing-api-services`)."""
    required = {objects.api_version(d.obj) for d in manifests.docs} | {
        api_services.group_version(g, v) for g, v in located.app.meta.used_gvs
    }
    api_services.check_required(located.discovery, required, ignore=options.ignore_failing_api_services)


@dataclass(frozen=True)
class Existing:
    """The app's objects on the cluster, found by its label, and the desired resources found by name."""

    by_key: Mapping[ResourceKey, Obj]
    found_by_name: frozenset[ResourceKey]  # not the app's yet, but never transient (kapp's Get)
    listing: Listing | None  # how the app's objects were found (None: a new app, which has none)

    def transient(self, obj: Obj) -> bool:
        """Not created by the app itself (see `is_transient`: a controller made it, say); never one found by the
        name the manifests give it."""
        return key_of(obj) not in self.found_by_name and is_transient(obj)


async def existing_resources(
    cluster: Cluster, located: Located, desired: Desired, placement: Placement, options: DeployOptions
) -> Existing:
    """What the app has on the cluster: its objects (found by its label), and the desired resources the label did
    not find, looked for by name."""
    labeled, listing = await _labeled(cluster, located, desired, placement.default_namespace, options)
    by_key = {key_of(obj): obj for obj in labeled}
    unlabeled = await _found_by_name(cluster, located, desired, by_key.keys(), options)
    by_key.update((key_of(obj), obj) for obj in unlabeled)
    return Existing(by_key, frozenset(key_of(obj) for obj in unlabeled), listing)


async def _labeled(
    cluster: Cluster, located: Located, desired: Desired, default_ns: str, options: DeployOptions
) -> tuple[list[Obj], Listing | None]:
    """The app's objects, found by its label in the types its record and its manifests use (at the versions they
    were written with), and how they were found; a new app has none."""
    app = located.app
    if not app.stored:
        return [], None
    resources = [d.obj for d in desired.resources]
    scope = _used_scope(app, options)
    if scope is not None:
        scope |= {(group_of(r), r["kind"]) for r in resources}
    fallback = record.fallback_namespaces(app, default_ns, *(namespace(r) for r in resources))
    labeled = await list_labeled(
        cluster,
        types_in_scope(located.discovery, scope),
        app.label_selector,
        fallback,
        scope_to_fallback=options.scope_to_fallback_namespaces,
        listed=located.listed,
        needed={(group_of(r), objects.kind(r)) for r in resources},
    )
    labeled = _filtered(await at_written_versions(cluster, located.discovery, labeled), options)
    return labeled, Listing(None if scope is None else frozenset(scope), frozenset(fallback), _found(labeled))


async def _found_by_name(
    cluster: Cluster, located: Located, desired: Desired, labeled: Collection[ResourceKey], options: DeployOptions
) -> list[Obj]:
    """The desired resources the app's label did not find (not in `labeled`), as the cluster has them. Refused:
    those another app owns (unless `--dangerous-override-ownership-of-existing-resources`), and app records (kapp's
    disallowed labels check).

    kapp looks for the new resources the label did not find by their names in the manifests, before versioning:
    an unlabeled `config` is found for a versioned `config` (and deleted, as an older "version"), `config-ver-N`
    never is."""
    app = located.app
    label_key, label_value = record.ownership_label(app)
    prepared_by_key = _by_key(desired.resources)
    missing = [r for k, r in prepared_by_key.items() if k not in labeled]
    if missing:  # to be created, most likely: the apply's connections opened while they are looked up (issue 33)
        cluster.warm(min(len(missing), 2 * options.apply.concurrency) + 1)
    unlabeled = await get_each(cluster, located.discovery, missing)
    if not options.override_ownership:
        others = {owner for _, owner in foreign(unlabeled, prepared_by_key, label_value, label_key)}
        owners = await record.owners(cluster, app.namespace or located.namespace, label_key, others)
        check_ownership(unlabeled, prepared_by_key, label_value, owners, label_key)
    check_disallowed_labels(unlabeled, prepared_by_key, ResourceKey(app.namespace, "", "ConfigMap", app.configmap_name))
    return _filtered(unlabeled, options)


def _filtered(found: list[Obj], options: DeployOptions) -> list[Obj]:
    """The objects `--filter*` keeps."""
    return found if options.resource_filter is None else options.resource_filter.apply(found)


def _by_key(docs: Iterable[Document]) -> dict[ResourceKey, Obj]:
    return {key_of(d.obj): d.obj for d in docs}


@dataclass(frozen=True)
class Changes:
    """The changes from the app's existing resources to the desired ones, and the kinds the app uses after them."""

    changes: tuple[Change, ...]  # as the server confirms them, filtered
    used: frozenset[GroupVersionKind]  # of the new resources, and of the existing ones the deploy keeps
    new_used: frozenset[GroupVersionKind]  # of the new resources


async def calculate_changes(
    cluster: Cluster, discovery: Discovery, config: Config, desired: Desired, existing: Existing, options: DeployOptions
) -> Changes:
    """The changes that take the existing resources to the desired ones: calculated, then confirmed by a dry run
    (`--diff-server-side`) and filtered (`--diff-filter`, `--patch`)."""
    resolved = desired_versions(desired, existing, config, datetime.now(UTC))
    changes = resource_changes(resolved, existing, config, options)
    if options.diff.server_side_check:
        changes = await server_check.check_all(cluster, discovery, changes, config)
    new_by_key = _by_key(resolved.desired)
    new_used = kinds_of(new_by_key.values())
    used = new_used | kept_kinds(new_by_key.keys(), existing, options)
    return Changes(tuple(filtered_changes(changes, options)), used, new_used)


def desired_versions(desired: Desired, existing: Existing, config: Config, now: datetime) -> versioned.Versioned:
    """The desired resources renewed (`kapp.k14s.io/renew-duration`, as of `now`), then given their versioned names.

    Renewal comes first, as in kapp: a renewed versioned resource differs from its latest version, so it is a
    new version, not an update of the current one."""
    found = list(existing.by_key.values())
    current = versioned.current_by_key(found)
    renewals = [replace(d, obj=renewed(d.obj, current.get(key_of(d.obj)), now)) for d in desired.resources]
    return versioned.resolve(renewals, found, config)


def resource_changes(
    resolved: versioned.Versioned, existing: Existing, config: Config, options: DeployOptions
) -> list[Change]:
    """The change of each desired resource (a new version's shown against the version before it), then the delete
    of each existing resource no longer desired, but old versions kept; in kapp's order (versioned resources' changes
    first, see kapply.diff.kapp_order)."""
    new_by_key = _by_key(resolved.desired)
    origins = {key_of(d.obj): d.origin for d in resolved.desired}
    changes = [
        calculate(
            new,
            existing.by_key.get(key),
            config,
            origin=origins[key],
            against_last_applied=options.diff.against_last_applied,
            policy=options.drift_policy,
        )
        for key, new in new_by_key.items()
    ]
    changes = [
        versioned.against_previous(c, resolved.previous[c.key], config) if c.key in resolved.previous else c
        for c in changes
    ]
    return in_kapp_order(changes + _deletes(new_by_key.keys(), resolved.keep, existing, config, options))


def _deletes(
    new_keys: Collection[ResourceKey],
    keep: Collection[ResourceKey],
    existing: Existing,
    config: Config,
    options: DeployOptions,
) -> list[Change]:
    """The deletes of the existing resources not in `new_keys`, but the old versions to `keep`. Deleting a transient
    object is an ignored change."""
    ignored_shown = options.apply.ignored or options.wait.ignored  # else ignored changes are neither shown nor run
    gone = [obj for key, obj in existing.by_key.items() if key not in new_keys and key not in keep]
    return [
        calculate(None, obj, config, transient=ignored)
        for obj, ignored in ((obj, existing.transient(obj)) for obj in gone)
        if ignored_shown or not ignored
    ]


def filtered_changes(changes: Sequence[Change], options: DeployOptions) -> list[Change]:
    """The changes `--diff-filter` keeps; under `--patch` (kapp's), no deletes: existing resources the new ones do not
    name are left alone."""
    kept = list(changes) if options.change_filter is None else options.change_filter.apply(changes)
    return [c for c in kept if c.op is not Op.DELETE] if options.patch else kept


def kept_kinds(
    new_keys: Collection[ResourceKey], existing: Existing, options: DeployOptions
) -> frozenset[GroupVersionKind]:
    """The kinds of the existing resources but transient objects (under `--patch`, of those the new resources name
    only): with the new resources' kinds, the kinds the app's record says it uses while the deploy applies."""
    kept = new_keys if options.patch else existing.by_key.keys()  # patch: only the existing ones named
    return kinds_of(o for k, o in existing.by_key.items() if k in kept and not existing.transient(o))


def _cluster_changes(changes: Sequence[Change], config: Config, options: DeployOptions) -> tuple[ClusterChange, ...]:
    """The changes as they apply and wait (see `cluster_changes`): those that apply or wait on something."""
    return tuple(
        cluster_changes(
            changes,
            config,
            options.wait.wait,
            apply_ignored=options.apply.ignored,
            wait_ignored=options.wait.ignored,
        )
    )


def _in_thread(work: Callable[[], T]) -> asyncio.Future[T]:
    """`work()` on a thread of its own while the event loop goes on (a deploy's first requests go out while it reads
    the manifests). A daemon thread, not asyncio's executor: a read blocked on stdin or a URL must not keep the
    process from exiting on Ctrl-C (`asyncio.run` waits for its executor's threads)."""
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        if done.set_running_or_notify_cancel():
            try:
                done.set_result(work())
            except BaseException as e:  # handed to the awaiting task, as an executor does
                done.set_exception(e)

    threading.Thread(target=run, name="kapply-read", daemon=True).start()
    return asyncio.wrap_future(done)


async def check(cluster: Cluster, plan: Plan) -> None:
    """The checks kapp makes after showing the plan and before asking to go on: `--allow-*` (ManifestError), then
    the preflight checks (PreflightError) when the plan changes something: those `--preflight` names, else those the
    Config's `preflightRules` name (kapp's rule)."""
    plan.check_allowed()
    checks = plan.options.preflight
    if checks is None:
        named = {rule.name.value for rule in plan.config.preflight_rules}
        checks = tuple(name for name in preflight.CHECKS if name in named)
    if plan.pending and checks:
        await preflight.run(cluster, plan.discovery, plan.changes, checks)


def write_app_metadata(path: str, app: record.App, meta: AppMeta | None = None) -> None:
    """kapp's `--app-metadata-file-output`: the app's metadata as its record holds it (`meta`, else the app's), the
    compact JSON of `data.spec`; nothing when `path` is "". A file that cannot be written is skipped, as kapp does."""
    if not path:
        return
    if app.labeled:  # a labeled app has no record: kapp writes empty metadata
        meta = AppMeta("", "", used_gks=None)
    try:
        with open(path, "wb") as file:
            file.write((meta or app.meta).to_json())
    except OSError:
        pass


def _violations(prepared: Sequence[Document], rules: AllowRules, placement: Placement) -> list[str]:
    """kapp's --allow-check, imported only when its flags are given."""
    from kapply.resources.allow import violations

    return violations(prepared, rules, placement)


def _logged_progress() -> Progress:
    """The progress of a caller that gives none (the API's), imported only then."""
    from kapply.apply.progress import LoggedProgress

    return LoggedProgress()


async def run(cluster: Cluster, plan: Plan, progress: Progress | None = None) -> Result:
    """Apply the plan and record it as an app-change (with its masked diff), holding the app meanwhile (see
    `kapply.app.lock`: a concurrent deploy, or one that ran since the plan, stops this one before it applies)."""
    options = plan.options
    plan.check_allowed()
    if plan.app.labeled:  # no record and no history: only the resources
        return await _apply_labeled(cluster, plan, progress or _logged_progress())
    app = await _under_its_name(cluster, plan)
    if not plan.changes and app.stored:  # nothing to apply: kapp writes nothing but new labels
        if options.app_labels:
            await record.update_record(cluster, app, lambda cm: record.merge_labels(cm, options.app_labels))
        plan.write_app_metadata()
        return Result(app, (), "", (), 0)
    # The hold, the rename and the apply loop are imported where they run: a deploy that changes nothing never
    # does, and its start-up is mostly imports (bench/why.md).
    from kapply.app.lock import hold

    # The record's kinds written with the hold (issue 33: one write of the record, not two).
    used = app.meta.with_used(plan.used) if plan.changes else None
    if plan.changes:  # the apply's connections (its writes, their corrections) opened while the hold is taken, if
        # the lookups of the resources to create did not open them
        cluster.warm(min(len(plan.changes), 2 * options.apply.concurrency) + 1)
    revalidate = partial(_still_as_planned, cluster, plan)
    async with hold(cluster, app, options.app_labels, revalidate=revalidate, meta=used) as app:
        if not plan.changes:  # a new app is recorded even when it has nothing to apply, as kapp does
            write_app_metadata(options.app_metadata_file, app)
            return Result(app, (), "", (), 0)
        return await _apply(cluster, plan, app, progress or _logged_progress())


async def _under_its_name(cluster: Cluster, plan: Plan) -> record.App:
    """The app, its record stored under the name it is deployed as (before `run` holds it)."""
    app = plan.app
    if plan.renamed_from is not None:  # kapp's --prev-app: the earlier record takes the new name
        from kapply.app.rename import rename

        await rename(cluster, plan.renamed_from, app.name, app.namespace)
    elif app.stored and record.fq_names() and not app.configmap_name.endswith(record.FQ_SUFFIX):
        app = await _migrated(cluster, app)
    return app


async def _migrated(cluster: Cluster, app: record.App) -> record.App:
    """kapp's migration under KAPP_FQ_CONFIGMAP_NAMES=true: an app recorded as `<app>` is recorded anew as
    `<app>.apps.k14s.io` (annotated `kapp.k14s.io/is-configmap-migrated`) and the old record deleted, as every deploy
    that applies does (not a diff run). Not while another deploy or delete holds the app."""
    from kapply.app.lock import held_by_other
    from kapply.app.rename import rename

    current = await cluster.get(record.CONFIGMAPS, app.namespace, app.configmap_name)
    other = None if current is None else held_by_other(current, "", datetime.now(UTC))
    if other is not None:
        raise ConcurrencyError(f"{app.describe()} is being deployed or deleted by {other}; nothing was applied")
    await rename(cluster, app, app.name, app.namespace)
    return replace(app, configmap_name=app.name + record.FQ_SUFFIX)


async def _still_as_planned(cluster: Cluster, plan: Plan, recorded: AppMeta) -> None:
    """Another deploy ran since the plan (its record now holds `recorded`). The deploy goes ahead, as kapp's does,
    if the app has exactly the objects the plan was made with: each update then checks that its approved diff still
    holds (`kapply.apply.execute`). Otherwise it is refused: a plan that does not know some of the app's objects
    would leave them behind, and one that counts on objects gone would fail half-way."""
    from kapply.app.lock import changed_since_planned

    listing = plan.listing
    if listing is None:
        raise changed_since_planned(plan.app)
    scope = None
    if listing.scope is not None and recorded.used_gks is not None:
        scope = set(listing.scope) | set(recorded.used_gks)
    found = await list_labeled(
        cluster,
        types_in_scope(plan.discovery, scope),
        plan.app.label_selector,
        listing.fallback_namespaces,
        scope_to_fallback=plan.options.scope_to_fallback_namespaces,
    )
    if plan.options.resource_filter is not None:
        found = plan.options.resource_filter.apply(found)
    if _found(found) != listing.found:
        raise changed_since_planned(plan.app)


async def _apply_labeled(cluster: Cluster, plan: Plan, progress: Progress) -> Result:
    from kapply.apply.loop import ApplyLoop

    options = plan.options
    if not plan.changes:
        plan.write_app_metadata()
        return Result(plan.app, (), "", (), 0)
    loop = ApplyLoop(
        cluster,
        plan.discovery,
        plan.config,
        plan.app.label_selector,
        options.apply,
        options.wait,
        progress,
        plan.masks,
    )
    try:
        waited = await loop.run(plan.changes, plan.graph)
    finally:
        plan.write_app_metadata()
    return Result(plan.app, plan.changes, "", waited, 0)


async def _apply(cluster: Cluster, plan: Plan, app: record.App, progress: Progress) -> Result:
    """Apply the plan as the app's change; `app` as held, its record already naming the kinds the plan uses."""
    from kapply.app.lock import released
    from kapply.apply.loop import ApplyLoop

    options = plan.options
    stored_diff = plan.line_diffs()
    summary = description(plan.changes)
    app, change = await history.begin(
        cluster,
        app,
        f"rollback to {options.rollback_of}: {summary}" if options.rollback_of else summary,
        list(plan.namespaces),
        stored_diff,
        record=options.app_changes_max_to_keep > 0,
        applied=plan.applied,
        warn=progress.warn,
    )
    begun = app.meta  # what kapp's --app-metadata-file-output holds: the change begun, not finished
    loop = ApplyLoop(
        cluster, plan.discovery, plan.config, app.meta.label_selector, options.apply, options.wait, progress, plan.masks
    )
    try:
        waited = await loop.run(plan.changes, plan.graph)
    except KapplyError as failure:
        await history.record_failure(cluster, app, change, failure)
        write_app_metadata(options.app_metadata_file, app, begun)
        raise
    except asyncio.CancelledError:  # interrupted (Ctrl-C, SIGTERM): the change did not finish well either
        await history.record_interrupted(cluster, app, change)
        write_app_metadata(options.app_metadata_file, app, begun)
        raise
    write_app_metadata(options.app_metadata_file, app, begun.with_used(plan.new_used))
    # The last writes together (issue 33: round trips): the change finished, the record's kinds and the hold's
    # release in one write of the record, beside the change's own and the history's collection (which never deletes
    # the newest change, this one).
    final = replace(app, meta=app.meta.with_used(plan.new_used))
    finished = history.finish(cluster, final, change, True, also=released(app))
    change_name = change.name
    if options.app_changes_max_to_keep <= 0:
        return Result(await finished, plan.changes, change_name, waited, 0)
    done, collected = await asyncio.gather(
        finished, history.gc(cluster, app, options.app_changes_max_to_keep), return_exceptions=True
    )
    for result in (done, collected):
        if isinstance(result, BaseException):
            raise result  # the record's first, as when one followed the other
    assert isinstance(done, record.App) and isinstance(collected, int)
    return Result(done, plan.changes, change_name, waited, collected)
