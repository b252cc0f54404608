"""kapply.cli.package.waiting: a PackageRepository and a PackageInstall are waited for by one loop (_wait_reconciled),
each kind saying its own words: done at ReconcileSucceeded of the current generation, an error at ReconcileFailed or
when the resource is deleted meanwhile; an install's waiting reads its App (whose stages it tails)."""

from __future__ import annotations

import asyncio
import functools
import io
import re
from typing import Any

import pytest

from kapply.cli.package.common import WaitFlags
from kapply.cli.package.waiting import wait_for_app_paused, wait_for_install, wait_for_repository
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType
from kapply.ui.output import Output

FLAGS = WaitFlags(True, 0.0, 30.0)


def resource(kind: str, generation: int, observed: int, condition: str = "", **status: Any) -> Obj:
    conditions = [{"type": condition, "status": "True"}] if condition else []
    return {
        "kind": kind,
        "metadata": {"name": "x", "namespace": "ns", "generation": generation},
        "status": {"observedGeneration": observed, "conditions": conditions, **status},
    }


class Cluster:
    """Answers each kind's reads with its next state (the last one again once they run out; None: deleted)."""

    def __init__(self, states: dict[str, list[Obj | None]]) -> None:
        self.states = states
        self.reads: list[str] = []

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        self.reads.append(rtype.kind)
        states = self.states.get(rtype.kind, [None])
        return states.pop(0) if len(states) > 1 else states[0]


def wait(waiter: Any, cluster: Cluster) -> str:
    text = io.StringIO()
    asyncio.run(waiter(cluster, "ns", "x", Output(tty=True, out=text), FLAGS))
    return text.getvalue()


def test_a_repository_is_waited_for_until_it_reports_success_for_its_current_generation() -> None:
    states: list[Obj | None] = [
        resource("PackageRepository", 2, 1, "ReconcileSucceeded"),
        resource("PackageRepository", 2, 2, "ReconcileSucceeded"),
    ]
    cluster = Cluster({"PackageRepository": states})
    said = wait(wait_for_repository, cluster)
    assert "Waiting for package repository reconciliation for 'x'" in said
    assert "ReconcileSucceeded" not in said, "kctrl says the condition only when tailing failed"
    assert cluster.reads == ["PackageRepository", "PackageRepository"]


def test_a_failed_repository_is_an_error_in_its_own_words() -> None:
    failed = resource("PackageRepository", 1, 1, "ReconcileFailed", usefulErrorMessage="no bundle")
    with pytest.raises(KapplyError, match="^Reconciling repository: ReconcileFailed: no bundle$"):
        wait(wait_for_repository, Cluster({"PackageRepository": [failed]}))


def test_an_install_reads_its_app_and_fails_in_its_own_words() -> None:
    failed = resource("PackageInstall", 1, 1, "ReconcileFailed", usefulErrorMessage="bad", friendlyDescription="why")
    cluster = Cluster({"PackageInstall": [failed], "App": [resource("App", 1, 1)]})
    what = "packageinstall/x (packaging.kapply.dev/v1alpha1) namespace: ns"
    with pytest.raises(KapplyError, match=f"^{re.escape(what)}: Reconciling: bad. why$"):
        wait(wait_for_install, cluster)
    assert cluster.reads == ["PackageInstall", "App"]


@pytest.mark.parametrize(
    ("waiter", "kind", "noun"),
    [
        (wait_for_repository, "PackageRepository", "Package repository"),
        (wait_for_install, "PackageInstall", "Package install"),
    ],
)
def test_a_resource_deleted_while_waited_for_is_an_error(waiter: Any, kind: str, noun: str) -> None:
    with pytest.raises(KapplyError, match=f"^{noun} 'x' in namespace 'ns' deleted$"):
        wait(waiter, Cluster({kind: [resource(kind, 2, 1), None]}))


def paused(cluster: Cluster, flags: WaitFlags = FLAGS) -> None:
    asyncio.run(wait_for_app_paused(cluster, "ns", "x", flags))  # type: ignore[arg-type]


def test_an_update_waits_for_the_app_to_see_it_is_paused() -> None:
    app = resource("App", 2, 2)
    cluster = Cluster(
        {"App": [resource("App", 2, 1), app | {"status": {**app["status"], "friendlyDescription": "Canceled/paused"}}]}
    )
    cluster.states["PackageInstall"] = [resource("PackageInstall", 2, 2, "ReconcileSucceeded")]
    paused(cluster)
    assert cluster.reads == ["App", "PackageInstall", "App"]


def test_an_update_stops_waiting_when_the_installed_version_left_the_repositories() -> None:
    """The install fails before it reaches its App, which is never paused: kctrl goes on with the update."""
    gone = resource(
        "PackageInstall",
        2,
        2,
        "ReconcileFailed",
        friendlyDescription="Reconcile failed: Expected to find at least one version, but did not (details: all=1)",
    )
    cluster = Cluster({"App": [resource("App", 1, 1)], "PackageInstall": [resource("PackageInstall", 2, 1), gone]})
    paused(cluster)
    assert cluster.reads == ["App", "PackageInstall", "App", "PackageInstall"]


def test_an_app_that_is_never_paused_times_out() -> None:
    failed = resource("PackageInstall", 2, 2, "ReconcileFailed", usefulErrorMessage="something else")
    cluster = Cluster({"App": [resource("App", 1, 1)], "PackageInstall": [failed]})
    with pytest.raises(KapplyError, match="^Waiting for app 'x' in namespace 'ns' to be paused: timed out"):
        paused(cluster, WaitFlags(True, 0.0, 0.0))


def test_an_unchanged_repository_is_told_from_its_first_stage_without_waiting() -> None:
    """kctrl 0.53: `repository add|update` of a repository that reports its current spec tells its last reconcile."""
    stages = {
        "fetch": {"startedAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:02Z", "exitCode": 0},
        "template": {"updatedAt": "2026-01-01T00:00:02Z", "exitCode": 0},
        "deploy": {"startedAt": "2026-01-01T00:00:02Z", "updatedAt": "2026-01-01T00:00:02Z", "finished": True},
    }
    cluster = Cluster({"PackageRepository": [resource("PackageRepository", 3, 3, "ReconcileSucceeded", **stages)]})
    said = wait(functools.partial(wait_for_repository, unchanged=True), cluster)
    told = [
        line for line in ("Fetch started", "Fetch succeeded", "Template succeeded", "Deploy started") if line in said
    ]
    assert told == ["Fetch started", "Fetch succeeded", "Template succeeded", "Deploy started"], said
    assert "Deploy succeeded" in said and "Waiting for package repository reconciliation" not in said
    assert cluster.reads == ["PackageRepository"]


def test_an_updated_repository_whose_new_generation_is_reported_early_is_not_told_from_its_old_stages() -> None:
    """The controller may report the new generation, the last reconcile's stages still there, before its first
    stage: an `update` that wrote is waited for as kctrl waits, never told its previous reconcile."""
    old = {"fetch": {"startedAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:02Z", "exitCode": 0}}
    cluster = Cluster({"PackageRepository": [resource("PackageRepository", 4, 4, "ReconcileSucceeded", **old)]})
    said = wait(wait_for_repository, cluster)
    assert "Waiting for package repository reconciliation for 'x'" in said
    assert "Fetch started" not in said, said


def test_an_updated_repository_already_fetching_at_the_first_look_is_told_from_its_fetch() -> None:
    """The controller may have started the new fetch before the first look: the stages are told since the
    repository as it was before the update (kctrl says `Fetch started` then too)."""
    old = {"fetch": {"startedAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:02Z", "exitCode": 0}}
    new = {"fetch": {"startedAt": "2026-01-01T00:01:00Z"}}
    before = resource("PackageRepository", 3, 3, "ReconcileSucceeded", **old)
    cluster = Cluster({"PackageRepository": [resource("PackageRepository", 4, 4, "ReconcileSucceeded", **new)]})
    said = wait(functools.partial(wait_for_repository, before=before), cluster)
    assert "Waiting for package repository reconciliation for 'x'" in said
    assert "Fetch started" in said, said
