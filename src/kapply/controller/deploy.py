"""The deploy stage: the templated YAML deployed as the App's kapp app with the App's service account, through
kapply's Python API (`plan_deploy`, then `run_deploy` when the plan changes something), as kapp-controller's
app_deploy.go runs `kapp deploy`. It also finds what the drift policy leaves drifted and, for a desired state that
did not change since the last sync, the ghost diffs (fields some other writer keeps changing).

The plan is made from the watch-fed cache (cache.py): the App's record and objects as the watches last saw them. A
plan that changes nothing is the sync's answer, with no request at all. One that would change something (or reports
drift) is checked against the API server first: the objects it would update or delete are read again (a GET each,
or one LIST for many of a type), and when each is still the version the plan was made from, the plan stands; when
the cache lagged, the deploy is planned again from the API server. Every write still carries the resourceVersion it
was planned from, so the API server refuses (409) any write to an object that changed since.

A plan is a function of the desired state, of what the App's account may read (its client), and of the objects and
the record it read. After a plan that changed nothing, made from the cache alone, the next sync compares those (the
digest of the desired state, the client, the versions of what was read, from the cache's indexes) and when none
moved, the plan is not made again (`Quiet`): the idle sync's CPU is then its fetch and template."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any

from kapply import objects
from kapply.api import AsyncClient, DeployOptions, DriftPolicy, FieldReport, Plan, Transcript
from kapply.controller import owners
from kapply.controller.cache import CachedCluster, Read, Reads, cached_reads
from kapply.controller.options import from_spec, shows_changes
from kapply.controller.spec import AppSpec
from kapply.controller.status import now
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType

# Told which resource types and label an App's deploy covers, before anything is applied, so that a change made to
# them right after the deploy is seen as drift.
Track = Callable[[str, list[ResourceType], tuple[str, ...]], None]
# Told the output so far while a deploy runs: once before it applies anything, then every `interval` seconds.
Report = Callable[[str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class DeployRequest:
    """What the stage deploys, and with whom: `controller` (the controller's own client) finds who wrote drifted
    fields; `client` (the App's service account) does everything else. `manifests` is the templated YAML;
    `last_digest` and `quiet` are what the last sync of the App left (see `Deployed`); `owners`, the App's owned
    fields (controller/owners.py), and `period`, its sync period: a writer seen again within it is a controller."""

    controller: AsyncClient
    client: AsyncClient
    name: str
    namespace: str
    spec: AppSpec
    manifests: str
    last_digest: str = ""  # of the desired state last deployed ("" when none was, by this process)
    quiet: Quiet | None = None
    owners: owners.Owners = field(default_factory=owners.Owners)
    period: float = 0.0


@dataclass(frozen=True, slots=True)
class Hooks:
    """What the stage tells the reconciler: `track` before anything is applied; `owns` runs before anything is applied
    and whenever the app has a record on the cluster (the App then owns resources: its finalizer); `report` gets the
    output once before anything is applied, then every `interval` seconds while it grows."""

    track: Track
    owns: Callable[[], Awaitable[None]]
    report: Report
    interval: float


@dataclass(frozen=True, slots=True)
class Deployed:
    """What the stage did: whether it applied anything, its output (the changes table and progress lines), the
    digest of the desired state, the fields left drifted and the ghost diffs (with their writers); the known owners
    in force (`known`, those found on the cluster among them: `cluster`) and the fields this sync began to hold."""

    changes: int
    changed: bool
    output: str
    digest: str
    drift: tuple[FieldReport, ...]
    ghosts: tuple[FieldReport, ...]
    quiet: Quiet | None = None  # for the next sync: this one changed nothing, and what its plan was made from
    known: tuple[owners.Known, ...] = ()
    cluster: tuple[owners.Known, ...] = ()
    held: tuple[owners.Hold, ...] = ()
    associated: Obj = field(default_factory=dict)  # status.deploy.kapp.associatedResources


@dataclass(frozen=True, slots=True)
class Quiet:
    """A plan that changed nothing, made from the cache alone, and what it was made from (see the module's
    docstring); `output` is what the sync reported; `owned`, the rules of the App's memory the plan was made with
    (owners.rules of the known owners found on the cluster and the held fields), `known` the known owners in force."""

    digest: str
    desired: tuple[str, DeployOptions]  # what else the plan was made for: the default namespace, the options
    client: AsyncClient
    seen: tuple[tuple[Read, Hashable], ...]
    label: str
    types: tuple[ResourceType, ...]
    namespaces: tuple[str, ...]
    output: str
    owned: tuple[Obj, ...] = ()
    known: tuple[owners.Known, ...] = ()
    cluster: tuple[owners.Known, ...] = ()
    associated: Obj = field(default_factory=dict)

    def holds(
        self, client: AsyncClient, digest: str, desired: tuple[str, DeployOptions], owned: tuple[Obj, ...]
    ) -> bool:
        """Whether a plan made now would be this one: same desired state, owned fields and client, nothing it read
        moved."""
        cluster = client.cluster
        return (
            client is self.client
            and digest == self.digest
            and desired == self.desired
            and owned == self.owned
            and isinstance(cluster, CachedCluster)
            and cluster.cache.unchanged(self.seen)
        )

    def deployed(self) -> Deployed:
        return Deployed(
            0, False, self.output, self.digest, (), (), self, self.known, self.cluster, associated=self.associated
        )


class DeployFailed(KapplyError):
    """The deploy failed; `output` is what it printed until then."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


def kapp_app_name(name: str) -> str:
    """The kapp app an App deploys as: `<name>.app`, as kapp-controller names it (so records carry over)."""
    return f"{name}.app"


def legacy_app_name(name: str) -> str:
    """The kapp app an older kapp-controller deployed an App as (`<name>-ctrl`): kapp-controller passes it as
    `--prev-app`, so that a deploy renames that record to `kapp_app_name` (its app-changes follow the record)."""
    return f"{name}-ctrl"


def desired_digest(manifests: str, raw: dict[str, Any], policy: DriftPolicy) -> str:
    """What identifies a desired state: the templated YAML, the deploy options and the drift policy."""
    return hashlib.sha256(manifests.encode() + repr(sorted(raw.items())).encode() + policy.encode()).hexdigest()


async def deploy(request: DeployRequest, hooks: Hooks) -> Deployed:
    """Plan and, when the plan changes something, apply. `request.quiet`: what the last sync remembered of a plan that
    changed nothing (see `Quiet`)."""
    client, spec, manifests = request.client, request.spec, request.manifests
    out = Transcript()
    try:
        options, raw = from_spec(spec.deploy)
        options = replace(options, drift_policy=spec.drift_policy, prev_app=legacy_app_name(request.name))
        digest = desired_digest(manifests, raw, spec.drift_policy)
        desired = (spec.default_namespace or request.namespace, options)
        held = tuple(h for h in request.owners.held.values() if h.digest == digest)  # a new desired state ends holds
        owned = owners.rules(request.owners.cluster, held)
        if request.quiet is not None and request.quiet.holds(client, digest, desired, owned):
            hooks.track(request.quiet.label, list(request.quiet.types), request.quiet.namespaces)
            await hooks.owns()
            return request.quiet.deployed()
        out.line(await client.target())
        known, cluster = await _known_owners(request, desired[0])
        plan, reads = await _plan(request, desired, owners.with_rules(manifests, owners.rules(known, held)))
        found = await request.controller.outside_fields(plan, ghosts=request.last_digest == digest)
        again = owners.seen_again(found.ghosts, request.owners.reverted, time.monotonic(), request.period)
        new = tuple(
            owners.Hold(r.resource, r.path, owners.writer(r), now(), digest, owners.hold_rule(r)) for r in again
        )
        if new:  # a controller owns these: planned again, holding them at the cluster's value
            held += new
            plan, reads = await _plan(request, desired, owners.with_rules(manifests, owners.rules(known, held)))
            found = await request.controller.outside_fields(plan, ghosts=request.last_digest == digest)
        hooks.track(plan.app.meta.label_value, client.resource_types(plan), _namespaces(plan))
        out.plan(plan, hunks=shows_changes(raw))
        changed = bool(plan.pending and not options.diff.run)
        if changed or plan.app.stored:
            await hooks.owns()
        if changed:
            await hooks.report(out.text)
            async with _reporting(lambda: out.text, hooks.report, hooks.interval):
                await client.run_deploy(plan, progress=out.progress())
        elif plan.renamed_from is not None and not options.diff.run:
            await client.run_deploy(plan)  # as kapp does first: the legacy record renamed, nothing else written
        out.finish()
    except KapplyError as e:
        raise DeployFailed(str(e), out.text) from e
    remembered = None
    if reads is not None and not reads.asked and quiet_plan(plan) and objects.RENEW_DURATION not in manifests:
        remembered = Quiet(
            digest,
            desired,
            client,
            tuple(reads.seen),
            plan.app.meta.label_value,
            tuple(client.resource_types(plan)),
            _namespaces(plan),
            out.text,
            owners.rules(cluster, held),
            known,
            cluster,
            associated_resources(plan),
        )
    return Deployed(
        len(plan.changes),
        changed,
        out.text,
        digest,
        found.drift,
        found.ghosts,
        remembered,
        known,
        cluster,
        new,
        associated_resources(plan),
    )


def associated_resources(plan: Plan) -> Obj:
    """`status.deploy.kapp.associatedResources` as kapp-controller writes it from the app's metadata after a deploy:
    the app's label, the namespaces of its resources (`(cluster)` for cluster-scoped ones) and the kinds it uses,
    sorted as kapp sorts them (`Kind.group`)."""
    kinds = sorted({(gvk[0], gvk[2]) for gvk in plan.used}, key=lambda gk: f"{gk[1]}.{gk[0]}" if gk[0] else gk[1])
    out: Obj = {"label": plan.app.meta.label_selector}
    if plan.namespaces:
        out["namespaces"] = list(plan.namespaces)
    if kinds:
        out["groupKinds"] = [{"group": group, "kind": kind} for group, kind in kinds]
    return out


async def _known_owners(
    request: DeployRequest, namespace: str
) -> tuple[tuple[owners.Known, ...], tuple[owners.Known, ...]]:
    """The App's workloads an HPA targets (controller/owners.py): all of them, and those whose HPA is on the cluster
    (read with the controller's client: one LIST per namespace of the App's workloads) rather than in the App's own
    manifests."""
    documents = owners.documents(request.manifests)
    workloads = owners.workloads(documents, namespace)
    if not workloads:
        return (), ()
    inside = owners.known(workloads, owners.hpas(documents), namespace)
    outside = owners.known(workloads, await owners.on_cluster(request.controller, workloads), namespace)
    return tuple(sorted({*inside, *outside})), tuple(
        k for k in outside if k.workload not in {i.workload for i in inside}
    )


async def _plan(
    request: DeployRequest, desired: tuple[str, DeployOptions], manifests: str
) -> tuple[Plan, Reads | None]:
    """The plan of `manifests` (the App's, with the rules of its owned fields), from the cache when it changes nothing
    or when the objects it would change are still the versions it was made from (with what its reads did), else from
    the API server (no reads from the cache: None); see the module's docstring."""
    client = request.client

    async def planned() -> Plan:
        return await client.plan_deploy(
            kapp_app_name(request.name),
            manifests=manifests,
            namespace=desired[0],
            app_namespace=request.namespace,
            options=desired[1],
        )

    with cached_reads() as reads:
        plan = await planned()
    if quiet_plan(plan) or await client.still_current(plan):
        return plan, reads
    return await planned(), None


def quiet_plan(plan: Plan) -> bool:
    """A plan of a recorded app that neither applies nor waits on anything, finds no drift and renames no record."""
    return plan.app.stored and not plan.changes and not plan.drifted and plan.renamed_from is None


def _namespaces(plan: Plan) -> tuple[str, ...]:
    return tuple(n for n in plan.namespaces if n != "(cluster)")


@contextlib.asynccontextmanager
async def _reporting(output: Callable[[], str], report: Report, interval: float) -> AsyncIterator[None]:
    """Report the output every `interval` seconds while it grows (a long deploy shows its progress in status)."""

    async def loop() -> None:
        shown = output()
        while True:
            await asyncio.sleep(interval)
            if (now := output()) != shown:
                shown = now
                with contextlib.suppress(KapplyError):
                    await report(now)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def field_key(item: FieldReport) -> tuple[str, str]:
    """What identifies a reported field across syncs: its resource and path."""
    return item.resource, item.path
