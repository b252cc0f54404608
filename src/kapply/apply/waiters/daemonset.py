"""DaemonSet (kapp's AppsV1DaemonSet): done when every updated Pod is scheduled and available."""

from __future__ import annotations

from typing import Any

from kapply.apply.waiters.reading import as_int, observed, status
from kapply.apply.waiters.state import State, ok, ongoing


def check(resource: dict[str, Any]) -> State:
    if (waiting := observed(resource)) is not None:
        return waiting
    found = status(resource)
    # Updated pods must be scheduled before the unavailable count means anything.
    unscheduled = as_int(found.get("desiredNumberScheduled")) - as_int(found.get("updatedNumberScheduled"))
    if unscheduled > 0:
        return ongoing(f"Waiting for {unscheduled} updated pods to be scheduled")
    unavailable = as_int(found.get("numberUnavailable"))
    if unavailable > 0:
        return ongoing(f"Waiting for {unavailable} unavailable pods")
    return ok()
