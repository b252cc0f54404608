"""Job (kapp's BatchV1Job): done when complete, failed when failed."""

from __future__ import annotations

from typing import Any

from kapply.apply.waiters.reading import as_int, conditions, status, text
from kapply.apply.waiters.state import State, failed, ok, ongoing


def check(resource: dict[str, Any]) -> State:
    for cond in conditions(resource):
        if text(cond, "status") != "True":
            continue
        match text(cond, "type"):
            case "Complete":
                return ok("Completed")
            case "Failed":
                return failed(f"Failed with reason {text(cond, 'reason')}: {text(cond, 'message')}")
    found = status(resource)
    active, failures, successes = (as_int(found.get(key)) for key in ("active", "failed", "succeeded"))
    return ongoing(f"Waiting to complete ({active} active, {failures} failed, {successes} succeeded)")
