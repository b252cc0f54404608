"""kapply.cli.app_tail: what `kapply app` adds to the package commands' App tail. `status` tells the last reconcile
from its first stage and stops when it ended (kctrl's error when it failed), nothing while the App is being deleted;
following an App gone already says it was deleted (unless its creation is waited for), and `--wait-timeout` ends a
follow."""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kapply.cli.app_tail import current, follow
from kapply.cli.package.app_tail import TailFailed
from kapply.controller.vocabulary import KAPPLY
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType
from kapply.ui.output import Output

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"


def stages(at: str, *, deploy_exit: int = 0) -> Obj:
    return {
        "fetch": {"startedAt": at, "updatedAt": at, "exitCode": 0, "stdout": "fetched"},
        "template": {"updatedAt": at, "exitCode": 0},
        "deploy": {"startedAt": at, "updatedAt": at, "exitCode": deploy_exit, "finished": True, "stdout": "Succeeded"},
    }


def app(version: int, condition: str = "", **status: Any) -> Obj:
    conditions = [{"type": condition, "status": "True"}] if condition else []
    return {
        "metadata": {"name": "x", "namespace": "ns", "generation": 1, "resourceVersion": str(version)},
        "status": {"observedGeneration": 1, "conditions": conditions, **status},
    }


def said(text: io.StringIO) -> list[str]:
    """The status lines' messages (the time and any `(Ns ago)` left out), and the quoted output's lines."""
    return [re.sub(r"^\d+:\d\d:\d\d[AP]M: | \(\w+ ago\)$", "", line) for line in text.getvalue().splitlines()]


def output() -> tuple[Output, io.StringIO]:
    text = io.StringIO()
    return Output(tty=True, out=text), text


def test_status_tells_the_last_reconcile_from_its_first_stage_and_ends_at_success() -> None:
    out, text = output()
    assert current(out, app(1, "ReconcileSucceeded", **stages(T0)))
    assert said(text) == [
        "Fetch started",
        "Fetching",
        "\t    | fetched",
        "Fetch succeeded",
        "Template succeeded",
        "Deploy started",
        "Deploying",
        "\t    | Succeeded",
        "Deploy succeeded",
    ]


def test_a_reconcile_under_way_is_told_so_far_and_followed() -> None:
    out, text = output()
    running = app(1, "Reconciling", fetch={"startedAt": T1, "updatedAt": T1, "exitCode": 0, "stdout": ""})
    assert not current(out, running)
    assert said(text)[0] == "Fetch started"


def test_a_failed_stage_ends_the_tail_with_kctrls_error() -> None:
    out, text = output()
    failed = app(1, "ReconcileFailed", usefulErrorMessage="kapp: Error: boom", **stages(T0, deploy_exit=1))
    failed["status"]["deploy"]["stderr"] = "kapp: Error: boom"
    with pytest.raises(TailFailed, match="^Reconciling app: Deploy failed$"):
        current(out, failed)
    assert said(text)[-2:] == ["Deploy failed", "\t    | kapp: Error: boom"]


def test_a_failure_without_a_failed_stage_is_said_with_its_message() -> None:
    out, text = output()
    with pytest.raises(TailFailed, match="^Reconciling app: ReconcileFailed: no service account$"):
        current(out, app(1, "ReconcileFailed", usefulErrorMessage="no service account"))
    assert said(text) == ["ReconcileFailed: no service account"]


def test_a_deleting_app_tells_nothing_at_first() -> None:
    out, text = output()
    assert not current(out, app(1, "Deleting", **stages(T0)))
    assert text.getvalue() == ""


class Quiet:
    """An App that exists (or not) and never changes: its watch yields nothing until cancelled."""

    def __init__(self, found: Obj | None) -> None:
        self.found = found

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        return self.found

    async def list_with_version(self, rtype: ResourceType, **kwargs: Any) -> tuple[list[Obj], str]:
        return ([self.found] if self.found else []), "1"

    async def watch(self, rtype: ResourceType, **kwargs: Any) -> AsyncIterator[tuple[str, Obj]]:
        await asyncio.sleep(3600)
        yield "MODIFIED", {}


def run_follow(cluster: Quiet, out: Output, timeout: float | None = None, **kwargs: Any) -> None:
    asyncio.run(follow(cluster, KAPPLY.app.rtype, "ns", "x", out, timeout, **kwargs))  # type: ignore[arg-type]


def test_an_app_gone_when_followed_is_said_deleted() -> None:
    out, text = output()
    run_follow(Quiet(None), out)
    assert said(text) == ["App 'x' in namespace 'ns' deleted"]


class GoneBetween(Quiet):
    """An App still there when read, gone by the time it is listed (a `delete --noop` the controller finished at
    once): its deletion is never watched."""

    async def list_with_version(self, rtype: ResourceType, **kwargs: Any) -> tuple[list[Obj], str]:
        return [], "2"


def test_an_app_gone_between_its_read_and_the_tails_list_is_said_deleted() -> None:
    out, text = output()
    run_follow(GoneBetween(app(1, "Deleting")), out, 5)  # it used to wait for a DELETED event that never comes
    assert said(text) == ["App 'x' in namespace 'ns' deleted"]


def test_the_wait_timeout_ends_a_follow_and_creation_may_be_waited_for() -> None:
    out, _ = output()
    with pytest.raises(KapplyError, match=r"^app/x \(kapply.dev/v1alpha1\) namespace: ns: timed out waiting after"):
        run_follow(Quiet(app(1, "Reconciling")), out, 0.05)
    with pytest.raises(KapplyError, match="timed out"):
        run_follow(Quiet(None), out, 0.05, until_created=True)
