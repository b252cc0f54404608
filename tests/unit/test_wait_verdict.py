"""What a poll of a waited change means to the apply loop, and the two timeouts, as kapp words them."""

from kapply.apply.verdict import (
    DONE,
    UNBLOCKED,
    WAITING,
    Outcome,
    Verdict,
    go_duration,
    resource_timed_out,
    round_timed_out,
    sort_out,
    verdict,
)
from kapply.apply.waiters import Convergence, failed, ok, ongoing

WEB = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"}}
DESCRIPTION = "reconcile deployment/web (apps/v1) namespace: ns"


def poll(state, error="", *, unblocked_before=False):
    return verdict(Convergence(WEB, state, state, error=error), DESCRIPTION, unblocked_before=unblocked_before)


def test_a_successful_resource_is_done():
    assert poll(ok("Completed")) == DONE


def test_an_error_fails_the_change_without_counting_it_done():
    found = poll(ongoing(), "Getting resource deployment/web: not found")
    assert found == Verdict(
        Outcome.FAILED, f"waiting on {DESCRIPTION}: Errored: Getting resource deployment/web: not found"
    )
    assert not found.counted


def test_an_error_wins_over_a_finished_state():
    assert poll(ok(), "bad annotation").message == f"waiting on {DESCRIPTION}: Errored: bad annotation"


def test_finishing_unsuccessfully_fails_the_change_and_counts_it_done():
    found = poll(failed("Deployment is not progressing"))
    assert found == Verdict(
        Outcome.FAILED, f"waiting on {DESCRIPTION}: Finished unsuccessfully (Deployment is not progressing)", True
    )


def test_a_resource_that_unblocks_does_so_once():
    unblocking = ongoing("Allowing blocked changes to proceed", unblock=True)
    assert poll(unblocking) == UNBLOCKED
    assert poll(unblocking, unblocked_before=True) == WAITING


def test_an_ongoing_resource_is_waited_on():
    assert poll(ongoing("Waiting for 1 unavailable replicas")) == WAITING


def test_sort_out_splits_the_changes_by_outcome():
    failure = Verdict(Outcome.FAILED, "x", True)
    assert sort_out({0: DONE, 1: WAITING, 2: UNBLOCKED, 3: failure, 4: DONE}) == ({0, 4}, {2}, {3: failure})


def test_a_resource_timeout_fails_only_after_its_limit():
    assert resource_timed_out(DESCRIPTION, applied_at=10, now=10.5, limit=0.5) is None
    assert resource_timed_out(DESCRIPTION, applied_at=10, now=10.6, limit=0.5) == Verdict(
        Outcome.FAILED, f"waiting on {DESCRIPTION}: Errored: Resource timed out waiting after 500ms"
    )


def test_a_poll_after_the_resource_timeout_fails_even_a_finished_resource_as_kapp():
    """kapp checks the deadline before whether the resource is done; only an error of the poll itself comes first."""
    overdue = resource_timed_out(DESCRIPTION, applied_at=0, now=1.1, limit=1)
    assert overdue is not None
    for state in (ok("Completed"), failed("not progressing"), ongoing("x", unblock=True), ongoing()):
        found = verdict(Convergence(WEB, state, state), DESCRIPTION, unblocked_before=False, overdue=overdue)
        assert found == overdue and found.message.endswith("Errored: Resource timed out waiting after 1s")
        assert not found.counted
    errored = verdict(Convergence(WEB, ok(), ok(), error="bad"), DESCRIPTION, unblocked_before=False, overdue=overdue)
    assert errored.message == f"waiting on {DESCRIPTION}: Errored: bad"


def test_no_resource_timeout_by_default():
    assert resource_timed_out(DESCRIPTION, applied_at=0, now=1e9, limit=0) is None


def test_the_round_times_out_after_its_limit_naming_what_it_waited_for():
    waiting = ["deployment/web (apps/v1) namespace: ns", "job/migrate (batch/v1) namespace: ns"]
    assert round_timed_out(waiting, started=0, now=900, limit=900) is None
    assert round_timed_out(waiting, started=0, now=900.1, limit=900) == (
        "Timed out waiting after 15m0s for resources: "
        "[deployment/web (apps/v1) namespace: ns, job/migrate (batch/v1) namespace: ns]"
    )


def test_durations_read_as_go_prints_them():
    assert [go_duration(s) for s in (0.2, 1, 59, 60, 61.5, 900, 3600, 3725)] == [
        "200ms",
        "1s",
        "59s",
        "1m0s",
        "1m1s",
        "15m0s",
        "1h0m0s",
        "1h2m5s",
    ]
