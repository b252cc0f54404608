"""Beyond kapp: kstatus' standard conditions on resources no other waiter applies to."""

from kapply.apply.waiters import ok, wait_state
from tests.unit.waiter_objects import cond, obj


def test_custom_resource_without_a_wait_rule_follows_its_standard_conditions():
    """Beyond kapp (which is done at once here): kstatus' Ready / Failed / Stalled conditions."""
    not_ready = obj("stable.example.com/v1", "CronTab", status={"conditions": [cond("Ready", "False", "Broken")]})
    assert wait_state(not_ready).word == "ongoing"
    assert "Condition Ready is not True (False): Broken" in wait_state(not_ready).message
    ready = obj("stable.example.com/v1", "CronTab", status={"conditions": [cond("Ready", "True", "Done")]})
    assert wait_state(ready) == ok()
    stalled = obj("stable.example.com/v1", "CronTab", status={"conditions": [cond("Stalled", "True", "BadSpec")]})
    assert wait_state(stalled).word == "fail"
    other = obj("stable.example.com/v1", "CronTab", status={"conditions": [cond("Synced", "False", "x")]})
    assert wait_state(other) == ok()
