"""Pod (kapp's CoreV1Pod): by phase; a pending or not-ready Pod says why."""

from __future__ import annotations

from typing import Any

from kapply.apply.waiters.reading import conditions, selected_true, status, text
from kapply.apply.waiters.state import State, failed, ok, ongoing


def check(resource: dict[str, Any]) -> State:
    match status(resource).get("phase"):
        case "Pending":
            reason = _pending_reason(resource)
            return ongoing(f"Pending: {reason}" if reason else "Pending")
        case "Running":
            state = selected_true(resource, ("Initialized", "Ready", "PodScheduled"))
            reason = _pending_reason(resource) if not state.done else ""
            # Beyond kapp: say why a running Pod is not ready (CrashLoopBackOff, ...).
            return ongoing(f"{state.message}: {reason}") if reason else state
        case "Succeeded":
            return ok()
        case "Failed":
            return failed("Phase is failed")
        case "Unknown":
            return failed("Phase is unknown")
    return ongoing("Undetermined phase")


def _pending_reason(resource: dict[str, Any]) -> str:
    """The first waiting container's reason (init containers first), else why the Pod is unschedulable."""
    found = status(resource)
    statuses = (found.get("initContainerStatuses") or []) + (found.get("containerStatuses") or [])
    for container in statuses:
        waiting = (container.get("state") or {}).get("waiting")
        if isinstance(waiting, dict):
            return _with_message(text(waiting, "reason"), text(waiting, "message"))
    for cond in conditions(resource):
        if text(cond, "type") == "PodScheduled" and text(cond, "reason") == "Unschedulable":
            return _with_message("Unschedulable", text(cond, "message"))
    return ""


def _with_message(reason: str, message: str) -> str:
    return f"{reason} (message: {message})" if message else reason
