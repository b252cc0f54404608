"""Sharding the controller's objects across replicas, on `coordination.k8s.io/v1` Leases.

An object (an App, a PackageRepository, a PackageInstall) belongs to shard `sha256("<namespace>/<name>") mod S`, S
being `--shards`: a stable hash, the same in every process and every release (Python's `hash` is salted per
process), so every replica agrees on it without talking. Shard i is held through the Lease `<lease-name>-<i>`, with
client-go's rules (leader.Election): a replica reconciles, and watches for drift, only the objects of the shards it
holds, and stops all work of a shard before another replica can take its Lease.

Replicas find each other through member Leases, `<lease-name>-member-<j>` (j < S: a replica beyond S would have no
shard to hold, so it waits as a spare): each replica holds one while it runs. The live members divide the shards:
each one's fair share is S // R, and the S % R members that hold the most keep one more (`targets`). A member keeps
what it holds up to its share and gives the rest back (released: no holder, so the new owner takes it at its next
look rather than after a lease duration); shards with no live holder go to the members below their share (`assign`).
So a joining replica takes only its own share from the others, and a dead one's shards go to the others once its
Leases lapse; every replica computes the same assignment from the same Leases, so they do not race for a shard.

Every renew period each replica lists the namespace's Leases once, then writes only the Leases it takes, renews or
gives back.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from kapply.controller.leader import DEFAULT_TIMING, LEASES, RELEASE_TIMEOUT, Election, Timing
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster

_log = logging.getLogger("kapply.controller")


def shard_of(namespace: str, name: str, shards: int) -> int:
    """The shard of an object: the first 8 bytes of sha256("<namespace>/<name>") as a number, mod `shards`."""
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % shards


def shard_lease(lease_name: str, shard: int) -> str:
    return f"{lease_name}-{shard}"


def member_lease(lease_name: str, slot: int) -> str:
    return f"{lease_name}-member-{slot}"


def lease_names(lease_name: str, shards: int) -> list[str]:
    """Every Lease a controller with `shards` shards may use (config/controller/rbac.yml must name them all)."""
    if shards == 1:
        return [lease_name]
    return [shard_lease(lease_name, i) for i in range(shards)] + [member_lease(lease_name, j) for j in range(shards)]


def targets(shards: int, held: Mapping[str, int]) -> dict[str, int]:
    """How many shards each member (the keys of `held`, with how many each holds now) should hold: shards // members
    each, and one more for the shards % members members holding the most (ties by name), so that as few shards as
    possible move: a member that joins gets the smaller share."""
    if not held:
        return {}
    share, extra = divmod(shards, len(held))
    ranked = sorted(held, key=lambda member: (-held[member], member))
    return {member: share + (1 if rank < extra else 0) for rank, member in enumerate(ranked)}


def assign(shards: int, members: Sequence[str], holders: Sequence[str | None]) -> list[str | None]:
    """The member each shard should be held by, given the live `members` and each shard's live holder (None: none,
    or its Lease lapsed). Members keep their lowest shards up to their target; the shards left over (free, held by a
    non-member, or beyond a member's target) go to the members below target, lowest shard first, members by name.
    Every member computing this from the same Leases gets the same answer. No members: no one."""
    held = {member: [i for i, holder in enumerate(holders) if holder == member] for member in members}
    want = targets(shards, {member: len(kept) for member, kept in held.items()})
    out: list[str | None] = [None] * shards
    for member, kept in held.items():
        for shard in kept[: want[member]]:
            out[shard] = member
    needs = [member for member in sorted(members) for _ in range(want[member] - min(len(held[member]), want[member]))]
    for shard, member in zip((i for i in range(shards) if out[i] is None), needs, strict=False):
        out[shard] = member
    return out


@dataclass(frozen=True, slots=True)
class Held:
    """A Lease this replica holds: its Election (which remembers what it saw of the Lease) and when its last
    successful renewal was sent (loop time). Its work must stop a renew deadline after that."""

    election: Election
    renewed: float


Start = Callable[[int], None]  # a shard was taken: reconcile its objects
Stop = Callable[[int], Awaitable[bool]]  # a shard is given up or lost: stop its work; True when all of it stopped


class ShardLeases:
    """This replica's member Lease and shard Leases, kept every renew period (`run`)."""

    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        lease_name: str,
        shards: int,
        me: str,
        start: Start,
        stop: Stop,
        *,
        timing: Timing = DEFAULT_TIMING,
    ) -> None:
        if shards < 2:
            raise ValueError("sharding needs at least 2 shards (1 shard is plain leader election)")
        self.cluster = cluster
        self.namespace = namespace
        self.lease_name = lease_name
        self.shards = shards
        self.me = me
        self.start = start
        self.stop = stop
        self.timing = timing
        self.duration = timing.lease_duration
        self.deadline = timing.renew_deadline
        self.renew = timing.retry_period
        # One Election per Lease name, kept for the process's life: each remembers when it first saw its Lease's
        # current record (leader.Election.expired).
        self._elections: dict[str, Election] = {}
        self.member: tuple[int, Held] | None = None  # the member slot held
        self.held: dict[int, Held] = {}  # shard -> its Lease
        self.working: set[int] = set()  # shards whose work runs (held, and not being given back)
        self.members: tuple[str, ...] = ()  # the live members last seen (this replica included)

    def _election(self, name: str) -> Election:
        election = self._elections.get(name)
        if election is None:
            election = self._elections[name] = Election(self.cluster, self.namespace, name, self.me, self.timing)
        return election

    def _holder(self, name: str, lease: Obj | None) -> str | None:
        """The live holder of a Lease as listed, by this process's clock (None: none, or it lapsed)."""
        if lease is None:
            return None
        holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
        if holder == self.me:
            return holder
        return None if self._election(name).expired(lease) else holder

    def _member(self, name: str, lease: Obj | None) -> str | None:
        """The live holder of a member Lease. Besides lapsing by this process's clock, a member whose written renewal
        is older than the lease duration counts as gone: a replica that just started would otherwise count a dead one
        for a whole lease duration, compute a smaller share than the others and leave the shards they give it back
        unheld. The writer's clock decides only the shares here, never who may take a shard (that is `_holder`'s, by
        this process's clock alone), so a skewed clock can unbalance shares but never make two holders."""
        holder = self._holder(name, lease)
        if holder is None or holder == self.me or lease is None:
            return holder
        written = str((lease.get("spec") or {}).get("renewTime") or "")
        try:
            age = (datetime.now(UTC) - datetime.fromisoformat(written)).total_seconds()
        except ValueError:
            return holder
        return None if age > self.duration else holder

    async def run(self) -> None:
        """Forever: every renew period, keep the Leases (see the module docs). When cancelled, every shard's work is
        stopped, then the Leases are given back."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                began = loop.time()
                await self._cycle()
                await self._drop_lapsed()
                deadlines = [held.renewed + self.deadline for held in self._all_held()]
                wake = min([began + self.renew, *deadlines])
                await asyncio.sleep(max(0.0, wake - loop.time()))
        except asyncio.CancelledError:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._give_all_back(), RELEASE_TIMEOUT)
            raise

    def _all_held(self) -> list[Held]:
        return list(self.held.values()) + ([self.member[1]] if self.member else [])

    async def _cycle(self) -> None:
        """One look at the Leases: take a member slot when this replica has none, renew what it holds, give back what
        is beyond its share, take what is assigned to it and free."""
        leases = await self._list()
        if leases is None:
            return
        slots = [member_lease(self.lease_name, j) for j in range(self.shards)]
        await self._join(slots, leases)
        names = [shard_lease(self.lease_name, i) for i in range(self.shards)]
        holders = [self._holder(name, leases.get(name)) for name in names]
        for shard in [s for s in self.held if holders[s] != self.me]:  # taken from under it: never by these rules
            _log.warning("shard leases: shard %d is held by %s", shard, holders[shard])
            del self.held[shard]
            await self._stop(shard)
        wanted = assign(self.shards, self.members, holders)
        steps: list[Awaitable[None]] = []
        if self.member is not None:
            steps.append(self._renew_member(leases.get(slots[self.member[0]])))
        for shard, name in enumerate(names):
            mine = wanted[shard] == self.me
            if shard in self.held:
                steps.append(self._renew(shard, leases.get(name)) if mine else self._give_back(shard, leases.get(name)))
            elif mine and holders[shard] is None:
                steps.append(self._acquire(shard, leases.get(name)))
        await asyncio.gather(*steps)

    async def _list(self) -> dict[str, Obj] | None:
        """The Leases of the namespace by name; None when they could not be listed before the first of this replica's
        Leases is due for renewal (or within a renewal period)."""
        loop = asyncio.get_running_loop()
        deadlines = [held.renewed + self.deadline - loop.time() for held in self._all_held()]
        try:
            listed = await asyncio.wait_for(
                self.cluster.list(LEASES, namespace=self.namespace), max(0.0, min([self.renew, *deadlines]))
            )
        except (ClusterError, TimeoutError) as e:
            _log.warning("shard leases: listing the Leases of %s: %s", self.namespace, e or "timed out")
            return None
        return {item["metadata"]["name"]: item for item in listed}

    async def _join(self, slots: list[str], leases: dict[str, Obj]) -> None:
        """Take a free member slot when this replica holds none; the live members seen then are `members` (none
        while this replica is not one)."""
        members = {holder for name in slots if (holder := self._member(name, leases.get(name))) is not None}
        if self.member is None:
            free = [name for name in slots if self._holder(name, leases.get(name)) is None]
            sent = await self._take(free[0], leases.get(free[0])) if free else None
            if sent is not None:
                self.member = (slots.index(free[0]), Held(self._election(free[0]), sent))
                _log.info("shard leases: %s is a member (%s)", self.me, free[0])
        if self.member is not None:
            members.add(self.me)
        self.members = tuple(sorted(members)) if self.member is not None else ()

    async def _take(self, name: str, lease: Obj | None) -> float | None:
        """Take or renew one Lease as listed, within the renew period; the loop time the write was sent, or None."""
        sent = asyncio.get_running_loop().time()
        try:
            taken = await asyncio.wait_for(self._election(name).acquire(lease), self.renew)
        except (ClusterError, TimeoutError) as e:
            _log.warning("shard leases: %s: %s", name, e or "timed out")
            return None
        return sent if taken else None

    async def _renew_member(self, lease: Obj | None) -> None:
        assert self.member is not None
        slot, held = self.member
        sent = await self._take(held.election.name, lease)
        if sent is not None and self.member is not None:
            self.member = (slot, Held(held.election, sent))

    async def _renew(self, shard: int, lease: Obj | None) -> None:
        """Renew a shard's Lease; its work starts again if it had been stopped to give the shard back."""
        held = self.held[shard]
        sent = await self._take(held.election.name, lease)
        if sent is not None and shard in self.held:
            self.held[shard] = Held(held.election, sent)
            if shard not in self.working:
                self.working.add(shard)
                self.start(shard)

    async def _acquire(self, shard: int, lease: Obj | None) -> None:
        name = shard_lease(self.lease_name, shard)
        sent = await self._take(name, lease)
        if sent is not None:
            self.held[shard] = Held(self._election(name), sent)
            _log.info("shard leases: took shard %d of %d (%s)", shard, self.shards, name)
            self.working.add(shard)
            self.start(shard)

    async def _stop(self, shard: int) -> bool:
        self.working.discard(shard)
        return await self.stop(shard)

    async def _give_back(self, shard: int, lease: Obj | None) -> None:
        """Stop the shard's work, then release its Lease (no holder: its new owner takes it at its next look). Work
        that does not stop in time keeps the Lease (renewed, without work) until a later period."""
        if not await self._stop(shard):
            _log.warning("shard leases: shard %d still has work running; giving it back later", shard)
            held = self.held[shard]
            sent = await self._take(held.election.name, lease)
            if sent is not None and shard in self.held:
                self.held[shard] = Held(held.election, sent)
            return
        held = self.held.pop(shard)
        with contextlib.suppress(ClusterError, TimeoutError):
            await asyncio.wait_for(held.election.release_read(lease), self.renew)

    async def _drop_lapsed(self) -> None:
        """Stop the work of every shard not renewed for a renew deadline: another replica may take its Lease a lease
        duration after the last renewal at the earliest (as leader.Election's renew deadline)."""
        now = asyncio.get_running_loop().time()
        for shard, held in list(self.held.items()):
            if now >= held.renewed + self.deadline:
                _log.warning("shard leases: lost shard %d (%s): not renewed in time", shard, held.election.name)
                del self.held[shard]
                await self._stop(shard)
        if self.member is not None and now >= self.member[1].renewed + self.deadline:
            _log.warning("shard leases: lost the member Lease %s: not renewed in time", self.member[1].election.name)
            self.member = None  # no longer counted by the others: what it holds goes back at the next period

    async def _give_all_back(self) -> None:
        """Stopping: every shard's work stopped, then every Lease released at once."""
        for shard in list(self.held):
            await self._stop(shard)

        async def release(held: Held) -> None:
            with contextlib.suppress(ClusterError):
                await held.election.release()

        await asyncio.gather(*(release(held) for held in self._all_held()))
        self.held.clear()
        self.member = None
