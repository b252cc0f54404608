"""ReplicaSet, beyond kapp (which has no ReplicaSet waiter): done when its replicas are ready and available."""

from __future__ import annotations

from typing import Any

from kapply.apply.waiters.reading import as_int, observed, status
from kapply.apply.waiters.state import State, ok, ongoing


def check(resource: dict[str, Any]) -> State:
    if (waiting := observed(resource)) is not None:
        return waiting
    wanted = as_int((resource.get("spec") or {}).get("replicas", 1))
    found = status(resource)
    ready, available = as_int(found.get("readyReplicas")), as_int(found.get("availableReplicas"))
    if ready < wanted:
        return ongoing(f"Waiting for {wanted - ready} replicas to be ready")
    if available < wanted:
        return ongoing(f"Waiting for {wanted - available} replicas to be available")
    return ok()
