"""The Service waiter."""

from kapply.apply.waiters import ok, ongoing, wait_state
from tests.unit.waiter_objects import obj


def service(spec, status=None):
    return obj("v1", "Service", "web", generation=None, spec=spec, status=status or {"loadBalancer": {}})


def test_cluster_ip_service_is_ok_once_it_has_an_ip():
    assert wait_state(service({"type": "ClusterIP", "clusterIP": "10.96.12.4"})) == ok()
    assert wait_state(service({"type": "ClusterIP", "clusterIP": ""})) == ongoing("ClusterIP is empty")


def test_headless_and_external_name_services_are_ok():
    assert wait_state(service({"type": "ClusterIP", "clusterIP": "None"})) == ok()
    assert wait_state(service({"type": "ExternalName", "externalName": "example.com"})) == ok("External service")


def test_load_balancer_service_waits_for_an_ingress():
    spec = {"type": "LoadBalancer", "clusterIP": "10.96.12.4"}
    assert wait_state(service(spec)) == ongoing("Load balancer ingress is empty")
    assert wait_state(service(spec, {"loadBalancer": {"ingress": [{"ip": "172.18.0.5"}]}})) == ok()
