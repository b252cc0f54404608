"""The Namespace waiter (beyond kapp)."""

from kapply.apply.waiters import ok, ongoing, wait_state
from tests.unit.waiter_objects import obj


def test_namespace_waits_while_terminating():
    assert wait_state(obj("v1", "Namespace", status={"phase": "Active"})) == ok()
    assert wait_state(obj("v1", "Namespace", status={"phase": "Terminating"})) == ongoing("Phase is Terminating")
