"""kapp's apply loop: apply every change whose dependencies are done, then wait until one of
the changes being waited on converges (or unblocks its dependents), and repeat.

    ---- applying 2 changes [0/3 done] ----
    create service/web (v1) namespace: ns
    ---- waiting on 2 changes [0/3 done] ----
    ok: reconcile service/web (v1) namespace: ns
    ongoing: reconcile deployment/web (apps/v1) namespace: ns
     ^ Waiting for 1 unavailable replicas
     L ok: waiting on replicaset/web-6f7c (apps/v1) namespace: ns
    ...
    ---- applying complete [3/3 done] ----
    ---- waiting complete [3/3 done] ----

As kapp's, every applied change is waited on, one with nothing to wait for (`--wait=false`, `disable-wait`) as
`ok: noop ...` at once; and progress goes through kapp's de-duplication (`progress.Notices`): a section or a change's
lines identical to those shown in the last minute are not shown again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Sequence

from kapply import objects
from kapply.apply.error_text import semi_structured
from kapply.apply.execute import Applier, ApplyTimedOut
from kapply.apply.observe import Snapshot, Wakes, places, snapshot
from kapply.apply.options import ApplyOptions, WaitOptions
from kapply.apply.planning import ClusterChange, WaitOp
from kapply.apply.progress import Progress
from kapply.apply.verdict import DONE, Outcome, Verdict, resource_timed_out, round_timed_out, sort_out, verdict
from kapply.apply.waiters import Convergence, converge, ok, ongoing, wait_lines, which_children
from kapply.apply.waiters.registry import find as find_waiter
from kapply.config.config import Config
from kapply.config.rules import MaskCounter
from kapply.diff.change import ApplyOp, Change
from kapply.errors import ApplyError, KapplyError
from kapply.graph import ChangeGraph
from kapply.objects import Obj, ResourceKey, key_of
from kapply.resources.cluster import Cluster, Discovery


class ApplyLoop:
    def __init__(
        self,
        cluster: Cluster,
        discovery: Discovery,
        config: Config,
        selector: str,
        apply_options: ApplyOptions,
        wait_options: WaitOptions,
        progress: Progress,
        masks: MaskCounter | None = None,
    ) -> None:
        self.applier = Applier(cluster, discovery, config, apply_options, progress, masks)
        self.cluster = cluster
        self.config = config
        self.selector = selector
        self.options = wait_options
        self.progress = progress
        self.notices = self.applier.notices
        self._unseen: dict[ResourceKey, int] = {}  # consecutive checks that did not find an applied resource
        self._gone: set[str] = set()  # UIDs of objects whose deletion this run waited on and saw done
        self._collected: set[str] = set()  # UIDs of garbage this run deleted (see _collect_garbage)
        self._wakes = Wakes(cluster, selector) if wait_options.wake_on_watch else None

    async def run(self, planned: Sequence[ClusterChange], graph: ChangeGraph) -> tuple[ClusterChange, ...]:
        """Apply `planned`, ordered by `graph` (see `planning.order`); returns the changes that were waited on.

        A change that fails to apply or to converge stops the run (kapp's default), or with `exit_early` off in the
        apply or wait options is reported at the end, with every other failure, once nothing more can run; the
        changes that depend on a failed one are never applied."""
        try:
            return await self._run(planned, graph)
        except BaseException as e:  # the records still being corrected after writes: done, or stopped if interrupted
            with contextlib.suppress(KapplyError):
                await self.applier.recorded(stop=isinstance(e, asyncio.CancelledError))
            raise
        finally:
            if self._wakes is not None:
                await self._wakes.close()

    async def _run(self, planned: Sequence[ClusterChange], graph: ChangeGraph) -> tuple[ClusterChange, ...]:
        changes = [c.change for c in planned]
        waits = [c.wait for c in planned]
        total = len(changes)
        applied: set[int] = set()
        finished: set[int] = set()
        unblocked: set[int] = set()
        tracking: dict[int, float] = {}  # change -> when it was applied
        failures: list[str] = []
        failed_waits = 0  # changes that converged unsuccessfully: counted as done, as kapp
        first = _owners_first(changes)
        while True:
            ready = sorted((i for i in graph.ready(finished | unblocked) if i not in applied), key=first)
            if ready:
                self.notices.section(f"applying {len(ready)} changes [{len(applied)}/{total} done]")
                failed = await self._apply(planned, ready)
                failures += failed.values()
                applied.update(ready)
                tracking.update((i, time.monotonic()) for i in ready if i not in failed)
                continue
            if not tracking:
                break
            section = f"waiting on {len(tracking)} changes [{len(finished) + failed_waits}/{total} done]"
            done, newly_unblocked, wait_failures = await self._wait_for_any(
                changes, waits, tracking, unblocked, section
            )
            for i in done | wait_failures.keys():
                del tracking[i]
            finished.update(done)
            unblocked.update(newly_unblocked)
            failures += (v.message for v in wait_failures.values())
            failed_waits += sum(1 for v in wait_failures.values() if v.counted)
        await self._finish(failures, graph, len(applied), (finished, unblocked), total)
        self.progress.section(f"applying complete [{total}/{total} done]")
        self.progress.section(f"waiting complete [{total}/{total} done]")
        return tuple(c for c in planned if c.wait is not WaitOp.NOOP)

    async def _finish(
        self, failures: list[str], graph: ChangeGraph, applied: int, done: tuple[set[int], set[int]], total: int
    ) -> None:
        """The run's end: the last-applied records corrected after writes joined (see `Applier`), then every failure
        raised as one error, or an inconsistency when changes are left that nothing failed (`done`: the changes
        finished, and those unblocked by a wait that let go of them)."""
        finished, unblocked = done
        try:
            await self.applier.recorded()
        except ApplyError as e:
            failures.append(str(e))
        if failures:
            raise ApplyError(failures[0] if len(failures) == 1 else "".join(f"\n\n  - {m}" for m in failures) + "\n\n")
        if len(finished) < total:
            raise ApplyError(
                f"Internal inconsistency: did not apply all changes: {applied} != {total}\n"
                f"Blocked changes:\n{graph.why_blocked(finished | unblocked)}"
            )

    async def _apply(self, planned: Sequence[ClusterChange], ready: Sequence[int]) -> dict[int, str]:
        """Apply the ready changes concurrently, printing `<op> <resource>` for each as it finishes (failed or not).
        With `exit_early` (kapp's default) the first failure is raised once the others finished, and nothing after
        it is printed; otherwise the failures are returned, by change, in the order they happened."""
        semaphore = asyncio.Semaphore(self.applier.options.concurrency)
        exit_early = self.applier.options.exit_early
        failures: dict[int, str] = {}
        first: list[KapplyError] = []

        async def one(i: int) -> None:
            cc = planned[i]
            try:
                async with semaphore:
                    if cc.apply_op is not ApplyOp.NOOP:  # an ignored change applies nothing unless asked
                        await self.applier.apply_one(cc.change)
            except KapplyError as e:
                if not first:
                    if not isinstance(e, ApplyTimedOut):
                        self.notices.lines([f"{cc.apply_op} {cc.describe()}"])
                    if exit_early:
                        first.append(e)
                    else:
                        failures[i] = str(e)
                return
            if not first:
                self.notices.lines([f"{cc.apply_op} {cc.describe()}"])

        results = await asyncio.gather(*(one(i) for i in ready), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]
        if first:
            raise first[0]
        return failures

    def _waited(self, change: Change) -> Obj:
        """The resource waited on: the change's, by the name the server gave it when it was created with only
        `generateName`."""
        generated = self.applier.generated.get(change.key)
        return change.resource if generated is None else objects.with_metadata(change.resource, name=generated)

    def _converge(self, change: Change, op: WaitOp, snap: Snapshot) -> Convergence:
        live = snap.get(self._waited(change))
        if op is WaitOp.DELETE:
            uid = objects.uid(change.existing or {})
            if live is None or objects.uid(live) != uid:
                return Convergence(change.resource, ok(), None)
            finalizers = objects.metadata(live).get("finalizers") or []
            message = f"Waiting on finalizers: {', '.join(finalizers)}" if finalizers else "Deleting"
            return Convergence(live, ongoing(message), None)
        if live is None:
            # Once is a list that has not caught up with the write; twice, the resource is gone (a Job with
            # `ttlSecondsAfterFinished: 0`, a controller that deleted it): kapp fails at once with NotFound.
            misses = self._unseen[change.key] = self._unseen.get(change.key, 0) + 1
            if misses < UNSEEN_CHECKS:
                return Convergence(change.resource, ongoing("Waiting for the resource to be visible"), None)
            return Convergence(change.resource, ongoing(), None, error=_not_found(change, self.applier.discovery))
        self._unseen.pop(change.key, None)
        return converge(
            live,
            self.config.wait_rules,
            snap.children_of(live),
            ignore_failing_api_services=self.options.ignore_failing_api_services,
        )

    async def _wait_for_any(
        self,
        changes: Sequence[Change],
        waits: Sequence[WaitOp],
        tracking: dict[int, float],
        unblocked_before: set[int],
        section: str,
    ) -> tuple[set[int], set[int], dict[int, Verdict]]:
        """Poll the tracked changes until one converges, unblocks its dependents (for the first time) or fails: the
        converged ones, the newly unblocking ones and (with `exit_early` off; else the first is raised) the failed
        ones, each with its message and whether it counts as done (converged unsuccessfully, as opposed to errored).
        A change with nothing to wait for (wait op noop) is done at once. `section` heads each poll, as kapp's."""
        started = time.monotonic()
        reconciled = [changes[i].resource for i in tracking if waits[i] is WaitOp.RECONCILE]
        child_types = {t for resource in reconciled for t in which_children(resource, self.config.wait_rules)}
        answered = self._answered(changes, waits, tracking)
        apart = MIN_APART  # between looks a watch woke: doubled after each that found nothing done
        while True:
            self.notices.section(section)
            waited = [self._waited(changes[i]) for i in tracking if self._unanswered(changes[i], waits[i])]
            looked = time.monotonic()
            snap = answered or await self._look(waited, child_types)
            answered = None
            verdicts = {i: self._poll(changes[i], waits[i], snap, tracking[i], i in unblocked_before) for i in tracking}
            done, unblocked, failed = sort_out(verdicts)
            self._gone.update(objects.uid(changes[i].existing or {}) for i in done if waits[i] is WaitOp.DELETE)
            if done or unblocked or failed:
                return done, unblocked, failed
            described = [changes[i].describe() for i in tracking]
            if (timed_out := round_timed_out(described, started, time.monotonic(), self.options.timeout)) is not None:
                raise ApplyError(semi_structured(timed_out))  # a list of several resources laid out as kapp's
            if not await self._collect_garbage(_deleted_and_seen(changes, waits, tracking, snap)):
                await self._sleep(waited, max(apart, LOOKS_APART * (time.monotonic() - looked)))
                apart *= 2

    async def _look(self, waited: Sequence[Obj], child_types: Iterable[tuple[str, str]]) -> Snapshot:
        """What `waited` and their children are now; from here on, a change wakes the next sleep (this look may
        have missed it)."""
        if self._wakes is not None:
            self._wakes.clear()
        return await snapshot(
            self.cluster,
            self.applier.discovery,
            waited,
            self.selector,
            child_types,
            concurrency=self.options.concurrency,
        )

    async def _sleep(self, waited: Sequence[Obj], shortest: float) -> None:
        """Until the next look: `check_interval` as kapp's, or sooner when a watch saw a change of a waited object
        (`Wakes`; its children's changes show at the next look, they never decide its verdict), but not before
        `shortest` seconds: a rollout's stream of events must not multiply the CPU of looking at many objects. The
        watches start with the first sleep, not before: a wait that never sleeps (a step's answers, a delete whose
        garbage kapply deletes itself) opens none, and takes none of the connections its end was warmed with. What
        changed between the look and a new watch's start is seen at the interval."""
        if self._wakes is None:
            await asyncio.sleep(self.options.check_interval)
        else:
            self._wakes.follow(places(self.applier.discovery, waited))
            await self._wakes.sleep(self.options.check_interval, shortest)

    def _answered(self, changes: Sequence[Change], waits: Sequence[WaitOp], tracking: Iterable[int]) -> Snapshot | None:
        """The tracked objects as their writes answered, when every answer already says its object is done and can
        say nothing else later: a resource with neither a waiter nor children (ConfigMap, Secret, ...) or a Service
        given its cluster IP, as kapp's waiting rules decide; deletes the server answered as done are left out (see
        `_unanswered`). The first check then asks the cluster nothing (issue 33: round trips); otherwise (None) it reads
        what is left, as kapp does. Each answer serves one check at most."""
        answers = {i: self.applier.answers.pop(changes[i].key, None) for i in tracking}
        found: dict[ResourceKey, Obj] = {}
        for i, answer in answers.items():
            if not self._unanswered(changes[i], waits[i]):
                continue
            if waits[i] is not WaitOp.RECONCILE or answer is None or not self._done_as_answered(answer):
                return None
            found[key_of(self._waited(changes[i]))] = answer
        return Snapshot(found) if found else None

    def _unanswered(self, change: Change, op: WaitOp) -> bool:
        """Whether a check must read the change's object: not when nothing is waited for, nor for a delete the server
        answered as done (`execute.gone_as_answered`: gone by its UID, which no later read can undo; the check finds
        it absent, as a read would)."""
        return op is not WaitOp.NOOP and not (op is WaitOp.DELETE and change.key in self.applier.deleted)

    def _done_as_answered(self, answer: Obj) -> bool:
        waiter = find_waiter(answer, self.config.wait_rules)
        if waiter is not None and (objects.api_version(answer), objects.kind(answer)) != ("v1", "Service"):
            return False  # its status decides, which a write's answer does not show yet
        if waiter is not None and waiter.children:
            return False
        return converge(answer, self.config.wait_rules).state == ok()

    def _poll(self, change: Change, op: WaitOp, snap: Snapshot, applied_at: float, unblocked_before: bool) -> Verdict:
        """One change's verdict in this poll, its lines printed; the first failure is raised with `exit_early`."""
        if op is WaitOp.NOOP:
            self.notices.lines([f"ok: noop {change.describe()}"])
            return DONE
        result = self._converge(change, op, snap)
        self.notices.lines(wait_lines(result, op.value))
        description = f"{op.value} {change.describe()}"
        overdue = resource_timed_out(description, applied_at, time.monotonic(), self.options.resource_timeout)
        found = verdict(result, description, unblocked_before=unblocked_before, overdue=overdue)
        if found.outcome is Outcome.FAILED and self.options.exit_early:
            raise ApplyError(found.message)
        return found

    async def _collect_garbage(self, awaited: Sequence[Obj]) -> bool:
        """Delete what the garbage collector would: objects this run waits to see deleted (a deleted Service's
        EndpointSlices, which the plan shows with no operation of their own) whose every owner this run deleted
        and saw gone. The controller-manager's collector deletes such objects at its own rate (20 requests a second
        by default: 500 EndpointSlices take 25 s); kapply deletes them at once, each with its UID as precondition, so
        only the object the plan showed goes. A delete that fails is left to the collector. True when any was sent
        (the next check then follows at once)."""
        garbage = [
            obj
            for obj in awaited
            if objects.uid(obj) not in self._collected
            and "deletionTimestamp" not in obj["metadata"]
            and _owned_only_by(obj, self._gone)
        ]
        if not garbage:
            return False
        self._collected.update(objects.uid(obj) for obj in garbage)
        semaphore = asyncio.Semaphore(self.applier.options.concurrency)

        async def one(obj: Obj) -> None:
            rtype = self.applier.discovery.find(objects.api_version(obj), objects.kind(obj))
            if rtype is None:
                return
            async with semaphore:
                with contextlib.suppress(KapplyError):
                    await self.cluster.delete(
                        rtype, objects.namespace(obj) or None, objects.name(obj), uid=objects.uid(obj)
                    )

        await asyncio.gather(*(one(obj) for obj in garbage))
        return True


def _owners_first(changes: Sequence[Change]) -> Callable[[int], bool]:
    """A sort key that starts, among the changes ready at once, those on objects that own other objects of the plan:
    deleting a Service first lets the garbage collector remove its EndpointSlices while the other deletes run, rather
    than after the last of them (the delete then waits for those too). The order is otherwise kept."""
    owners = {
        str(reference.get("uid") or "")
        for change in changes
        for reference in objects.metadata(change.existing or {}).get("ownerReferences") or []
    }
    owners.discard("")
    return lambda i: objects.uid(changes[i].existing or {}) not in owners


def _deleted_and_seen(
    changes: Sequence[Change], waits: Sequence[WaitOp], tracking: Iterable[int], snap: Snapshot
) -> list[Obj]:
    """The objects of the tracked deletes that the snapshot still holds."""
    seen = (snap.get(changes[i].resource) for i in tracking if waits[i] is WaitOp.DELETE)
    return [obj for obj in seen if obj is not None]


def _owned_only_by(obj: Obj, owners: set[str]) -> bool:
    """Whether the object has owners and every one is among `owners` (UIDs)."""
    references = objects.metadata(obj).get("ownerReferences") or []
    return bool(references) and all(str(r.get("uid") or "") in owners for r in references)


UNSEEN_CHECKS = 2
MIN_APART = 0.25  # seconds from one look to the next that a watch woke, at least; doubled after each within a round
LOOKS_APART = 4  # and at least this many times the last look's time: looking takes at most a fifth of the wait


def _not_found(change: Change, discovery: Discovery) -> str:
    """kapp's wording for a resource that is gone while it was waited on."""
    res = change.resource
    rtype = discovery.find(objects.api_version(res), objects.kind(res))
    plural = rtype.plural if rtype is not None else objects.kind(res).lower()
    group = f"{plural}.{rtype.group}" if rtype is not None and rtype.group else plural
    return (
        f"Getting resource {change.describe()}: API server says: "
        f'{group} "{objects.name(res)}" not found (reason: NotFound)'
    )
