"""Sharding: the stable hash and its balance, the fair-share arithmetic, an assignment that moves as few shards as a
join or a leave needs, the shipped RBAC naming every Lease the shipped Deployment uses, replicas keeping their Leases
against an in-memory API server (never two working one shard, a dead one's shards taken over, a new one given its
share), and the controller starting and stopping a shard's work."""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kapply.controller.leader import Timing
from kapply.controller.main import Controller, ControllerOptions
from kapply.controller.shards import ShardLeases, assign, lease_names, member_lease, shard_lease, shard_of, targets
from kapply.errors import ClusterError
from kapply.objects import Obj
from tests.unit.lease_fakes import Leases

REPO = Path(__file__).resolve().parents[2]


# The hash.


def test_the_shard_of_an_object_is_sha256_of_its_namespace_and_name_the_same_in_every_process() -> None:
    # Pinned: a replica of another release (or another Python: `hash` is salted per process) must agree.
    assert shard_of("team", "web", 8) == 11946677578750677804 % 8 == 4
    assert shard_of("team", "api", 8) == 3
    assert shard_of("default", "hello", 4) == 2
    assert shard_of("a", "b", 1_000_003) == 3073
    assert shard_of("team", "web", 1) == 0


# Pearson's chi-square at which a uniform spread is rejected with p = 0.001, by degrees of freedom (shards - 1).
CHI_SQUARE_999 = {1: 10.83, 2: 13.82, 7: 24.32, 15: 37.70}


def test_the_hash_spreads_objects_evenly() -> None:
    for shards in (2, 3, 8, 16):
        counts = collections.Counter(shard_of(f"team-{i % 11}", f"svc{i}", shards) for i in range(20_000))
        expected = 20_000 / shards
        assert set(counts) == set(range(shards))
        chi_square = sum((n - expected) ** 2 / expected for n in counts.values())
        assert chi_square < CHI_SQUARE_999[shards - 1], counts


def test_names_do_not_collide_across_namespaces() -> None:
    # "a/b" in namespace "x" and "b" in namespace "x/a" cannot both exist (names have no "/"), so the key is unique.
    assert shard_of("x", "a-b", 1_000_003) != shard_of("x-a", "b", 1_000_003)


# Fair shares.


def test_each_member_gets_the_floor_or_the_ceiling_and_the_extras_go_to_those_holding_most() -> None:
    assert targets(8, {"a": 8, "b": 0}) == {"a": 4, "b": 4}
    assert targets(16, {"a": 8, "b": 8, "c": 0}) == {"a": 6, "b": 5, "c": 5}
    assert targets(4, {"a": 2, "b": 2, "c": 0}) == {"a": 2, "b": 1, "c": 1}
    assert targets(4, {"a": 0, "b": 0, "c": 0}) == {"a": 2, "b": 1, "c": 1}  # ties by name
    assert targets(2, {"a": 1, "b": 1, "c": 0}) == {"a": 1, "b": 1, "c": 0}  # more members than shards: spares
    assert targets(5, {}) == {}


@given(st.integers(1, 64), st.dictionaries(st.text("abcdefgh", min_size=1, max_size=3), st.integers(0, 64), min_size=1))
def test_targets_add_up_to_the_shards(shards: int, held: dict[str, int]) -> None:
    want = targets(shards, held)
    assert sum(want.values()) == shards
    assert set(want.values()) <= {shards // len(held), -(-shards // len(held))}


# Assignment.


def moved(before: list[str | None], after: list[str | None]) -> int:
    return sum(1 for b, a in zip(before, after, strict=True) if b != a)


def settle(shards: int, members: list[str], holders: list[str | None] | None = None) -> list[str | None]:
    return assign(shards, members, holders or [None] * shards)


def test_everything_is_assigned_evenly_from_scratch() -> None:
    out = settle(6, ["a", "b", "c"])
    assert collections.Counter(out) == {"a": 2, "b": 2, "c": 2}


def test_a_join_moves_only_the_new_members_share() -> None:
    before = settle(16, ["a", "b"])
    after = assign(16, ["a", "b", "c"], before)
    assert collections.Counter(after) == {"a": 6, "b": 5, "c": 5}
    assert moved(before, after) == 5  # the newcomer's share, taken from the others; nothing moves between a and b
    assert all(after[i] == before[i] for i in range(16) if after[i] != "c")


def test_a_leave_moves_only_the_leavers_shards() -> None:
    before = settle(16, ["a", "b", "c"])
    gone = [None if holder == "c" else holder for holder in before]  # c's Leases lapsed
    after = assign(16, ["a", "b"], gone)
    assert collections.Counter(after) == {"a": 8, "b": 8}
    assert moved(before, after) == before.count("c")


def test_a_settled_assignment_is_stable() -> None:
    before = settle(12, ["a", "b", "c", "d", "e"])
    assert assign(12, ["a", "b", "c", "d", "e"], before) == before


def test_shards_held_by_a_non_member_are_assigned_to_members() -> None:
    # a spare (no member Lease) or a replica whose member Lease lapsed gives its shards back
    after = assign(4, ["a", "b"], ["x", "x", "a", None])
    assert collections.Counter(after) == {"a": 2, "b": 2} and after[2] == "a"


def test_no_members_no_one() -> None:
    assert assign(3, [], ["a", None, "b"]) == [None, None, None]


@given(
    st.integers(1, 40),
    st.lists(st.sampled_from("abcdef"), min_size=1, max_size=6, unique=True),
    st.data(),
)
def test_every_shard_goes_to_a_member_who_keeps_what_it_may(shards: int, members: list[str], data: Any) -> None:
    holders = data.draw(st.lists(st.sampled_from([None, "a", "b", "c", "x"]), min_size=shards, max_size=shards))
    out = assign(shards, members, holders)
    assert all(holder in members for holder in out)
    counts = collections.Counter(out)
    assert sum(counts.values()) == shards
    assert max(counts[m] for m in members) - min(counts[m] for m in members) <= 1
    held = collections.Counter(h for h in holders if h in members)
    want = targets(shards, {m: held[m] for m in members})
    for member in members:  # each member keeps min(what it holds, its target) of its own shards
        kept = sum(1 for i in range(shards) if holders[i] == member and out[i] == member)
        assert kept == min(held[member], want[member])


# Lease names and the shipped RBAC.


def test_lease_names() -> None:
    assert lease_names("kc", 1) == ["kc"]
    assert lease_names("kc", 2) == ["kc-0", "kc-1", "kc-member-0", "kc-member-1"]
    assert shard_lease("kc", 3) == "kc-3" and member_lease("kc", 3) == "kc-member-3"


def _documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((REPO / "config" / "controller" / name).read_text()) if d]


def test_the_shipped_role_names_every_lease_of_the_shipped_deployment_and_of_up_to_8_shards() -> None:
    (role,) = [d for d in _documents("rbac.yml") if d["kind"] == "Role"]
    (named,) = [rule for rule in role["rules"] if rule.get("resourceNames")]
    assert named["verbs"] == ["get", "update"]
    unnamed = [rule for rule in role["rules"] if not rule.get("resourceNames")]
    assert unnamed == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create", "list"]}]
    (deployment,) = _documents("deployment.yml")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in args if "=" in arg)
    shipped = lease_names(flags["lease-name"], int(flags["shards"]))
    assert int(flags["shards"]) > 1 and deployment["spec"]["replicas"] <= int(flags["shards"])
    assert set(shipped) <= set(named["resourceNames"])
    assert set(named["resourceNames"]) == {n for s in range(1, 9) for n in lease_names("kapply-controller", s)}


# Replicas keeping their Leases, against an in-memory API server.


class Link:
    """One replica's connection to the Leases; cut, every request fails (a partition, or a killed process)."""

    def __init__(self, leases: Leases) -> None:
        self.leases = leases
        self.cut = False

    def __getattr__(self, name: str) -> Any:
        call = getattr(self.leases, name)

        async def request(*args: Any, **kwargs: Any) -> Any:
            if self.cut:
                raise ClusterError("connection refused")
            return await call(*args, **kwargs)

        return request


DURATION, RENEW = 1.0, 0.25  # the Lease timing of these tests (the controller's: 15 s and 5 s)
TIMING = Timing(DURATION, DURATION - RENEW, RENEW)
SHARDS = 6


class Replica:
    def __init__(self, name: str, leases: Leases, timing: Timing = TIMING) -> None:
        self.name = name
        self.link = Link(leases)
        self.working: set[int] = set()
        self.started: list[int] = []
        self.keeper = ShardLeases(
            self.link,  # type: ignore[arg-type]
            "ns",
            "kc",
            SHARDS,
            name,
            self.start,
            self.stop,
            timing=timing,
        )
        self.task: asyncio.Task[None] | None = None
        self.alive = True

    def start(self, shard: int) -> None:
        self.working.add(shard)
        self.started.append(shard)

    async def stop(self, shard: int) -> bool:
        self.working.discard(shard)
        return True

    def run(self) -> None:
        self.task = asyncio.create_task(self.keeper.run())

    async def kill(self) -> None:
        """SIGKILL: no more requests, nothing given back, its work gone with it."""
        self.link.cut = True
        self.alive = False
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        self.working.clear()


class Watch:
    """Checks, every few milliseconds, that no shard is worked on by two live replicas."""

    def __init__(self, replicas: list[Replica]) -> None:
        self.replicas = replicas
        self.overlaps: list[tuple[int, list[str]]] = []

    async def run(self) -> None:
        while True:
            for shard in range(SHARDS):
                working = [r.name for r in self.replicas if r.alive and shard in r.working]
                if len(working) > 1:
                    self.overlaps.append((shard, working))
            await asyncio.sleep(0.005)


async def until(check: Any, timeout: float, what: str) -> float:
    """Seconds until `check()` holds (fails after `timeout`)."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    while not check():
        if loop.time() - began > timeout:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)
    return loop.time() - began


def shares(replicas: list[Replica]) -> dict[str, int]:
    return {r.name: len(r.working) for r in replicas if r.alive}


def partitioned(replicas: list[Replica]) -> bool:
    live = [r for r in replicas if r.alive]
    return sorted(s for r in live for s in r.working) == list(range(SHARDS))


def test_replicas_share_the_shards_take_a_dead_ones_over_and_give_a_new_one_its_share() -> None:
    async def scenario() -> None:
        leases = Leases()
        replicas = [Replica(name, leases) for name in ("a", "b", "c")]
        watch = Watch(replicas)
        watching = asyncio.create_task(watch.run())
        for replica in replicas:
            replica.run()
        await until(lambda: partitioned(replicas) and set(shares(replicas).values()) == {2}, 10, "2 shards each")
        assert all(leases.holder(shard_lease("kc", s)) in "abc" for s in range(SHARDS))

        # c is killed: its shards go to a and b once its Leases lapse, not before.
        c_shards = set(replicas[2].working)
        await replicas[2].kill()
        took = await until(lambda: partitioned(replicas) and shares(replicas) == {"a": 3, "b": 3}, 10, "c's shards")
        assert DURATION - RENEW <= took <= DURATION + 3 * RENEW, took
        assert all(leases.holder(shard_lease("kc", s)) in "ab" for s in c_shards)

        # d joins: it gets its share (2) from a and b, given back at once (not after a lease duration).
        replicas.append(Replica("d", leases))
        before = {r.name: set(r.working) for r in replicas[:2]}
        replicas[3].run()
        took = await until(lambda: partitioned(replicas) and shares(replicas)["d"] == 2, 10, "d's share")
        assert took < DURATION + RENEW, took
        assert sorted(replicas[3].started) == sorted(replicas[3].working)  # it took exactly its share
        assert all(set(r.working) <= before[r.name] for r in replicas[:2])  # a and b only gave shards back

        assert watch.overlaps == []
        for replica in replicas:
            if replica.alive:
                assert replica.task is not None
                replica.task.cancel()
        await asyncio.gather(*(r.task for r in replicas if r.task), return_exceptions=True)
        watching.cancel()
        # Stopped replicas give everything back: nothing held but c's lapsed member and shard Leases.
        assert {n for n in leases.stored if leases.holder(n) not in ("", "c")} == set()

    asyncio.run(scenario())


def test_a_replica_cut_off_stops_its_work_before_another_can_take_its_shards() -> None:
    async def scenario() -> None:
        leases = Leases()
        replicas = [Replica(name, leases) for name in ("a", "b")]
        watch = Watch(replicas)
        watching = asyncio.create_task(watch.run())
        for replica in replicas:
            replica.run()
        await until(lambda: partitioned(replicas) and shares(replicas) == {"a": 3, "b": 3}, 10, "3 shards each")
        replicas[0].link.cut = True  # a can no longer renew, but runs on
        stopped = await until(lambda: not replicas[0].working, 10, "a to stop its work")
        assert stopped <= DURATION - RENEW + 0.1, stopped
        await until(lambda: len(replicas[1].working) == SHARDS, 10, "b to take every shard")
        assert watch.overlaps == []
        for replica in replicas:
            assert replica.task is not None
            replica.task.cancel()
        await asyncio.gather(*(r.task for r in replicas if r.task), return_exceptions=True)
        watching.cancel()

    asyncio.run(scenario())


def test_a_replica_cut_off_stops_its_work_at_its_renew_deadline() -> None:
    """Within the renew deadline of its last renewal (between a retry period before it and it), not at the lease
    duration less a retry period (0.9 s here)."""
    timing = Timing(lease_duration=1.0, renew_deadline=0.4, retry_period=0.1)

    async def scenario() -> None:
        replica = Replica("a", Leases(), timing)
        replica.run()
        await until(lambda: len(replica.working) == SHARDS, 10, "every shard")
        replica.link.cut = True
        stopped = await until(lambda: not replica.working, 10, "a to stop its work")
        assert stopped <= timing.renew_deadline + 0.1, stopped
        assert replica.task is not None
        replica.task.cancel()
        await asyncio.gather(replica.task, return_exceptions=True)

    asyncio.run(scenario())


def test_a_member_whose_written_renewal_is_long_past_is_not_counted_even_by_a_replica_that_just_started() -> None:
    """By this process's clock alone, a replica that starts would count a long-dead member for a lease duration and
    take only part of the shards, leaving the rest unheld; the renewal time written in the Lease tells it sooner."""

    async def scenario() -> None:
        leases = Leases()
        spec = {"holderIdentity": "dead", "leaseDurationSeconds": 1, "renewTime": "2026-01-01T00:00:00.000000Z"}
        await leases.create(None, {"metadata": {"name": member_lease("kc", 0)}, "spec": spec})
        replica = Replica("a", leases)
        replica.run()
        took = await until(lambda: len(replica.working) == SHARDS, 10, "every shard")
        assert took < 2 * RENEW, took
        assert replica.keeper.members == ("a",)
        assert replica.task is not None
        replica.task.cancel()
        await asyncio.gather(replica.task, return_exceptions=True)

    asyncio.run(scenario())


def test_one_shard_is_leader_election_not_sharding() -> None:
    with pytest.raises(ValueError, match="at least 2 shards"):
        ShardLeases(SimpleNamespace(), "ns", "kc", 1, "me", lambda s: None, Replica.stop)  # type: ignore[arg-type]


# The controller's side: starting and stopping a shard's work.


def sharded(shards: int = 4) -> Controller:
    api: Any = SimpleNamespace(cluster=SimpleNamespace())
    return Controller(api, ControllerOptions(shards=shards))


def app(namespace: str, name: str, generation: int = 1) -> Obj:
    return {"metadata": {"namespace": namespace, "name": name, "generation": generation}}


KEYS = [("team", f"app-{i}") for i in range(40)]


def test_a_sharded_controller_follows_every_app_but_queues_only_those_of_its_shards() -> None:
    c = sharded()
    for key in KEYS:
        c._app_event("ADDED", app(*key))
    assert len(c.queue) == 0 and len(c._generations) == len(KEYS)  # holds no shard yet
    c._start_shard(1)
    mine = {key for key in KEYS if shard_of(*key, 4) == 1}
    assert mine and c.queue._due.keys() == mine  # reconciled at once, as a new leader reconciles all
    c._app_event("MODIFIED", app("team", "app-0", 2))
    c.drift.notify(("team", "app-1"))
    assert c.queue._due.keys() == mine, "events of other shards' Apps queue nothing"


def test_stopping_a_shard_cancels_its_reconciles_and_forgets_its_work() -> None:
    async def scenario() -> None:
        c = sharded()
        for key in KEYS:
            c._app_event("ADDED", app(*key))
        c._start_shard(1)
        c._start_shard(2)
        ones = [key for key in KEYS if shard_of(*key, 4) == 1]
        twos = [key for key in KEYS if shard_of(*key, 4) == 2]
        running = {key: asyncio.create_task(asyncio.sleep(60)) for key in (ones[0], twos[0])}
        for key, task in running.items():
            c._running[("App", key)] = task  # type: ignore[assignment]
        c.reconciler.memory[ones[1]] = SimpleNamespace()  # type: ignore[assignment]
        c.drift.apps["label"] = {ones[1]}
        assert await c._stop_shard(1)
        assert running[ones[0]].cancelled() and not running[twos[0]].done()
        assert not c.owns(ones[0]) and c.owns(twos[0])
        assert set(c.queue._due) == set(twos)
        assert ones[1] not in c.reconciler.memory and c.drift.apps == {}
        running[twos[0]].cancel()

    asyncio.run(scenario())


def test_sharding_needs_leader_election() -> None:
    api: Any = SimpleNamespace(cluster=SimpleNamespace())
    with pytest.raises(ValueError, match="--shards=3"):
        Controller(api, ControllerOptions(shards=3, leader_election=False))
