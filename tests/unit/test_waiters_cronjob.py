"""The CronJob waiter."""

from kapply.apply.waiters import ok, wait_state
from tests.unit.waiter_objects import obj


def test_cron_job_of_any_version_is_ok_at_once():
    for version in ("batch/v1", "batch/v1beta1"):
        assert wait_state(obj(version, "CronJob", "nightly", status={"active": [{"name": "nightly-1"}]})) == ok()
