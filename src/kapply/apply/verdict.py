"""What one poll of a waited change means to the apply loop, and when waiting gives up: pure functions of the
convergence and the clock, so that `loop.ApplyLoop` only polls, prints and keeps count.

kapp's order: an error fails the change (`Errored: ...`); then a change polled after its own `--wait-resource-timeout`
(from when it was applied) fails (`Errored: Resource timed out ...`), even when the poll finds it done: kapp checks the
deadline before the state; a resource that finished unsuccessfully fails it too but counts as done; a finished one is
done; one that unblocks its dependents does so once; anything else is waited on, until its deadline or the round's
`--wait-timeout` runs out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from kapply.apply.waiters import Convergence


class Outcome(StrEnum):
    DONE = "done"
    UNBLOCKED = "unblocked"  # not done, but the changes waiting on it may start
    FAILED = "failed"
    WAITING = "waiting"


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: Outcome
    message: str = ""  # a failure's, as kapp reports it
    counted: bool = False  # a failure that counts as done: the resource converged, unsuccessfully


DONE = Verdict(Outcome.DONE)
UNBLOCKED = Verdict(Outcome.UNBLOCKED)
WAITING = Verdict(Outcome.WAITING)


def verdict(
    result: Convergence, description: str, *, unblocked_before: bool, overdue: Verdict | None = None
) -> Verdict:
    """What `result`, one poll of the change `description` (`<wait op> <resource>`), means; `unblocked_before`: the
    change already unblocked its dependents in an earlier round, so unblocking again is only waiting; `overdue`: the
    change's failure if it was polled after its resource timeout (`resource_timed_out`)."""
    if result.error:
        return Verdict(Outcome.FAILED, f"waiting on {description}: Errored: {result.error}")
    if overdue is not None:
        return overdue
    state = result.state
    if state.done and not state.successful:
        return Verdict(Outcome.FAILED, f"waiting on {description}: Finished unsuccessfully ({state.message})", True)
    if state.done:
        return DONE
    if state.unblock and not unblocked_before:
        return UNBLOCKED
    return WAITING


def sort_out(verdicts: Mapping[int, Verdict]) -> tuple[set[int], set[int], dict[int, Verdict]]:
    """The changes (by index) that are done, that unblocked their dependents and that failed."""
    done = {i for i, v in verdicts.items() if v.outcome is Outcome.DONE}
    unblocked = {i for i, v in verdicts.items() if v.outcome is Outcome.UNBLOCKED}
    return done, unblocked, {i: v for i, v in verdicts.items() if v.outcome is Outcome.FAILED}


def resource_timed_out(description: str, applied_at: float, now: float, limit: float) -> Verdict | None:
    """The failure of a change polled more than `limit` seconds (0: no limit) after it was applied, else None."""
    if not limit or now - applied_at <= limit:
        return None
    return Verdict(
        Outcome.FAILED, f"waiting on {description}: Errored: Resource timed out waiting after {go_duration(limit)}"
    )


def round_timed_out(waiting: Sequence[str], started: float, now: float, limit: float) -> str | None:
    """The error that ends a round of waiting on the resources `waiting` (described) that started `limit` seconds
    ago or more, else None."""
    if now - started <= limit:
        return None
    return f"Timed out waiting after {go_duration(limit)} for resources: [{', '.join(waiting)}]"


def go_duration(seconds: float) -> str:
    """Go's time.Duration string for whole and fractional seconds (`15m0s`, `1s`, `500ms`)."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"
