"""The leader election's timing (`kapply controller --leader-elect-lease-duration`, `--leader-elect-renew-deadline`,
`--leader-elect-retry-period`): the flags' parsing and validation, the timing reaching the Election, and a leader
whose renewals hang stopping its work at its renew deadline. Elections between processes are
tests/e2e/test_controller_process.py's; shards' Leases, test_controller_shards.py's."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from kapply.cli.command import resolve
from kapply.cli.controller import lease_timing
from kapply.cli.main import run
from kapply.cli.tree import PROGRAM, global_flags, tree
from kapply.controller import main
from kapply.controller.leader import DEFAULT_TIMING, Election, Timing
from kapply.controller.main import Controller, ControllerOptions
from tests.unit.lease_fakes import Leases

# The timing and its flags.


def test_the_defaults_are_15s_10s_and_5s() -> None:
    assert Timing(lease_duration=15.0, renew_deadline=10.0, retry_period=5.0) == DEFAULT_TIMING
    assert DEFAULT_TIMING.grace == 5.0
    assert ControllerOptions().lease_timing == DEFAULT_TIMING


@pytest.mark.parametrize(
    ("duration", "deadline", "retry"), [(4, 3, 1), (1, 1, 0.5), (2, 1, 1), (2, 3, 1), (4, 3, 0), (4, 3, -1)]
)
def test_a_timing_is_retry_shorter_than_deadline_shorter_than_duration_all_positive(
    duration: float, deadline: float, retry: float
) -> None:
    if 0 < retry < deadline < duration:
        assert Timing(duration, deadline, retry).grace == duration - deadline
    else:
        with pytest.raises(ValueError, match="expected 0 < retry period"):
            Timing(duration, deadline, retry)


def parsed(*flags: str) -> Timing:
    args = resolve(tree(), ["controller", *flags], global_flags(), PROGRAM)
    assert args is not None
    return lease_timing(args)


def test_the_flags_give_the_timing() -> None:
    assert parsed() == DEFAULT_TIMING
    flags = (
        "--leader-elect-lease-duration=4s",
        "--leader-elect-renew-deadline",
        "3s",
        "--leader-elect-retry-period=1s",
    )
    assert parsed(*flags) == Timing(4.0, 3.0, 1.0)
    assert parsed("--leader-elect-retry-period=500ms") == Timing(15.0, 10.0, 0.5)
    assert parsed("--leader-elect-lease-duration=1m", "--leader-elect-renew-deadline=40s") == Timing(60.0, 40.0, 5.0)


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        (
            ["--leader-elect-renew-deadline=15s"],
            "--leader-elect-lease-duration=15s: expected longer than --leader-elect-renew-deadline=15s",
        ),
        (
            ["--leader-elect-lease-duration=4s"],
            "--leader-elect-lease-duration=4s: expected longer than --leader-elect-renew-deadline=10s",
        ),
        (
            ["--leader-elect-retry-period=10s"],
            "--leader-elect-renew-deadline=10s: expected longer than --leader-elect-retry-period=10s",
        ),
        (["--leader-elect-retry-period=0"], "--leader-elect-retry-period=0s: expected more than 0"),
        (["--leader-elect-retry-period=-1s"], "--leader-elect-retry-period=-1s: expected more than 0"),
        (
            ["--leader-elect-lease-duration=4"],
            'invalid argument "4" for "--leader-elect-lease-duration" flag: time: missing unit in duration "4"',
        ),
    ],
)
def test_a_wrong_timing_is_refused_naming_its_flag_before_the_controller_connects(
    flags: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["controller", *flags, "--kubeconfig", "/nonexistent"]) == 1
    assert error in capsys.readouterr().err


def test_the_help_tells_the_flags_and_their_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["controller", "--help"]) == 0
    text = capsys.readouterr().out
    for flag, default in [("lease-duration", "15s"), ("renew-deadline", "10s"), ("retry-period", "5s")]:
        (line,) = [line for line in text.splitlines() if f"--leader-elect-{flag} " in line]
        assert f"(default {default})" in line, line


def test_the_controller_elects_with_the_timing_of_its_options(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[Any, ...]] = []

    class Recorded:
        def __init__(self, *args: Any) -> None:
            made.append(args)

        async def lead(self, work: Any) -> None:
            return None

    monkeypatch.setattr(main, "Election", Recorded)
    api: Any = SimpleNamespace(cluster=SimpleNamespace())
    timing = Timing(4.0, 3.0, 1.0)
    asyncio.run(Controller(api, ControllerOptions(lease_timing=timing))._run())
    ((_, namespace, name, _, given),) = made
    assert (namespace, name, given) == ("kapply-system", "kapply-controller", timing)


# A leader against an in-memory Lease.


def test_a_leader_whose_renewals_hang_stops_its_work_at_its_renew_deadline() -> None:
    """The work stops within the renew deadline of the last renewal (between a retry period before it and it), not at
    the lease duration less a retry period (0.9 s here)."""
    timing = Timing(lease_duration=1.0, renew_deadline=0.4, retry_period=0.1)

    async def scenario() -> None:
        leases = Leases()
        election = Election(leases, "ns", "leader", "me", timing)  # type: ignore[arg-type]
        loop = asyncio.get_running_loop()
        working, stopped = asyncio.Event(), asyncio.Event()

        async def work() -> None:
            working.set()
            try:
                await asyncio.Event().wait()
            finally:
                stopped.set()

        leading = asyncio.create_task(election.lead(work))
        await asyncio.wait_for(working.wait(), 5)
        spec = leases.stored["leader"]["spec"]
        assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == ("me", 1)
        await asyncio.sleep(0.25)  # renewed meanwhile
        assert leases.version > 1
        leases.hang = True
        hung = loop.time()
        await asyncio.wait_for(stopped.wait(), 5)
        took = loop.time() - hung
        assert timing.renew_deadline - timing.retry_period - 0.05 <= took <= timing.renew_deadline + 0.1, took
        leading.cancel()
        await asyncio.gather(leading, return_exceptions=True)

    asyncio.run(scenario())
