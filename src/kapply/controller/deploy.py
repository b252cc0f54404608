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
import io
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kapply import objects
from kapply.api import AsyncClient
from kapply.config.config import Config
from kapply.controller.cache import CachedCluster, Read, Reads, cached_reads
from kapply.controller.options import from_spec
from kapply.controller.spec import AppSpec
from kapply.deploy import DeployOptions, Plan
from kapply.diff.attribution import OutsideField
from kapply.diff.change import Change, Op
from kapply.diff.drift import DriftPolicy
from kapply.diff.ghost import FieldDrift, explain
from kapply.errors import KapplyError
from kapply.flags import diff_view
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType
from kapply.resources.labeled import get_each

# Told which resource types and label an App's deploy covers, before anything is applied, so that a change made to
# them right after the deploy is seen as drift.
Track = Callable[[str, list[ResourceType], tuple[str, ...]], None]
# Told the output so far while a deploy runs: once before it applies anything, then every `interval` seconds.
Report = Callable[[str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Deployed:
    """What the stage did: whether it applied anything, its output (the changes table and progress lines), the
    digest of the desired state, the fields left drifted and the ghost diffs (with their writers)."""

    changes: int
    changed: bool
    output: str
    digest: str
    drift: list[OutsideField]
    ghosts: list[OutsideField]
    config: Config
    quiet: Quiet | None = None  # for the next sync: this one changed nothing, and what its plan was made from


@dataclass(frozen=True, slots=True)
class Quiet:
    """A plan that changed nothing, made from the cache alone, and what it was made from (see the module's
    docstring); `output` and `config` are what the sync reported."""

    digest: str
    desired: tuple[str, DeployOptions]  # what else the plan was made for: the default namespace, the options
    client: AsyncClient
    seen: tuple[tuple[Read, Hashable], ...]
    label: str
    types: tuple[ResourceType, ...]
    namespaces: tuple[str, ...]
    output: str
    config: Config

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
        return Deployed(0, False, self.output, self.digest, [], [], self.config, self)


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


def ghost_diffs(plan: Plan) -> list[tuple[Change, tuple[FieldDrift, ...]]]:
    """The fields each update of the plan changes, for a plan whose desired state is the one deployed last time:
    every one of them was changed on the cluster since (a ghost diff)."""
    found = []
    for change in (c.change for c in plan.changes if c.change.op is Op.UPDATE):
        if change.left is not None and change.right is not None and change.existing is not None:
            found.append((change, tuple(explain(change.left, change.right, change.existing, change.new))))
    return found


async def deploy(
    controller: AsyncClient,
    client: AsyncClient,
    name: str,
    namespace: str,
    spec: AppSpec,
    manifests: str,
    last_digest: str,
    *,
    quiet: Quiet | None = None,
    track: Track,
    owns: Callable[[], Awaitable[None]],
    report: Report,
    interval: float,
) -> Deployed:
    """Plan and, when the plan changes something, apply. `controller` (the controller's own client) finds who wrote
    drifted fields; `client` (the App's service account) does everything else. `owns` runs before anything is applied
    and whenever the app has a record on the cluster (the App then owns resources: its finalizer); `report` gets the
    output once before anything is applied, then every `interval` seconds while it grows. `quiet`: what the last sync
    remembered of a plan that changed nothing (see `Quiet`)."""
    from kapply.ui.changes import changes_table, show_hunks
    from kapply.ui.messages import ProgressLines
    from kapply.ui.output import Output

    text = io.StringIO()
    out = Output(tty=True, out=text)
    try:
        options, raw = from_spec(spec.deploy)
        options = replace(options, drift_policy=spec.drift_policy)
        digest = desired_digest(manifests, raw, spec.drift_policy)
        desired = (spec.default_namespace or namespace, options)
        if quiet is not None and quiet.holds(client, digest, desired):
            track(quiet.label, list(quiet.types), quiet.namespaces)
            await owns()
            return quiet.deployed()
        out.line(await client.target())
        with tempfile.TemporaryDirectory(prefix="kapply-deploy-") as scratch:  # not among the App's files
            path = Path(scratch) / "manifests.yml"
            path.write_text(manifests)
            plan, reads = await _plan(client, name, namespace, desired[0], path, options)
        track(plan.app.meta.label_value, _types(plan), _namespaces(plan))
        if diff_view(raw).changes:
            show_hunks(out, plan.hunks())
        out.table(changes_table(plan.changes))
        ghosts = ghost_diffs(plan) if last_digest == digest else []
        drift = await controller.outside_changes(plan) if spec.drift_policy is not DriftPolicy.ENFORCE else []
        ghost_fields = await controller.outside_changes(plan, ghosts)
        changed = bool(plan.pending and not options.diff.run)
        if changed or plan.app.stored:
            await owns()
        if changed:
            await report(text.getvalue())
            async with _reporting(text, report, interval):
                await client.run_deploy(plan, progress=ProgressLines(out))
        out.finish()
    except KapplyError as e:
        raise DeployFailed(str(e), text.getvalue()) from e
    remembered = None
    if reads is not None and not reads.asked and quiet_plan(plan) and objects.RENEW_DURATION not in manifests:
        remembered = Quiet(
            digest,
            desired,
            client,
            tuple(reads.seen),
            plan.app.meta.label_value,
            tuple(_types(plan)),
            _namespaces(plan),
            text.getvalue(),
            plan.config,
        )
    return Deployed(len(plan.changes), changed, text.getvalue(), digest, drift, ghost_fields, plan.config, remembered)


async def _plan(
    client: AsyncClient, name: str, namespace: str, default_namespace: str, path: Path, options: DeployOptions
) -> tuple[Plan, Reads | None]:
    """The plan, from the cache when it changes nothing or when the objects it would change are still the versions it
    was made from (with what its reads did), else from the API server (no reads from the cache: None); see the
    module's docstring."""

    async def planned() -> Plan:
        return await client.plan_deploy(
            kapp_app_name(name),
            files=[str(path)],
            namespace=default_namespace,
            app_namespace=namespace,
            options=options,
        )

    with cached_reads() as reads:
        plan = await planned()
    if quiet_plan(plan) or await still_current(client, plan):
        return plan, reads
    return await planned(), None


def quiet_plan(plan: Plan) -> bool:
    """A plan of a recorded app that neither applies nor waits on anything and finds no drift."""
    return plan.app.stored and not plan.changes and not plan.drifted


def touched(plan: Plan) -> list[Obj]:
    """The live objects the plan's changes start from (those it would update or delete, and the drifted ones)."""
    changes = [c.change for c in plan.changes] + list(plan.drifted)
    return list({objects.uid(c.existing): c.existing for c in changes if c.existing is not None}.values())


async def still_current(client: AsyncClient, plan: Plan) -> bool:
    """Whether each object the plan starts from is, on the API server, the version the plan saw."""
    read = touched(plan)
    if not read:
        return True
    seen = {objects.uid(obj): objects.metadata(obj).get("resourceVersion") for obj in read}
    live = await get_each(client.cluster, plan.discovery, read)
    return {objects.uid(obj): objects.metadata(obj).get("resourceVersion") for obj in live} == seen


def _types(plan: Plan) -> list[ResourceType]:
    """The types of the app's objects, each at its group's preferred version: the version a deploy lists them at, so
    the watch of a type keeps what the next plan lists."""
    found = (plan.discovery.preferred(g, k) for g, _, k in plan.used)
    return list({t: None for t in found if t is not None})


def _namespaces(plan: Plan) -> tuple[str, ...]:
    return tuple(n for n in plan.namespaces if n != "(cluster)")


@contextlib.asynccontextmanager
async def _reporting(text: io.StringIO, report: Report, interval: float) -> AsyncIterator[None]:
    """Report the output every `interval` seconds while it grows (a long deploy shows its progress in status)."""

    async def loop() -> None:
        shown = text.getvalue()
        while True:
            await asyncio.sleep(interval)
            if (now := text.getvalue()) != shown:
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


def field_key(item: OutsideField) -> tuple[str, str]:
    """What identifies a reported field across syncs: its resource and path."""
    return item.change.describe(), str(item.field.path)


def fields_of(items: Sequence[OutsideField]) -> dict[tuple[str, str], OutsideField]:
    return {field_key(i): i for i in items}
