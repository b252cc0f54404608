"""kapply.cli.package.waiting: a PackageRepository and a PackageInstall are waited for by one loop (_wait_reconciled),
each kind saying its own words: done at ReconcileSucceeded of the current generation, an error at ReconcileFailed or
when the resource is deleted meanwhile; an install's waiting reads its App (whose stages it tails)."""

from __future__ import annotations

import asyncio
import functools
import io
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kapply.cli.package.app_tail import APP, InformerTail, TailFailed
from kapply.cli.package.common import WaitFlags
from kapply.cli.package.waiting import (
    tail_repository,
    wait_for_app_paused,
    wait_for_install,
    wait_for_install_deletion,
    wait_for_repository,
)
from kapply.controller.vocabulary import CARVEL, KAPPLY
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
    """Answers each kind's reads with its next state (the last one again once they run out; None: deleted); a watch
    gives `events`, each once, then nothing more (the App listed first: `listed`)."""

    def __init__(
        self,
        states: dict[str, list[Obj | None]],
        events: list[tuple[str, Obj]] | None = None,
        listed: Obj | None = None,
    ) -> None:
        self.states = states
        self.events = events or []
        self.listed = listed
        self.reads: list[str] = []

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        self.reads.append(rtype.kind)
        states = self.states.get(rtype.kind, [None])
        return states.pop(0) if len(states) > 1 else states[0]

    async def list_with_version(self, rtype: ResourceType, **selection: str) -> tuple[list[Obj], str]:
        assert selection == {"namespace": "ns", "field_selector": "metadata.name=x"}
        return ([self.listed] if self.listed else []), "1"

    async def watch(self, rtype: ResourceType, **_: str) -> AsyncIterator[tuple[str, Obj]]:
        while self.events:
            yield self.events.pop(0)
            await asyncio.sleep(0)
        await asyncio.Event().wait()


def wait(waiter: Any, cluster: Cluster) -> str:
    text = io.StringIO()
    asyncio.run(waiter(cluster, KAPPLY, "ns", "x", Output(tty=True, out=text), FLAGS))
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


def test_a_failed_install_is_an_error_in_its_own_words() -> None:
    failed = resource("PackageInstall", 1, 1, "ReconcileFailed", usefulErrorMessage="bad", friendlyDescription="why")
    cluster = Cluster({"PackageInstall": [failed]})
    what = "packageinstall/x (packaging.kapply.dev/v1alpha1) namespace: ns"
    with pytest.raises(KapplyError, match=f"^{re.escape(what)}: Reconciling: bad. why$"):
        wait(wait_for_install, cluster)
    assert cluster.reads == ["PackageInstall"], "the App is watched, not read"


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
    asyncio.run(wait_for_app_paused(cluster, KAPPLY, "ns", "x", flags))  # type: ignore[arg-type]


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


# --- the App tail -----------------------------------------------------------------------------------------------------

AT = "2026-01-01T00:00:0{}Z"


def app(generation: int, observed: int, condition: str = "", **stages: Any) -> Obj:
    return resource("App", generation, observed, condition, **stages)


def lines(said: str) -> list[str]:
    """The messages, without their times (and ages)."""
    return [re.sub(r"^\d+:\d\d:\d\d[AP]M: | \(\w+ ago\)$", "", line) for line in said.splitlines()]


def tail(events: list[tuple[str, Obj]], listed: Obj | None) -> tuple[bool, str]:
    out = io.StringIO()
    app_tail = InformerTail(APP, Output(tty=True, out=out), "ns", "x", listed)
    ended = False
    for kind, obj in events:
        assert not ended, "nothing is told after the tail ended"
        ended = app_tail.event(kind, obj)
    return ended, out.getvalue()


def test_the_app_is_tailed_as_kctrls_informer_tells_each_change() -> None:
    fetched = {"fetch": {"startedAt": AT.format(1), "updatedAt": AT.format(2), "exitCode": 0}}
    done = {
        **fetched,
        "template": {"updatedAt": AT.format(3), "exitCode": 0},
        "deploy": {"startedAt": AT.format(3), "updatedAt": AT.format(4), "finished": True, "stdout": "ok"},
    }
    events = [
        ("MODIFIED", app(2, 1, "ReconcileSucceeded")),  # the spec changed
        ("MODIFIED", app(2, 1, "ReconcileSucceeded")),  # its labels too, before it was observed: said again
        ("MODIFIED", app(2, 2, "Reconciling", **fetched)),
        ("MODIFIED", app(2, 2, "ReconcileSucceeded", **done)),
    ]
    ended, said = tail(events, app(1, 1, "ReconcileSucceeded"))
    assert ended
    assert lines(said) == [
        "Waiting for generation 2 to be observed",
        "Waiting for generation 2 to be observed",
        "Fetch started",
        "Fetching",
        "Fetch succeeded",
        "Template succeeded",
        "Deploy started",
        "Deploying",
        "\t    | ok",
        "Deploy succeeded",
    ]


def test_a_change_of_a_reconciled_app_says_it_succeeded_and_ends_the_tail() -> None:
    """kctrl tells `Deploy succeeded` on every change of an App whose status says so, its status changed or not."""
    reconciled = app(3, 3, "ReconcileSucceeded", deploy={"updatedAt": AT.format(5), "finished": True})
    ended, said = tail([("MODIFIED", reconciled)], reconciled)
    assert ended and lines(said) == ["Deploy succeeded"]


def test_the_apps_creation_is_not_told_and_its_deletion_ends_the_tail() -> None:
    created = app(1, 0)
    ended, said = tail([("ADDED", created), ("MODIFIED", app(1, 1, "Deleting")), ("DELETED", created)], None)
    assert ended and lines(said) == ["App 'x' in namespace 'ns' deleted"]


def test_a_failed_reconcile_ends_the_tail_with_its_error() -> None:
    failed = app(1, 1, "ReconcileFailed", usefulErrorMessage="boom")
    with pytest.raises(TailFailed, match="^Reconciling app: ReconcileFailed: boom$"):
        tail([("MODIFIED", failed)], app(1, 0))


def test_when_tailing_fails_the_wait_says_the_installs_conditions_once_each() -> None:
    failed = {"usefulErrorMessage": "bad", "friendlyDescription": "why"}
    installs: list[Obj | None] = [
        resource("PackageInstall", 2, 2, "Reconciling"),
        resource("PackageInstall", 2, 2, "Reconciling"),
        resource("PackageInstall", 2, 2, "ReconcileFailed", **failed),
    ]
    events = [("MODIFIED", app(2, 2, "ReconcileFailed", usefulErrorMessage="bad"))]
    cluster = Cluster({"PackageInstall": installs}, events, app(2, 1))
    text = io.StringIO()
    with pytest.raises(KapplyError, match=r": Reconciling: bad. why$"):
        asyncio.run(wait_for_install(cluster, CARVEL, "ns", "x", Output(tty=True, out=text), FLAGS))  # type: ignore[arg-type]
    what = "packageinstall/x (packaging.carvel.dev/v1alpha1) namespace: ns"
    assert lines(text.getvalue()) == [
        "Waiting for PackageInstall reconciliation for 'x'",
        "ReconcileFailed: bad",
        "Error tailing app: Reconciling app: ReconcileFailed: bad",
        "",
        f"{what}: Reconciling",
        f"{what}: ReconcileFailed",
    ]


def test_an_install_deletion_tails_its_app_until_the_install_is_gone() -> None:
    deleting = app(2, 2, "Deleting", deploy={"startedAt": AT.format(1), "updatedAt": AT.format(2), "stdout": "bye"})
    events = [("MODIFIED", app(2, 1, "ReconcileSucceeded")), ("MODIFIED", deleting), ("DELETED", deleting)]
    cluster = Cluster({"PackageInstall": [resource("PackageInstall", 2, 2, "Deleting"), None]}, events, app(1, 1))
    text = io.StringIO()
    flags = WaitFlags(True, 0.05, 30.0)  # each check after an interval: the tail has told the App's deletion
    asyncio.run(wait_for_install_deletion(cluster, CARVEL, "ns", "x", Output(tty=True, out=text), flags))  # type: ignore[arg-type]
    assert lines(text.getvalue()) == [
        "Waiting for generation 2 to be observed",
        "Delete started",
        "Deleting",
        "\t    | bye",
        "App 'x' in namespace 'ns' deleted",
        "packageinstall/x (packaging.carvel.dev/v1alpha1) namespace: ns: DeletionSucceeded",
    ]


def test_a_kicked_repository_is_waited_for_by_its_tail_alone_which_reads_only_its_stages() -> None:
    failed = resource("PackageRepository", 3, 3, "ReconcileFailed", usefulErrorMessage="no bundle")
    events = [("MODIFIED", resource("PackageRepository", 3, 2)), ("MODIFIED", failed)]
    cluster = Cluster({}, events, resource("PackageRepository", 2, 2, "ReconcileSucceeded"))
    text = io.StringIO()
    with pytest.raises(TailFailed, match="^Reconciling repository: ReconcileFailed: $"):
        asyncio.run(tail_repository(cluster, CARVEL, "ns", "x", Output(tty=True, out=text), FLAGS))  # type: ignore[arg-type]
    assert lines(text.getvalue()) == [
        "Waiting for package repository reconciliation for 'x'",
        "Waiting for generation 3 to be observed",
        "ReconcileFailed: ",
    ]
    assert cluster.reads == [], "no polls"
    quiet = Cluster({})
    with pytest.raises(KapplyError, match=r"Reconciling: timed out waiting after 0s$"):
        asyncio.run(tail_repository(quiet, CARVEL, "ns", "x", Output(tty=True, out=text), WaitFlags(True, 1, 0.0)))  # type: ignore[arg-type]
