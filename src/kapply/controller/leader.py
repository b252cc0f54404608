"""Leader election on a `coordination.k8s.io/v1` Lease, as client-go's leaderelection does it: the leader renews the
lease every retry period; another process takes it over once it has not seen it renewed for a lease duration. Writes
carry the resourceVersion read, so two processes can never both take it. Only the leader reconciles; a leader that
fails to renew within its renew deadline stops reconciling before another can take over (`Timing`).

Expiry is judged by this process's own clock, from when it first saw the current lease record, as client-go does,
never by the times written in the record: those come from another machine's clock, and a clock running ahead there
or behind here would let two processes lead at once. A process that starts and finds a lease therefore waits a full
duration before taking it, even from a holder long gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, ResourceType

LEASES = ResourceType(
    "coordination.k8s.io", "v1", "Lease", "leases", True, frozenset({"get", "list", "create", "update"})
)
DURATION = 15.0  # the defaults of `Timing` (`kapply controller --leader-elect-*`)
RENEW_DEADLINE = 10.0
RENEW = 5.0
RELEASE_TIMEOUT = 5.0  # seconds to give the lease up when stopping
_log = logging.getLogger("kapply.controller")


@dataclass(frozen=True, slots=True)
class Timing:
    """The election's timing, client-go's leaderelection's three: a candidate takes a lease it has not seen renewed for
    `lease_duration`; the leader tries to renew every `retry_period` (as candidates try to take it) and stops leading
    once no renewal has succeeded for `renew_deadline`, counted from when the last successful one was sent (client-go's
    counts from the start of a renewal round, which begins a retry period after the last success), so that it has
    stopped before another process can take the lease."""

    lease_duration: float = DURATION
    renew_deadline: float = RENEW_DEADLINE
    retry_period: float = RENEW

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                f"leader election: expected 0 < retry period ({self.retry_period}s) < renew deadline "
                f"({self.renew_deadline}s) < lease duration ({self.lease_duration}s)"
            )

    @property
    def grace(self) -> float:
        """Seconds between the leader's renew deadline and the earliest another process can take the lease: the time
        its work has to stop in."""
        return self.lease_duration - self.renew_deadline


DEFAULT_TIMING = Timing()


def identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:6]}"


def _micro(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Election:
    def __init__(self, cluster: Cluster, namespace: str, name: str, me: str, timing: Timing = DEFAULT_TIMING) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.name = name
        self.me = me
        self.duration = timing.lease_duration
        self.deadline = timing.renew_deadline
        self.renew = timing.retry_period
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) of the lease record last read
        self._observed_at = 0.0  # monotonic time at which that record was first read

    def expired(self, lease: Obj) -> bool:
        """Whether the lease's holder has not renewed it for its duration, by this process's clock (see the module
        docs); a lease without a holder is free."""
        spec = lease.get("spec") or {}
        record = (str(spec.get("holderIdentity") or ""), str(spec.get("renewTime") or ""))
        now = time.monotonic()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        if not record[0]:
            return True
        return now - self._observed_at > float(spec.get("leaseDurationSeconds") or self.duration)

    def _spec(self, now: datetime, transitions: int, acquired: str | None = None) -> Obj:
        return {
            "holderIdentity": self.me,
            "leaseDurationSeconds": math.ceil(self.duration),  # others wait at least as long as this process
            "acquireTime": acquired or _micro(now),
            "renewTime": _micro(now),
            "leaseTransitions": transitions,
        }

    async def try_acquire(self) -> bool:
        """Take or renew the lease; False when another holder's lease is still valid (or someone won the race)."""
        return await self.acquire(await self.cluster.get(LEASES, self.namespace, self.name))

    async def acquire(self, lease: Obj | None) -> bool:
        """Take or renew the lease as last read (`lease`; None: there is none). The write carries the version read:
        False when the read was stale (someone else wrote since) or another holder's lease is still valid."""
        now = datetime.now(UTC)
        try:
            if lease is None:
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self._spec(now, 0),
                }
                await self.cluster.create(LEASES, body)
                return True
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity")
            if holder != self.me and not self.expired(lease):
                return False
            transitions = int(spec.get("leaseTransitions") or 0) + (0 if holder == self.me else 1)
            acquired = spec.get("acquireTime") if holder == self.me else None
            lease["spec"] = self._spec(now, transitions, acquired)
            await self.cluster.update(LEASES, lease)
            return True
        except ClusterError as e:
            if e.conflict:
                return False
            raise

    async def lead(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Forever: wait to be leader, run `work` while leading, stop it when the lease is lost."""
        loop = asyncio.get_running_loop()
        while True:
            sent = loop.time()
            while not await self._safely(self.try_acquire):
                await asyncio.sleep(self.renew)
                sent = loop.time()
            _log.info("leading as %s", self.me)
            task = asyncio.create_task(work())
            try:
                await self._keep(task, sent)
            except asyncio.CancelledError:  # stopping (SIGTERM, Ctrl-C): the work first, then the lease
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._safely(self.release), RELEASE_TIMEOUT)
                raise
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            failure = task.exception() if task.done() and not task.cancelled() else None
            if failure is not None:
                raise failure

    async def release(self) -> bool:
        """Give the lease up, as client-go's ReleaseOnCancel does: no holder, so the next candidate takes it at once
        rather than after the lease duration."""
        return await self.release_read(await self.cluster.get(LEASES, self.namespace, self.name))

    async def release_read(self, lease: Obj | None) -> bool:
        """Give the lease up as last read (`lease`); False when it is not this process's (or changed since)."""
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.me:
            return False
        now = datetime.now(UTC)
        lease["spec"] = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": _micro(now)}
        try:
            await self.cluster.update(LEASES, lease)
        except ClusterError as e:
            if e.conflict:  # renewed or taken in between: not ours to release any more
                return False
            raise
        _log.info("released the lease %s/%s", self.namespace, self.name)
        return True

    async def _keep(self, task: asyncio.Task[None], renewed: float) -> None:
        """Renew the lease every `renew` seconds while `task` runs. Returns when the task ends, or when the lease has
        not been renewed for `deadline` seconds, counted from when the last successful renewal was sent (another
        process can take the lease `duration` seconds after that at the earliest); a renewal that hangs is given up at
        that deadline, as client-go's renew deadline does."""
        loop = asyncio.get_running_loop()
        while True:
            deadline = renewed + self.deadline
            await asyncio.wait({task}, timeout=max(0.0, min(self.renew, deadline - loop.time())))
            if task.done():
                return
            sent = loop.time()
            if sent < deadline:
                with contextlib.suppress(TimeoutError):
                    if await asyncio.wait_for(self._safely(self.try_acquire), deadline - sent):
                        renewed = sent
                        continue
            if loop.time() >= deadline:
                _log.warning("lost the lease %s/%s", self.namespace, self.name)
                return

    @staticmethod
    async def _safely(step: Callable[[], Awaitable[bool]]) -> bool:
        try:
            return await step()
        except ClusterError as e:
            _log.warning("leader election: %s", e)
            return False
