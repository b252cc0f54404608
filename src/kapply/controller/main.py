"""The controller process: watch Apps, reconcile each on its sync period and on drift, with N workers, as the leader
or, with `--shards`, for the shards this replica holds (shards.py).

Apps are the controller's own kind. Higher layers register more (kapply.packaging: PackageRepositories and
PackageInstalls, as kapp-controller runs its packaging controllers in the App controller's process): each `Kind` has
a watch, a work queue of its own (keys are (namespace, name) within a kind) and a reconcile function, and `Trigger`s
are watches that only ask for reconciles of some kind's objects (a new Package concerns PackageInstalls; an App's
status change, its owner).

An asyncio loop of kapply's own on its async client rather than kopf: kopf records its progress in annotations of
every object it handles (a write per handling, where an unchanged App must cost none), elects its leader with its own
peering resources rather than a Lease, and runs a watch per handled resource kind and handler; docs/design.md has the
comparison.

Every reconcile runs as a task of its own, in a context that names its object (the JSON logs' fields) and collects
its result (the metrics): a shard given up or lost cancels exactly the reconciles of its objects.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field

from kapply.api import AsyncClient
from kapply.controller import health, logs, sandbox
from kapply.controller.events import Recorder
from kapply.controller.leader import DEFAULT_TIMING, Election, Timing, identity
from kapply.controller.metrics import APP, Kappctrl, Metrics, Result, State
from kapply.controller.queue import WorkQueue, namespace_share
from kapply.controller.reconciler import Reconciler
from kapply.controller.settings import DriftWatching, Settings
from kapply.controller.shards import ShardLeases, shard_of
from kapply.controller.watch import DriftWatches
from kapply.errors import ClusterError, ConcurrencyError, KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import (
    REQUEST_OBSERVERS,
    Cluster,
    Connect,
    Events,
    Refusal,
    ResourceType,
    list_then_watch,
)

_log = logging.getLogger("kapply.controller")
Key = tuple[str, str]
LEASE_NAMESPACE = "kapply-system"  # where config/controller/rbac.yml lets the controller hold its Lease
DEBOUNCE = 1.0  # seconds: a burst of drift events about one App is one reconcile
MAX_ERROR_DELAY = 300.0  # seconds: the longest wait after reconciles that raised
WATCH_RETRY = 2.0  # seconds before a failed watch starts again
UNSERVED_RETRY = 60.0  # seconds before a registered kind that is not served (or not allowed) is watched again
Reconcile = Callable[[str, str], Awaitable[float | None]]  # (namespace, name) -> when to come back (None: on events)
Request = tuple[str, Key, float]  # a reconcile asked for: the kind's name, the key, the delay
FAILED = frozenset({"ReconcileFailed", "DeleteFailed"})  # the Events of an App left failed


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    settings: Settings = Settings()
    namespace: str | None = None  # watch Apps of one namespace only
    workers: int = 8  # reconciles of Apps at once (and of each registered kind: see packaging.process)
    per_namespace: int = 0  # reconciles of one namespace's objects at once, per kind (0: queue.namespace_share's)
    leader_election: bool = True
    lease_namespace: str = LEASE_NAMESPACE
    lease_name: str = "kapply-controller"
    lease_timing: Timing = DEFAULT_TIMING  # `--leader-elect-lease-duration`, `-renew-deadline`, `-retry-period`
    shards: int = 1  # 1: one leader reconciles everything; more: replicas share the shards (shards.py)
    endpoints: health.Address | None = None  # where /metrics, /healthz and /readyz listen (None: nowhere)


def generation_and_deletion(obj: Obj) -> Hashable:
    """What of an object must change for a reconcile: its generation (the spec) and the start of its deletion. A
    status write changes neither: the controller's own writes never reconcile again."""
    meta = obj["metadata"]
    return int(meta.get("generation") or 0), bool(meta.get("deletionTimestamp"))


def _ignore_event(event: str, obj: Obj) -> None:
    return None


def _ignore_key(key: Key) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Kind:
    """A resource reconciled beside Apps, registered by a higher layer."""

    name: str  # in logs and in `Request`s: `PackageInstall`
    rtype: ResourceType
    reconcile: Reconcile
    workers: int = 1  # reconciles of this kind at once (one object is never reconciled twice at once)
    # What must change for an event to reconcile (as for Apps: the generation and the start of a deletion).
    fingerprint: Callable[[Obj], Hashable] = generation_and_deletion
    observe: Callable[[str, Obj], None] = _ignore_event  # told every event, before the fingerprint filter
    forget: Callable[[Key], None] = _ignore_key  # told when an object is gone


@dataclass(frozen=True, slots=True)
class Trigger:
    """A watch that only asks for reconciles: `event` gives, for each event of `rtype`, the reconciles it asks for. A
    trigger on Apps is served by the App watch (every App event, status writes included), in the App namespace."""

    rtype: ResourceType
    event: Callable[[str, Obj], Iterable[Request]]
    namespaces: tuple[str | None, ...] = (None,)  # where to watch (None: every namespace)


@dataclass
class _Loop:
    """One registered kind's work: its queue, what was seen of each object, consecutive errors."""

    kind: Kind
    queue: WorkQueue[Key] = field(default_factory=WorkQueue)
    seen: dict[Key, Hashable] = field(default_factory=dict)
    errors: dict[Key, int] = field(default_factory=dict)


def _key(obj: Obj) -> Key:
    return obj["metadata"]["namespace"], obj["metadata"]["name"]


def _count(report: object, items: str) -> int:
    """How many `items` a status report lists (anyone may write a status: anything else counts none)."""
    listed = report.get(items) if isinstance(report, dict) else None
    return len(listed) if isinstance(listed, list) else 0


def reported(app: Obj) -> tuple[int, int]:
    """The drifted fields and ghost diffs an App's status lists."""
    status = app.get("status")
    if not isinstance(status, dict):
        return 0, 0
    return _count(status.get("drift"), "fields"), _count(status.get("ghostDiffs"), "diffs")


@dataclass
class _Outcome:
    """What a running reconcile reported (collected through the context it runs in)."""

    failed: bool = False


_OUTCOME: contextvars.ContextVar[_Outcome | None] = contextvars.ContextVar("outcome", default=None)


class _Recorder(Recorder):
    """The reconciler's Events, which also tell the running reconcile's result: an App is left failed exactly when its
    reconcile emits ReconcileFailed or DeleteFailed."""

    async def emit(self, app: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        outcome = _OUTCOME.get()
        if outcome is not None and reason in FAILED:
            outcome.failed = True
        await super().emit(app, reason, message, warning=warning)


class Controller:
    def __init__(
        self,
        api: AsyncClient,
        options: ControllerOptions,
        kinds: Sequence[Kind] = (),
        triggers: Sequence[Trigger] = (),
        kappctrl: Kappctrl | None = None,
    ) -> None:
        if options.shards < 1 or (options.shards > 1 and not options.leader_election):
            raise ValueError(f"--shards={options.shards}: expected 1, or more with leader election")
        self.api = api
        self.options = options
        self._apps = options.settings.vocabulary.app.rtype  # the App's type: the controller's vocabulary's
        self.queue: WorkQueue[Key] = WorkQueue(namespace_share(options.workers, options.per_namespace))
        # `--drift-watches` (settings.DriftWatching): on, a change others made reconciles its App after DEBOUNCE;
        # sync-period, the watches only keep the cache; off, no type an App deploys is watched.
        watching = options.settings.drift_watches
        self.drift = DriftWatches(api.cluster, self._drifted if watching is DriftWatching.ON else _ignore_key)
        self.metrics = Metrics(kappctrl)  # `kappctrl`: the kinds' reconcilers time into it too
        self.metrics.read = self._state
        # The reconciles read the Apps, their objects and their records from what the watches keep (cache.py).
        self.reconciler = Reconciler(
            api,
            options.settings,
            self._track_unwatched if watching is DriftWatching.OFF else self.drift.track,
            self.metrics.deployed,
            cache=self.drift.cache,
            counts=self.metrics.kappctrl.of(APP),
        )
        self.reconciler.events = _Recorder(api.cluster, options.settings.vocabulary.app)
        self.metrics.cache("watches", lambda: self.drift.cache.stats()[1])  # objects the drift and App watches keep
        self.contact = health.Contact(lambda: self.api.cluster.server_version())  # /readyz: the API server answers
        self._generations: dict[Key, Hashable] = {}
        self._reports: dict[Key, tuple[int, int]] = {}  # drifted fields and ghost diffs each App's status lists
        self._errors: dict[Key, int] = {}  # consecutive reconciles that raised
        self.loops = {
            kind.name: _Loop(kind, WorkQueue(namespace_share(kind.workers, options.per_namespace))) for kind in kinds
        }
        self._app_triggers = tuple(t for t in triggers if t.rtype == self._apps)
        self._triggers = tuple(t for t in triggers if t.rtype != self._apps)
        self._unserved: set[ResourceType] = set()  # registered types found not served or not allowed (logged once)
        # The shards whose objects this process reconciles: with one shard, everything (`_work` runs only while
        # leading); with more, those whose Lease it holds (shards.py starts and stops them).
        self._working: set[int] = {0} if options.shards == 1 else set()
        self._running: dict[tuple[str, Key], asyncio.Task[float | None]] = {}  # reconciles, by kind and key
        self._leading = not options.leader_election  # whether `_work` runs
        self._listed = False  # whether the App watch listed the Apps since `_work` started

    async def run(self) -> None:
        """Run until cancelled: serve the endpoints (when asked), count the API requests, and work as the options
        say: alone, as the leader, or for the shards held."""
        REQUEST_OBSERVERS.append(self._answered)
        try:
            if self.options.endpoints is None:
                await self._run()
            else:
                async with health.serving(self.options.endpoints, self.metrics.registry, self._unready, self.contact):
                    await self._run()
        finally:
            REQUEST_OBSERVERS.remove(self._answered)

    async def _run(self) -> None:
        if not self.options.leader_election:
            await self._work()
        elif self.options.shards == 1:
            options = self.options
            election = Election(
                self.api.cluster, options.lease_namespace, options.lease_name, identity(), options.lease_timing
            )
            await election.lead(self._lead)
        else:
            await self._sharded()

    async def _lead(self) -> None:
        self._leading = True
        try:
            await self._work()
        finally:
            self._leading = False

    async def _sharded(self) -> None:
        """Work (watches and workers, always) beside the shard Leases; when stopping, every reconcile is cancelled
        before the Leases are given back."""
        self._leading = True
        leases = ShardLeases(
            self.api.cluster,
            self.options.lease_namespace,
            self.options.lease_name,
            self.options.shards,
            identity(),
            self._start_shard,
            self._stop_shard,
            timing=self.options.lease_timing,
        )
        work = asyncio.create_task(self._work())
        keep = asyncio.create_task(leases.run())
        try:
            done, _ = await asyncio.wait({work, keep}, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            for task in (work, keep):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def owns(self, key: Key) -> bool:
        """Whether this process reconciles the object `key` (of any kind) now."""
        if self.options.shards == 1:
            return bool(self._working)
        return shard_of(key[0], key[1], self.options.shards) in self._working

    def _add(self, loop: _Loop | None, key: Key, delay: float = 0.0) -> None:
        """Ask for a reconcile of an App (`loop` None) or of a registered kind's object, when it is this process's."""
        if self.owns(key):
            (self.queue if loop is None else loop.queue).add(key, delay)

    def _drifted(self, key: Key) -> None:
        """Others changed an App's objects (a drift watch's event): a burst of changes is one reconcile."""
        self._add(None, key, DEBOUNCE)

    def _track_unwatched(
        self,
        app: Key,
        label_value: str,
        types: list[ResourceType],
        namespaces: tuple[str, ...],
        connect: Connect,
    ) -> None:
        """`--drift-watches=off`: an App's deploy asks for none of its types to be watched (the app records still
        are: their watch is no drift watch); its reconciles read its objects from the API server."""
        self.drift.track(app, label_value, [], namespaces, connect)

    def _start_shard(self, shard: int) -> None:
        """A shard was taken: its objects are reconciled at once (as a new leader reconciles everything it lists)."""
        self._working.add(shard)
        self.metrics.shard_changes.labels("taken").inc()
        for key in self._generations:
            if shard_of(key[0], key[1], self.options.shards) == shard:
                self.queue.add(key)
        for loop in self.loops.values():
            for key in loop.seen:
                if shard_of(key[0], key[1], self.options.shards) == shard:
                    loop.queue.add(key)

    async def _stop_shard(self, shard: int) -> bool:
        """A shard is given up or lost: nothing more of it is queued or watched for drift, what is remembered of its
        Apps between syncs is dropped (another replica deploys them meanwhile), and its running reconciles are
        cancelled (a deploy gives its hold on the app record back). True when they all ended within half the time
        between a lost shard's renew deadline and the earliest another replica can take it (Timing.grace)."""
        if shard in self._working:
            self._working.discard(shard)
            self.metrics.shard_changes.labels("stopped").inc()

        def of_shard(key: Key) -> bool:
            return shard_of(key[0], key[1], self.options.shards) == shard

        for key in filter(of_shard, list(self._generations)):
            self.queue.forget(key)
            self.drift.untrack(key)
            self.reconciler.memory.pop(key, None)
            self._errors.pop(key, None)
        for loop in self.loops.values():
            for key in filter(of_shard, list(loop.seen)):
                loop.queue.forget(key)
                loop.errors.pop(key, None)
        running = [task for (_, key), task in self._running.items() if of_shard(key)]
        for task in running:
            task.cancel()
        if not running:
            return True
        _, pending = await asyncio.wait(running, timeout=self.options.lease_timing.grace / 2)
        return not pending

    def request(self, kind: str, key: Key, delay: float = 0.0) -> None:
        """Reconcile an object of a registered kind (or an App, kind `App`) no later than `delay` seconds from now."""
        self._add(None if kind == self._apps.kind else self.loops[kind], key, delay)

    def _answered(self, cluster: Cluster, method: str, code: int) -> None:
        self.metrics.request("controller" if cluster is self.api.cluster else "app", method, code)
        self.contact.answered(code)

    def _unready(self) -> str | None:
        """Why the process is not ready: it works (leads, or holds or waits for shards) but its App watch has not
        listed the Apps yet. A process waiting for the leader Lease is ready."""
        return "the App watch has not listed the Apps yet" if self._leading and not self._listed else None

    def _state(self) -> State:
        queues = {self._apps.kind: self.queue, **{name: loop.queue for name, loop in self.loops.items()}}
        running = collections.Counter(kind for kind, _ in self._running)
        owned = [(key, report) for key, report in self._reports.items() if self.owns(key)]
        return State(
            depth={kind: queue.ready() for kind, queue in queues.items()},
            scheduled={kind: len(queue) for kind, queue in queues.items()},
            running={kind: running[kind] for kind in queues},
            objects={
                self._apps.kind: len(self._generations),
                **{name: len(loop.seen) for name, loop in self.loops.items()},
            },
            shards=self.options.shards,
            shards_held=len(self._working) if self.options.shards > 1 else int(self._leading),
            drift={key: drift for key, (drift, _) in owned if drift},
            ghost_diffs={key: ghosts for key, (_, ghosts) in owned if ghosts},
            drift_watches=self.drift.watched,
            sandbox={p.value: int(on) for p, on in sandbox.protections_seen().items()},
        )

    async def _work(self) -> None:
        self._listed = False
        tasks = [asyncio.create_task(self._watch_apps())]
        tasks += [asyncio.create_task(self._worker()) for _ in range(self.options.workers)]
        for loop in self.loops.values():
            tasks.append(asyncio.create_task(self._watch_kind(loop)))
            tasks += [asyncio.create_task(self._worker(loop)) for _ in range(loop.kind.workers)]
        for trigger in self._triggers:
            tasks += [asyncio.create_task(self._watch_trigger(trigger, ns)) for ns in trigger.namespaces]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            self.drift.stop()
            await self.reconciler.close()  # the Apps' clients (cache.py): their connections

    def _app_event(self, kind: str, app: Obj) -> None:
        for trigger in self._app_triggers:
            self._triggered(trigger, kind, app)
        key = _key(app)
        if kind == "DELETED":
            self._forget(key)
            return
        self._reports[key] = reported(app)
        self.drift.cache.apps.put(app)
        seen = generation_and_deletion(app)
        # A status write (ours) changes neither the generation nor the deletion: only new Apps, spec changes and the
        # start of a deletion reconcile now. Anything else comes back when its reconcile said (a failing delete backs
        # off rather than spinning on its own status writes). Every App is followed; only this process's reconcile.
        if self._generations.get(key) != seen:
            self._generations[key] = seen
            self._add(None, key)

    def _forget(self, key: Key) -> None:
        self.drift.cache.apps.forget(key)
        self._generations.pop(key, None)
        self._reports.pop(key, None)
        self._errors.pop(key, None)
        self.queue.forget(key)
        self.drift.untrack(key)

    def _apps_relisted(self, present: set[Key]) -> None:
        # Apps deleted while no watch ran (before a 410 Gone) are forgotten as a DELETED event would.
        for key in set(self._generations) - present:
            self._forget(key)
        self._listed = True

    async def _watch_apps(self) -> None:
        await self._watch(self._apps, self.options.namespace, self._app_event, self._apps_relisted)

    def _kind_event(self, loop: _Loop, event: str, obj: Obj) -> None:
        loop.kind.observe(event, obj)
        key = _key(obj)
        if event == "DELETED":
            self._forget_in(loop, key)
            return
        seen = loop.kind.fingerprint(obj)
        if key not in loop.seen or loop.seen[key] != seen:
            loop.seen[key] = seen
            self._add(loop, key)

    def _forget_in(self, loop: _Loop, key: Key) -> None:
        loop.seen.pop(key, None)
        loop.errors.pop(key, None)
        loop.queue.forget(key)
        loop.kind.forget(key)

    async def _watch_kind(self, loop: _Loop) -> None:
        def relisted(present: set[Key]) -> None:
            for key in set(loop.seen) - present:
                self._forget_in(loop, key)

        def event(kind: str, obj: Obj) -> None:
            try:
                self._kind_event(loop, kind, obj)
            except Exception:  # a registered kind's callback failing must not stop the controller
                _log.exception("%s %s: handling a %s event failed", loop.kind.name, _key(obj), kind)

        await self._watch(loop.kind.rtype, self.options.namespace, event, relisted, registered=True)

    def _triggered(self, trigger: Trigger, kind: str, obj: Obj) -> None:
        """Ask for the reconciles a trigger asks for; a trigger that fails is logged, never stops a watch (an App's
        watch above all)."""
        try:
            requests = list(trigger.event(kind, obj))
        except Exception:
            _log.exception("%s %s: a trigger failed", kind, obj.get("metadata", {}).get("name"))
            return
        for request in requests:
            self.request(*request)

    async def _watch_trigger(self, trigger: Trigger, namespace: str | None) -> None:
        await self._watch(
            trigger.rtype, namespace, lambda kind, obj: self._triggered(trigger, kind, obj), None, registered=True
        )

    async def _watch(
        self,
        rtype: ResourceType,
        namespace: str | None,
        event: Callable[[str, Obj], None],
        relisted: Callable[[set[Key]], None] | None,
        *,
        registered: bool = False,
    ) -> None:
        """List, then watch from the list's version (kapply.resources.cluster.list_then_watch), telling `event` each
        object and event and `relisted` the keys each list found. A `registered` type that is not served or not
        allowed (its CRDs are not installed, or the controller's RBAC predates it) is looked at again every
        UNSERVED_RETRY seconds, said once; the Apps, refused, every WATCH_RETRY seconds."""

        def listed(found: list[Obj]) -> None:
            self._unserved.discard(rtype)
            if relisted is not None:
                relisted({_key(obj) for obj in found})

        def refused(refusal: Refusal, error: ClusterError) -> float:
            if not registered:
                _log.warning("watching %s: %s", rtype.plural, error)
                return WATCH_RETRY
            if rtype not in self._unserved:
                self._unserved.add(rtype)
                _log.warning(
                    "watching %s.%s: %s (looking again every %.0fs)", rtype.plural, rtype.group, error, UNSERVED_RETRY
                )
            return UNSERVED_RETRY

        await list_then_watch(
            self.api.cluster, rtype, Events(event, listed), namespace=namespace, refused=refused, retry=WATCH_RETRY
        )

    async def _worker(self, loop: _Loop | None = None) -> None:
        """Reconcile keys of Apps (or of a registered kind's `loop`) as they come due, each as a task of its own (see
        the module docs); keys of shards this process no longer holds are dropped."""
        kind = self._apps.kind if loop is None else loop.kind.name
        queue = self.queue if loop is None else loop.queue
        errors = self._errors if loop is None else loop.errors
        while True:
            key = await queue.get()
            if not self.owns(key):
                queue.done(key, None)
                continue
            who = f"{key[0]}/{key[1]}" if loop is None else f"{kind} {key[0]}/{key[1]}"
            outcome = _Outcome()
            # The reconcile's context, in which the worker's own lines about it are logged too (the JSON fields).
            context = contextvars.copy_context()
            context.run(logs.RECONCILING.set, logs.Reconciling(kind, key[0], key[1], time.time()))
            context.run(_OUTCOME.set, outcome)
            reconcile = self.reconciler.reconcile if loop is None else loop.kind.reconcile
            task = self._running[(kind, key)] = asyncio.create_task(_awaited(reconcile(*key)), context=context)
            started = time.monotonic()
            again: float | None = None
            result = Result.ERROR
            try:
                again = await task
                errors.pop(key, None)
                result = Result.FAILURE if outcome.failed else Result.SUCCESS
            except asyncio.CancelledError:
                result = Result.CANCELED
                task_of_worker = asyncio.current_task()
                if task_of_worker is not None and task_of_worker.cancelling():
                    raise  # the controller stops
                context.run(_log.info, "%s: cancelled (its shard was given up)", who)
            except ConcurrencyError as e:  # another deploy of the app is running: soon again, not a failure
                context.run(_log.info, "%s: %s", who, e)
                again = 2.0
                result = Result.CONFLICT
            except KapplyError as e:  # the status could not be written: growing delays, as client-go's rate limiter
                again = self._after_error(key) if loop is None else _backoff(errors, key)
                context.run(_log.warning, "%s: %s (retrying in %.0fs)", who, e, again)
            except Exception:
                again = self._after_error(key) if loop is None else _backoff(errors, key)
                context.run(_log.exception, "%s: reconcile crashed (retrying in %.0fs)", who, again)
            finally:
                del self._running[(kind, key)]
                self.metrics.reconciled(kind, result, time.monotonic() - started)
                queue.done(key, again if self.owns(key) else None)

    def _after_error(self, key: Key) -> float:
        """The delay after an App's reconcile raised (see _backoff)."""
        return _backoff(self._errors, key)


async def _awaited(awaitable: Awaitable[float | None]) -> float | None:
    return await awaitable


def _backoff(errors: dict[Key, int], key: Key) -> float:
    """1, 2, 4 ... seconds after consecutive errors of a reconcile, at most MAX_ERROR_DELAY."""
    count = errors[key] = errors.get(key, 0) + 1
    return float(min(2 ** (count - 1), MAX_ERROR_DELAY))


async def run(
    api: AsyncClient,
    options: ControllerOptions,
    kinds: Sequence[Kind] = (),
    triggers: Sequence[Trigger] = (),
    kappctrl: Kappctrl | None = None,
) -> None:
    """Run the controller until cancelled, with the registered kinds and triggers beside Apps (`kappctrl`: the
    kapp-controller metrics their reconcilers count into)."""
    await Controller(api, options, kinds, triggers, kappctrl).run()
