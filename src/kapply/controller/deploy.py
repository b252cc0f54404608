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
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any

from kapply import objects
from kapply.api import AsyncClient, DeployOptions, DriftPolicy, FieldReport, Plan, Transcript
from kapply.controller.cache import CachedCluster, Read, Reads, cached_reads
from kapply.controller.options import from_spec, shows_changes
from kapply.controller.spec import AppSpec
from kapply.errors import KapplyError
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
    `last_digest` and `quiet` are what the last sync of the App left (see `Deployed`)."""

    controller: AsyncClient
    client: AsyncClient
    name: str
    namespace: str
    spec: AppSpec
    manifests: str
    last_digest: str = ""  # of the desired state last deployed ("" when none was, by this process)
    quiet: Quiet | None = None


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
    digest of the desired state, the fields left drifted and the ghost diffs (with their writers)."""

    changes: int
    changed: bool
    output: str
    digest: str
    drift: tuple[FieldReport, ...]
    ghosts: tuple[FieldReport, ...]
    quiet: Quiet | None = None  # for the next sync: this one changed nothing, and what its plan was made from


@dataclass(frozen=True, slots=True)
class Quiet:
    """A plan that changed nothing, made from the cache alone, and what it was made from (see the module's
    docstring); `output` is what the sync reported."""

    digest: str
    desired: tuple[str, DeployOptions]  # what else the plan was made for: the default namespace, the options
    client: AsyncClient
    seen: tuple[tuple[Read, Hashable], ...]
    label: str
    types: tuple[ResourceType, ...]
    namespaces: tuple[str, ...]
    output: str

    def holds(self, client: AsyncClient, digest: str, desired: tuple[str, DeployOptions]) -> bool:
        """Whether a plan made now would be this one: same desired state and client, nothing it read moved."""
        cluster = client.cluster
        return (
            client is self.client
            and digest == self.digest
            and desired == self.desired
            and isinstance(cluster, CachedCluster)
            and cluster.cache.unchanged(self.seen)
        )

    def deployed(self) -> Deployed:
        return Deployed(0, False, self.output, self.digest, (), (), self)


class DeployFailed(KapplyError):
    """The deploy failed; `output` is what it printed until then."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


def kapp_app_name(name: str) -> str:
    """The kapp app an App deploys as: `<name>.app`, as kapp-controller names it (so records carry over)."""
    return f"{name}.app"


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
        options = replace(options, drift_policy=spec.drift_policy)
        digest = desired_digest(manifests, raw, spec.drift_policy)
        desired = (spec.default_namespace or request.namespace, options)
        if request.quiet is not None and request.quiet.holds(client, digest, desired):
            hooks.track(request.quiet.label, list(request.quiet.types), request.quiet.namespaces)
            await hooks.owns()
            return request.quiet.deployed()
        out.line(await client.target())
        plan, reads = await _plan(request, desired)
        hooks.track(plan.app.meta.label_value, client.resource_types(plan), _namespaces(plan))
        out.plan(plan, hunks=shows_changes(raw))
        found = await request.controller.outside_fields(plan, ghosts=request.last_digest == digest)
        changed = bool(plan.pending and not options.diff.run)
        if changed or plan.app.stored:
            await hooks.owns()
        if changed:
            await hooks.report(out.text)
            async with _reporting(lambda: out.text, hooks.report, hooks.interval):
                await client.run_deploy(plan, progress=out.progress())
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
        )
    return Deployed(len(plan.changes), changed, out.text, digest, found.drift, found.ghosts, remembered)


async def _plan(request: DeployRequest, desired: tuple[str, DeployOptions]) -> tuple[Plan, Reads | None]:
    """The plan, from the cache when it changes nothing or when the objects it would change are still the versions it
    was made from (with what its reads did), else from the API server (no reads from the cache: None); see the
    module's docstring."""
    client = request.client

    async def planned() -> Plan:
        return await client.plan_deploy(
            kapp_app_name(request.name),
            manifests=request.manifests,
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
    """A plan of a recorded app that neither applies nor waits on anything and finds no drift."""
    return plan.app.stored and not plan.changes and not plan.drifted


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
