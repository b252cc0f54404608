"""The PersistentVolumeClaim waiter (beyond kapp)."""

from kapply.apply.waiters import failed, ok, wait_state
from tests.unit.waiter_objects import obj


def test_claims_fail_when_lost_and_are_not_waited_on_while_pending():
    assert wait_state(obj("v1", "PersistentVolumeClaim", status={"phase": "Bound"})) == ok()
    assert wait_state(obj("v1", "PersistentVolumeClaim", status={"phase": "Lost"})) == failed("Phase is Lost")
    assert wait_state(obj("v1", "PersistentVolumeClaim", status={"phase": "Pending"})).done
