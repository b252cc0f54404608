"""The Job waiter."""

from kapply.apply.waiters import failed, ok, ongoing, wait_state
from tests.unit.waiter_objects import cond, obj


def job(**status):
    return obj("batch/v1", "Job", "migrate", status={"startTime": "2024-03-28T10:00:00Z", **status})


def test_running_job_reports_its_counts():
    assert wait_state(job(active=1)) == ongoing("Waiting to complete (1 active, 0 failed, 0 succeeded)")
    assert wait_state(job(active=1, failed=2)) == ongoing("Waiting to complete (1 active, 2 failed, 0 succeeded)")


def test_completed_job_is_ok():
    state = wait_state(job(succeeded=1, conditions=[cond("Complete", "True")], completionTime="2024-03-28T10:01:00Z"))
    assert state == ok("Completed")


def test_failed_job_fails_with_its_reason():
    conditions = [cond("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]
    state = wait_state(job(failed=7, conditions=conditions))
    assert state == failed("Failed with reason BackoffLimitExceeded: Job has reached the specified backoff limit")
