"""Who holds an app: the hold lapses when its holder stops renewing it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson

from kapply.app.lock import TTL, held_by_other


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
