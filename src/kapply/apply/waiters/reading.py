"""Reading objects the way Go's typed structs do (a missing or mistyped field is its zero value), and the checks
several waiters share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kapply import objects
from kapply.apply.waiters.state import State, ok, ongoing


def status(resource: dict[str, Any]) -> dict[str, Any]:
    return resource.get("status") or {}


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def text(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def generation(resource: dict[str, Any]) -> int:
    return as_int(objects.metadata(resource).get("generation"))


def observed(resource: dict[str, Any]) -> State | None:
    """Not done while the controller has not seen the latest spec."""
    latest = generation(resource)
    if latest != as_int(status(resource).get("observedGeneration")):
        return ongoing(f"Waiting for generation {latest} to be observed")
    return None


def conditions(resource: dict[str, Any]) -> list[dict[str, Any]]:
    found = status(resource).get("conditions")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def selected_true(resource: dict[str, Any], types: Sequence[str]) -> State:
    """Done when each condition type is present with status True (the last of a repeated type counts)."""
    statuses = {
        c["type"]: c["status"]
        for c in conditions(resource)
        if isinstance(c.get("type"), str) and isinstance(c.get("status"), str)
    }
    for type_ in types:
        if type_ not in statuses:
            return ongoing(f"Condition {type_} is not set")
        if statuses[type_] != "True":
            return ongoing(f"Condition {type_} is not True ({statuses[type_]})")
    return ok()


def is_deleting(resource: dict[str, Any]) -> bool:
    return bool(objects.metadata(resource).get("deletionTimestamp"))
