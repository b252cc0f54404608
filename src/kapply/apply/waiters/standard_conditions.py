"""Beyond kapp: kstatus' reading of `Ready`, `Failed` and `Stalled` conditions (as Flux reads them), for resources
with no specific waiter and no wait rule (custom resources of operators that follow the convention)."""

from __future__ import annotations

from typing import Any

from kapply.apply.waiters.reading import conditions, observed, status, text
from kapply.apply.waiters.state import State, failed, ok, ongoing

TYPES = frozenset({"Ready", "Failed", "Stalled"})


def applies(resource: dict[str, Any]) -> bool:
    """Whether the resource has any of the standard conditions."""
    return any(c.get("type") in TYPES for c in conditions(resource))


def check(resource: dict[str, Any]) -> State:
    if "observedGeneration" in status(resource) and (waiting := observed(resource)) is not None:
        return waiting
    by_type = {c.get("type"): c for c in conditions(resource)}
    for failing in ("Failed", "Stalled"):
        condition = by_type.get(failing)
        if condition and condition.get("status") == "True":
            return failed(
                f"Encountered failure condition {failing} == True: {text(condition, 'reason')} "
                f"(message: {text(condition, 'message')})"
            )
    ready = by_type.get("Ready")
    if ready is None:
        return ok()
    if ready.get("status") == "True":
        return ok()
    return ongoing(
        f"Condition Ready is not True ({text(ready, 'status')}): {text(ready, 'reason')} "
        f"(message: {text(ready, 'message')})"
    )
