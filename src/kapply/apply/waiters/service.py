"""Service (kapp's CoreV1Service): done once it has a cluster IP, and a load balancer its ingress."""

from __future__ import annotations

from typing import Any

from kapply.apply.waiters.reading import status, text
from kapply.apply.waiters.state import State, ok, ongoing


def check(resource: dict[str, Any]) -> State:
    spec = resource.get("spec") or {}
    service_type = text(spec, "type")
    if service_type == "ExternalName":
        return ok("External service")
    if not text(spec, "clusterIP"):
        return ongoing("ClusterIP is empty")
    ingress = (status(resource).get("loadBalancer") or {}).get("ingress")
    if service_type == "LoadBalancer" and not ingress:
        return ongoing("Load balancer ingress is empty")
    return ok()
