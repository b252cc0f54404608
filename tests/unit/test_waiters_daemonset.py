"""The DaemonSet waiter."""

from kapply.apply.waiters import ok, ongoing, wait_state
from tests.unit.waiter_objects import obj


def daemon_set(**status):
    base = {
        "observedGeneration": 1,
        "currentNumberScheduled": 3,
        "desiredNumberScheduled": 3,
        "numberReady": 3,
        "numberAvailable": 3,
        "updatedNumberScheduled": 3,
        "numberMisscheduled": 0,
    }
    return obj("apps/v1", "DaemonSet", "agent", status=base | status)


def test_rolled_out_daemon_set_is_ok():
    assert wait_state(daemon_set()) == ok()


def test_daemon_set_waits_for_updated_pods_to_be_scheduled_then_available():
    assert wait_state(daemon_set(observedGeneration=0)) == ongoing("Waiting for generation 1 to be observed")
    assert wait_state(daemon_set(updatedNumberScheduled=1)) == ongoing("Waiting for 2 updated pods to be scheduled")
    state = wait_state(daemon_set(numberAvailable=2, numberUnavailable=1))
    assert state == ongoing("Waiting for 1 unavailable pods")
