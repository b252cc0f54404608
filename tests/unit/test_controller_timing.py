"""When an App is reconciled again: its sync period (at least the controller's minimum), and after failures 2^F
seconds capped at that period, as kapp-controller's reconcile_timer.go."""

from __future__ import annotations

import pytest

from kapply.controller import timing
from kapply.controller.settings import Settings
from kapply.controller.spec import AppSpec, Deploy


def spec(sync_period: float | None) -> AppSpec:
    return AppSpec("sa", (), (), Deploy(), sync_period=sync_period)


def test_without_a_spec_or_period_the_default_applies() -> None:
    settings = Settings(default_sync_period=45.0, min_sync_period=10.0)
    assert timing.sync_period(None, settings) == 45.0
    assert timing.sync_period(spec(None), settings) == 45.0


def test_the_apps_period_applies_above_the_minimum() -> None:
    assert timing.sync_period(spec(120.0), Settings(min_sync_period=30.0)) == 120.0


@pytest.mark.parametrize("period", [0.0, 5.0, -1.0])
def test_a_period_below_the_minimum_is_raised_to_it(period: float) -> None:
    assert timing.sync_period(spec(period), Settings(min_sync_period=30.0)) == 30.0


def test_a_default_below_the_minimum_is_raised_too() -> None:
    assert timing.sync_period(None, Settings(default_sync_period=1.0, min_sync_period=30.0)) == 30.0


def test_failures_back_off_exponentially() -> None:
    settings = Settings(min_sync_period=10_000.0)
    assert [timing.after_failure(f, None, settings) for f in range(1, 8)] == [2, 4, 8, 16, 32, 64, 128]


def test_backoff_never_exceeds_the_sync_period() -> None:
    settings = Settings(min_sync_period=1.0)
    assert timing.after_failure(5, spec(20.0), settings) == 20.0
    assert timing.after_failure(3, spec(20.0), settings) == 8.0
    assert timing.after_failure(6, None, Settings()) == 30.0


@pytest.mark.parametrize("failures", [0, -3])
def test_no_failure_counted_still_waits_the_first_step(failures: int) -> None:
    assert timing.after_failure(failures, None, Settings()) == 2.0


def test_a_long_failing_streak_does_not_overflow() -> None:
    delay = timing.after_failure(10**6, spec(1e12), Settings())
    assert delay == float(2**29)
    assert isinstance(delay, float)


def test_the_default_settings_are_kapp_controllers() -> None:
    settings = Settings()
    assert (settings.default_sync_period, settings.min_sync_period) == (30.0, 30.0)
    assert settings.ghost_quiet_syncs == 10
    assert settings.allow_file_urls is False
