"""tests/e2e/harness.py's `eventually`, which every e2e and compat test waits with: it polls a cheap check often
and a costly one less, and fails naming what it waited for."""

from __future__ import annotations

import time

import pytest

from tests.e2e.harness import eventually, poll_pause


def test_a_cheap_check_is_polled_every_tenth_of_a_second_a_costly_one_less_often() -> None:
    assert poll_pause(0.001) == 0.1
    assert poll_pause(0.1) == pytest.approx(0.4)
    assert poll_pause(3.0) == 0.5


def test_a_condition_met_after_some_polls_is_returned_soon_after() -> None:
    started = time.monotonic()
    ready_at = started + 0.3
    found = eventually(lambda: time.monotonic() >= ready_at and "ready", timeout=5, what="ready")
    assert found == "ready"
    assert time.monotonic() - ready_at < 0.25  # the next cheap poll, not a half-second one


def test_an_interval_given_is_kept() -> None:
    calls: list[float] = []

    def check() -> bool:
        calls.append(time.monotonic())
        return len(calls) == 3

    eventually(check, timeout=5, interval=0.3)
    assert all(b - a >= 0.3 for a, b in zip(calls, calls[1:], strict=False))


def test_a_condition_never_met_fails_naming_it_and_the_last_value() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"timed out after 0.3s waiting for the thing \(last: 0\)"):
        eventually(lambda: 0, timeout=0.3, what="the thing")
