"""Replicas sharing the Apps (`kapply controller --shards=N`), as real processes: three controllers divide 6 shards
(a Lease each) and each App is reconciled by exactly the process holding its shard; one is killed (SIGKILL) and its
Apps move to the others once its Leases lapse, and keep being reconciled; a fourth joins and is given its share at
once; and no two processes ever reconcile the same App at the same time (each reconcile's span from the JSON logs,
and the app-change history). The replicas elect with short leases (controller_harness.SHORT_LEASES)."""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.coordination_v1 import Lease
from lightkube.types import PatchType

from kapply.controller.shards import shard_of
from tests.e2e.controller_harness import (
    SHORT_LEASES,
    App,
    Controllers,
    app_changes,
    condition,
    config_map,
    config_map_data,
    create_all,
    deployer,
    endpoint,
    inline_app,
    install_crd,
    lease_flags,
    tool_env,
    wait_syncs,
)
from tests.e2e.harness import Cluster, eventually

pytestmark = pytest.mark.e2e

SHARDS = 6
APPS = 12
LEASE = "shard"
DURATION, RETRY = SHORT_LEASES.lease_duration, SHORT_LEASES.retry_period


def names_covering_every_shard(namespace: str) -> list[str]:
    """APPS names, APPS // SHARDS in each shard: the namespace's name is random, so names taken in order may leave a
    shard empty, and the process killed below would then hold no App to move."""
    per_shard = APPS // SHARDS
    taken: dict[int, list[str]] = {s: [] for s in range(SHARDS)}
    i = 0
    while any(len(names) < per_shard for names in taken.values()):
        name = f"app-{i}"
        names = taken[shard_of(namespace, name, SHARDS)]
        if len(names) < per_shard:
            names.append(name)
        i += 1
    return [name for names in taken.values() for name in names]


@pytest.fixture(scope="module")
def crd(cluster: Cluster, kube: Client) -> None:
    install_crd(cluster.kubeconfig, kube)


@dataclass(frozen=True)
class Reconcile:
    """One reconcile of an App by a process, spanning from its start to its last log line."""

    process: str
    app: str
    started: datetime
    ended: datetime


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def reconciles(controllers: Controllers, namespace: str) -> list[Reconcile]:
    """Every reconcile of the namespace's Apps the processes logged (the lines of one share `reconcileStarted`)."""
    spans: dict[tuple[str, str, str], datetime] = {}
    for process, log in controllers.logs_by_name.items():
        for text in log.read_text().splitlines() if log.exists() else []:
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if line.get("kind") == "App" and line.get("namespace") == namespace:
                key = (process, line["name"], line["reconcileStarted"])
                spans[key] = max(spans.get(key, _time(line["time"])), _time(line["time"]))
    return sorted(
        (Reconcile(process, app, _time(started), ended) for (process, app, started), ended in spans.items()),
        key=lambda r: r.started,
    )


def overlapping(found: list[Reconcile]) -> list[tuple[Reconcile, Reconcile]]:
    """Reconciles of one App by two processes at once."""
    out = []
    for app in {r.app for r in found}:
        spans = [r for r in found if r.app == app]
        for i, one in enumerate(spans):
            out += [(one, two) for two in spans[i + 1 :] if two.process != one.process and two.started < one.ended]
    return out


def holders(kube: Client, namespace: str, pids: dict[str, str]) -> list[str | None]:
    """The process holding each shard's Lease (None: none, or not one of ours)."""
    out: list[str | None] = []
    for shard in range(SHARDS):
        try:
            holder = kube.get(Lease, f"{LEASE}-{shard}", namespace=namespace).spec.holderIdentity or ""
        except ApiError as e:
            if e.status.code != 404:
                raise
            holder = ""
        out.append(pids.get(holder.split("_")[-2]) if holder.count("_") >= 2 else None)
    return out


def balanced(kube: Client, namespace: str, pids: dict[str, str], live: set[str]) -> list[str | None] | None:
    """The holders, once every shard is held by a live process and each holds its fair share."""
    found = holders(kube, namespace, pids)
    counts = Counter(found)
    share = SHARDS // len(live)
    if set(counts) == live and all(share <= n <= share + 1 for n in counts.values()):
        return found
    return None


def metric(url: str, name: str) -> float:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not exposed")


@pytest.fixture
def controllers(cluster: Cluster, kube: Client, namespace: str, tmp_path: Path) -> Iterator[Controllers]:
    running = Controllers(cluster.kubeconfig, kube, namespace, tmp_path)
    try:
        yield running
    finally:
        running.close()


def test_replicas_share_the_apps_a_killed_ones_move_a_new_one_takes_its_share_and_none_overlap(
    crd: None, cluster: Cluster, kube: Client, namespace: str, controllers: Controllers
) -> None:
    create_all(kube, deployer(namespace))
    flags = (
        "--leader-elect=true",
        f"--lease-namespace={namespace}",
        f"--lease-name={LEASE}",
        f"--shards={SHARDS}",
        "--log-format=json",
        *lease_flags(),
    )
    processes, pids = {}, {}

    def start(name: str) -> None:
        processes[name] = controllers.start(*flags, name=name, env=tool_env("ytt"))
        pids[str(processes[name].pid)] = name

    for name in ("a", "b", "c"):
        start(name)
    # The Apps come once the shards are divided (a first replica alone takes them all, then gives back).
    eventually(lambda: balanced(kube, namespace, pids, {"a", "b", "c"}), timeout=60, what="2 shards each")
    names = names_covering_every_shard(namespace)
    shard = {name: shard_of(namespace, name, SHARDS) for name in names}
    for name in names:
        kube.create(App(**inline_app(name, namespace, {"cm.yml": config_map(name, v="1")}, syncPeriod="2s")))
    eventually(
        lambda: all(condition(kube, namespace, n) == "ReconcileSucceeded" for n in names), timeout=90, what="success"
    )
    owner = holders(kube, namespace, pids)

    # Steady: each App is reconciled, every sync, by the process holding its shard, and by no other.
    since = datetime.now(UTC)
    urls = {name: endpoint(controllers.logs_by_name[name]) for name in processes}
    wait_syncs(list(urls.values()), namespace, names, 2)
    steady = [r for r in reconciles(controllers, namespace) if r.started >= since]
    assert holders(kube, namespace, pids) == owner
    for name in names:
        by = Counter(r.process for r in steady if r.app == name)
        assert set(by) == {owner[shard[name]]} and by[owner[shard[name]]] >= 2, (name, by)
    assert sum(metric(urls[n], "kapply_shards_held") for n in processes) == SHARDS
    assert all(metric(urls[n], "kapply_shards") == SHARDS for n in processes)

    # c is killed: its shards' Leases lapse a lease duration after their last renewal, then a and b take them.
    mine = {s for s in range(SHARDS) if owner[s] == "c"}
    moved = [name for name in names if shard[name] in mine]
    assert mine and moved
    os.kill(processes["c"].pid, signal.SIGKILL)
    killed = datetime.now(UTC)
    processes["c"].wait()
    last = {s: kube.get(Lease, f"{LEASE}-{s}", namespace=namespace).spec for s in mine}
    eventually(
        lambda: balanced(kube, namespace, pids, {"a", "b"}),
        timeout=DURATION + 2 * RETRY + 10,
        interval=0.2,
        what="a and b to take c's shards",
    )
    for s in mine:
        taken = kube.get(Lease, f"{LEASE}-{s}", namespace=namespace).spec
        waited = (taken.acquireTime - last[s].renewTime).total_seconds()
        assert last[s].leaseDurationSeconds == DURATION
        assert last[s].leaseDurationSeconds <= waited <= last[s].leaseDurationSeconds + 2 * RETRY + 1, (s, waited)

    def first_after(name: str, moment: datetime) -> Reconcile | None:
        return next((r for r in reconciles(controllers, namespace) if r.app == name and r.started > moment), None)

    eventually(lambda: all(first_after(n, killed) for n in moved), timeout=20, what="c's Apps reconciled again")
    for name in moved:
        first = first_after(name, killed)
        assert first is not None and first.process in ("a", "b")
        delay = (first.started - killed).total_seconds()
        print(f"{name}: reconciled by {first.process} {delay:.1f}s after c was killed")
        assert DURATION - RETRY <= delay <= DURATION + 2 * RETRY + 3, (name, delay)
    # ... and keep being: a change to one of them is deployed by its new owner.
    changed = moved[0]
    files = {"cm.yml": config_map(changed, v="2")}
    kube.patch(
        App,
        changed,
        {"spec": {"fetch": [{"inline": {"paths": files}}]}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )
    eventually(lambda: config_map_data(kube, namespace, changed) == {"v": "2"}, timeout=20, what="the change deployed")

    # d joins: a and b give it its share at once (released, not left to lapse).
    joined = datetime.now(UTC)
    start("d")
    after_join = eventually(
        lambda: balanced(kube, namespace, pids, {"a", "b", "d"}), timeout=20, interval=0.2, what="d's share"
    )
    took = (datetime.now(UTC) - joined).total_seconds()
    print(f"d holds {Counter(after_join)['d']} shards {took:.1f}s after it started")  # type: ignore[arg-type]
    assert took < 2 * RETRY + 10, took  # process start-up, and two retry periods (its shares are given back)
    owner = holders(kube, namespace, pids)
    since = datetime.now(UTC)
    urls["d"] = endpoint(controllers.logs_by_name["d"])
    wait_syncs([urls[n] for n in ("a", "b", "d")], namespace, names, 2)
    steady = [r for r in reconciles(controllers, namespace) if r.started >= since]
    assert holders(kube, namespace, pids) == owner
    for name in names:
        assert {r.process for r in steady if r.app == name} == {owner[shard[name]]}, name

    # Never two at once, over the whole run; and one deploy per change: the first, and the one change made.
    found = reconciles(controllers, namespace)
    assert overlapping(found) == []
    assert {r.process for r in found} == {"a", "b", "c", "d"}
    for name in names:
        changes = app_changes(cluster.kubeconfig, namespace, f"{name}.app")
        assert len(changes) == (2 if name == changed else 1) and all(c["finished_at"] for c in changes), changes
        if name == changed:
            assert _time(changes[0]["finished_at"]) <= _time(changes[1]["started_at"]), changes
