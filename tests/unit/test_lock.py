"""Who holds an app: the hold lapses when its holder stops renewing it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from kapply.app import lock
from kapply.app.lock import TTL, held_by_other
from kapply.app.meta import AppMeta
from kapply.app.record import App
from kapply.errors import ClusterError


def record(holder: str, renewed: datetime) -> dict:
    value = orjson.dumps({"holder": holder, "renewed": renewed.strftime("%Y-%m-%dT%H:%M:%SZ")}).decode()
    return {"metadata": {"annotations": {"kapply.dev/deploy-lock": value}}}


NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)


def test_a_fresh_hold_of_another_holder_is_reported_with_its_renewal_time():
    assert held_by_other(record("host/1/a", NOW - timedelta(seconds=5)), "me", NOW) == (
        "host/1/a (renewed 2026-11-23T11:59:55Z)"
    )


def test_a_lapsed_hold_our_own_hold_and_no_hold_leave_the_app_free():
    assert held_by_other(record("host/1/a", NOW - TTL - timedelta(seconds=1)), "me", NOW) is None
    assert held_by_other(record("me", NOW), "me", NOW) is None
    assert held_by_other({"metadata": {}}, "me", NOW) is None


def test_a_value_kapply_did_not_write_is_ignored():
    assert held_by_other({"metadata": {"annotations": {"kapply.dev/deploy-lock": "garbage"}}}, "me", NOW) is None


class Unknown:
    """A connection whose record this process never wrote: the release is written."""


def releasing(monkeypatch: pytest.MonkeyPatch, *answers: ClusterError | None) -> list[int]:
    """Release a hold while the record's updates answer `answers` in turn (None: done); the calls it made."""
    calls: list[int] = []

    async def update_record(cluster: object, app: object, change: object) -> None:
        calls.append(len(calls))
        answer = answers[min(len(calls), len(answers)) - 1]
        if answer is not None:
            raise answer

    monkeypatch.setattr(lock, "update_record", update_record)
    monkeypatch.setattr(lock, "RELEASE_RETRY", 0.01)
    app = App("web", "ns", "web", AppMeta("kapp.k14s.io/app", "1"))
    asyncio.run(lock._release(Unknown(), app, "me"))  # type: ignore[arg-type]
    return calls


def test_a_hold_is_released_once_the_api_server_answers_again(monkeypatch: pytest.MonkeyPatch):
    """A run that failed because the API server restarted releases its hold when the server is back, so that the
    user's rerun is not refused for TTL by a holder that has exited."""
    refused = ClusterError("dial tcp 127.0.0.1:6443: connect: connection refused")
    assert len(releasing(monkeypatch, refused, refused, None)) == 3


def test_a_hold_the_server_refuses_to_release_is_left_to_lapse(monkeypatch: pytest.MonkeyPatch):
    assert len(releasing(monkeypatch, ClusterError("forbidden", status=403))) == 1


def test_a_hold_is_not_retried_past_the_grace(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(lock, "RELEASE_GRACE", 0.05)
    assert 1 < len(releasing(monkeypatch, ClusterError("connection refused"))) < 100
