"""Holding an app whose record changed since the plan (another deploy ran while a user read the diff): refused,
unless the deploy says how to check its plan again and that check accepts the record as it is now; an app deployed
anew (another label) is refused whatever the check says."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from kapply.app.lock import hold
from kapply.app.meta import AppMeta
from kapply.app.record import CONFIGMAPS, App, find, new_record
from kapply.errors import ConcurrencyError
from kapply.resources.cluster import Discovery
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster

PLANNED = App("web", "ns", "web", AppMeta("kapp.k14s.io/app", "1", last_change_name="web-change-a"))


def recorded(meta: AppMeta) -> FakeCluster:
    fake = FakeCluster(Discovery(BUILTIN_TYPES))
    asyncio.run(fake.create(CONFIGMAPS, new_record(replace(PLANNED, meta=meta), {}, {})))
    return fake


def take(fake: FakeCluster, *, accept: bool | None) -> list[AppMeta]:
    """Hold the planned app; `accept`: what the check says (None: no check). The metadata the check was given."""
    given: list[AppMeta] = []

    async def check(now: AppMeta) -> None:
        given.append(now)
        if not accept:
            raise ConcurrencyError("not as planned")

    async def scenario() -> None:
        async with hold(fake, PLANNED, revalidate=None if accept is None else check):  # type: ignore[arg-type]
            pass

    asyncio.run(scenario())
    return given


def test_an_unchanged_record_is_held_without_a_check():
    assert take(recorded(PLANNED.meta), accept=False) == []


def test_a_record_changed_since_the_plan_is_held_once_the_check_accepts_it():
    since = replace(PLANNED.meta, last_change_name="web-change-b")
    assert take(recorded(since), accept=True) == [since]
    with pytest.raises(ConcurrencyError, match="not as planned"):
        take(recorded(since), accept=False)
    with pytest.raises(ConcurrencyError, match="changed since this deploy was planned"):
        take(recorded(since), accept=None)


def test_an_app_deployed_anew_since_the_plan_is_refused_without_asking():
    with pytest.raises(ConcurrencyError, match="changed since this deploy was planned"):
        take(recorded(replace(PLANNED.meta, label_value="2")), accept=True)


def planned_read(meta: AppMeta) -> FakeCluster:
    """The record as the plan read it (remembered by `record.find`), then written by another deploy with `meta`."""
    fake = recorded(PLANNED.meta)
    asyncio.run(find(fake, "ns", "web"))  # type: ignore[arg-type]
    if meta != PLANNED.meta:
        [cm] = fake.objects.values()
        asyncio.run(fake.update(CONFIGMAPS, {**cm, "data": {"spec": meta.to_json().decode()}}))
    fake.log.clear()
    return fake


def test_a_record_the_plan_read_is_held_in_one_write_and_checked_as_any_once_changed():
    unchanged = planned_read(PLANNED.meta)
    assert take(unchanged, accept=False) == []
    assert [verb for verb, _, _ in unchanged.log] == ["update", "update"]  # held, released: not read again
    since = replace(PLANNED.meta, last_change_name="web-change-b")
    assert take(planned_read(since), accept=True) == [since]
    with pytest.raises(ConcurrencyError, match="not as planned"):
        take(planned_read(since), accept=False)
