"""A resource being deleted (kapp's DeletingResource): waited on until it is gone, whatever its kind."""

from __future__ import annotations

from typing import Any

from kapply import objects
from kapply.apply.waiters.state import State, ongoing


def check(resource: dict[str, Any]) -> State:
    finalizers = objects.metadata(resource).get("finalizers") or []
    if finalizers:
        return ongoing(f"Waiting on finalizers: {', '.join(finalizers)}")
    return ongoing("Deleting")
