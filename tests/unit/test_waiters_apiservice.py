"""The APIService waiter."""

from kapply.apply.waiters import ok, ongoing, wait_state
from tests.unit.waiter_objects import cond, obj


def api_service(version, available):
    status = {"conditions": [cond("Available", available, "FailedDiscoveryCheck", "failing or missing response")]}
    return obj(f"apiregistration.k8s.io/{version}", "APIService", "v1beta1.metrics.k8s.io", "", status=status)


def test_api_service_waits_until_available():
    assert wait_state(api_service("v1", "True")) == ok()
    assert wait_state(api_service("v1beta1", "False")) == ongoing("Condition Available is not True (False)")


def test_failing_api_service_can_be_ignored():
    state = wait_state(api_service("v1", "False"), ignore_failing_api_services=True)
    assert state == ok("Ignoring (Condition Available is not True (False))")
