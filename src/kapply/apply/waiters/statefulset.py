"""StatefulSet (kapp's AppsV1StatefulSet): the replicas its update strategy updates are updated, then all are
ready, then those scaled away are deleted."""

from __future__ import annotations

from typing import Any

from kapply.apply.waiters.reading import as_int, observed, status
from kapply.apply.waiters.state import State, failed, ok, ongoing


def check(resource: dict[str, Any]) -> State:
    if (waiting := observed(resource)) is not None:
        return waiting
    spec = resource.get("spec") or {}
    replicas = spec.get("replicas")
    if not isinstance(replicas, int):
        return failed("Error: Failed to find spec.replicas")
    found = status(resource)
    to_update, clarification = replicas, ""
    partition = as_int(((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition"))
    if partition > 0:
        to_update -= partition
        clarification = f" (updating only {to_update} of {replicas} total)"
    not_updated = to_update - as_int(found.get("updatedReplicas"))
    if not_updated > 0:
        return ongoing(f"Waiting for {not_updated} replicas to be updated{clarification}")
    not_ready = replicas - as_int(found.get("readyReplicas"))
    if not_ready > 0:
        return ongoing(f"Waiting for {not_ready} replicas to be ready")
    not_deleted = as_int(found.get("replicas")) - replicas
    if not_deleted > 0:
        return ongoing(f"Waiting for {not_deleted} replicas to be deleted")
    return ok()
