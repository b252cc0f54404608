"""An App's status, shaped as kapp-controller's (conditions, friendlyDescription, usefulErrorMessage, consecutive
counters, fetch/template/deploy/inspect stages, observedGeneration) plus kapply's `drift` and `ghostDiffs`."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import yaml

from kapply.api import DriftPolicy, FieldPath, FieldReport, rebase_config
from kapply.controller.ghosts import Ghost, Key
from kapply.objects import Obj


class Condition(StrEnum):
    RECONCILING = "Reconciling"
    RECONCILE_SUCCEEDED = "ReconcileSucceeded"
    RECONCILE_FAILED = "ReconcileFailed"
    DELETING = "Deleting"
    DELETE_FAILED = "DeleteFailed"


_DESCRIPTIONS = {
    Condition.RECONCILING: "Reconciling",
    Condition.RECONCILE_SUCCEEDED: "Reconcile succeeded",
    Condition.RECONCILE_FAILED: "Reconcile failed",
    Condition.DELETING: "Deleting",
    Condition.DELETE_FAILED: "Delete failed",
}
MAX_OUTPUT = 10_000  # characters of a tool's output kept in status (kapp-controller keeps its tail too)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def trimmed(text: str) -> str:
    """Output as kapp-controller stores it: spaces before line ends removed, trimmed, the tail of a long one."""
    text = re.sub(r"[ \t]+\n", "\n", text).strip()
    return text if len(text) <= MAX_OUTPUT else "...\n" + text[-MAX_OUTPUT:]


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage's result (fetch, template, deploy, delete, inspect)."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""
    error: str = ""
    started_at: str = ""

    def to_status(self, *, with_stdout: bool = True, finished: bool | None = None) -> Obj:
        out: Obj = {"exitCode": self.exit_code, "updatedAt": now()}
        if self.started_at:
            out["startedAt"] = self.started_at
        if with_stdout and self.stdout:
            out["stdout"] = trimmed(self.stdout)
        if self.stderr:
            out["stderr"] = trimmed(self.stderr)
        if self.error:
            out["error"] = self.error
        if finished is not None:
            out["finished"] = finished
        return out


def with_condition(status: Obj, condition: Condition, message: str = "") -> Obj:
    """The status with its one condition replaced, and the matching friendlyDescription (kapp-controller keeps exactly
    one condition)."""
    out = deepcopy(status)
    entry: dict[str, Any] = {"type": condition.value, "status": "True"}
    if message:
        entry["message"] = message
    out["conditions"] = [entry]
    description = _DESCRIPTIONS[condition]
    out["friendlyDescription"] = f"{description}: {message}" if message else description
    return out


def reconciling(status: Obj) -> Obj:
    """The status of a pass under way (a new spec, a retry after a failure, or a deploy that applies something)."""
    return with_condition(status, Condition.RECONCILING)


def succeeded(status: Obj) -> Obj:
    out = with_condition(status, Condition.RECONCILE_SUCCEEDED)
    out["consecutiveReconcileSuccesses"] = int(status.get("consecutiveReconcileSuccesses") or 0) + 1
    out["consecutiveReconcileFailures"] = 0
    out.pop("usefulErrorMessage", None)
    return out


def failed(status: Obj, condition: Condition, message: str, useful: str) -> Obj:
    out = with_condition(status, condition, message)
    out["consecutiveReconcileFailures"] = int(status.get("consecutiveReconcileFailures") or 0) + 1
    out["consecutiveReconcileSuccesses"] = 0
    out["usefulErrorMessage"] = useful or message
    return out


def paused(status: Obj, generation: int) -> Obj:
    out = deepcopy(status)
    out["observedGeneration"] = generation
    out["friendlyDescription"] = "Canceled/paused"
    return out


def same_but_times(a: Obj, b: Obj) -> bool:
    """Whether two statuses differ only in their `updatedAt` and `startedAt` times: such a change is not written, so
    that an unchanged App's periodic sync writes nothing."""
    return bool(_without_times(a) == _without_times(b))


def _without_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if k not in ("updatedAt", "startedAt")}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def entry(item: FieldReport) -> Obj:
    """A reported field: resource, path, desired and live values (masked as kapp masks them), and who wrote it."""
    return {
        "resource": item.resource,
        "path": item.path,
        "desired": item.desired,
        "live": item.live,
        "writtenBy": item.written_by,
    }


def ghost_diffs(ghosts: Mapping[Key, Ghost], previous: Obj) -> Obj:
    """`status.ghostDiffs`: each field an update of an unchanged desired state set back, who keeps changing it, when
    it was first and last seen and how many syncs set it back, and the kapp Config whose rebase rules end them (empty
    when there are none). Entries read back after a restart keep the suggestion the status had."""
    if not ghosts:
        return {}
    by_resource: dict[str, tuple[Obj, list[FieldPath]]] = {}
    for ghost in ghosts.values():
        if ghost.source is not None:
            resource, path = ghost.source
            by_resource.setdefault(str(ghost.entry.get("resource")), (resource, []))[1].append(path)
    diffs = [g.to_status() for g in ghosts.values()]
    if not by_resource:  # all read back after a restart: the suggestion stays as it was
        return {"diffs": diffs, "suggestedConfig": str((previous.get("ghostDiffs") or {}).get("suggestedConfig") or "")}
    # Entries read back have their rules only in the previous suggestion.
    read_back = _suggested_rules(previous) if any(g.source is None for g in ghosts.values()) else []
    return {"diffs": diffs, "suggestedConfig": rebase_config(list(by_resource.values()), read_back)}


def _suggested_rules(status: Obj) -> list[Obj]:
    text = (status.get("ghostDiffs") or {}).get("suggestedConfig")
    try:
        config = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        return []
    rules = config.get("rebaseRules") if isinstance(config, dict) else None
    return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []


def drift(kept: Sequence[FieldReport], policy: DriftPolicy) -> Obj:
    """`status.drift`: the fields others changed that the drift policy (`preserve`, `warn`) leaves as they are."""
    if not kept:
        return {}
    return {"policy": policy.value, "fields": [entry(item) for item in kept]}


def with_reports(status: Obj, reports: Mapping[str, Obj]) -> Obj:
    """The status with kapply's reports set, each left out when empty."""
    out = {k: v for k, v in status.items() if k not in reports}
    out.update((k, v) for k, v in reports.items() if v)
    return out


def with_associated(status: Obj, associated: Obj) -> Obj:
    """The status with `deploy.kapp.associatedResources` set (kapp-controller's: the app's label, namespaces and
    kinds), when there is a deploy entry and something to set."""
    if not associated or not isinstance(status.get("deploy"), dict):
        return status
    return {**status, "deploy": {**status["deploy"], "kapp": {"associatedResources": associated}}}


def _listed(items: Sequence[FieldReport], limit: int = 5) -> str:
    shown = [f"{i.resource} {i.path} (written by {i.written_by})" for i in items[:limit]]
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return "; ".join(shown) + more


def drift_message(kept: Sequence[FieldReport], policy: DriftPolicy) -> str:
    return (
        f"{len(kept)} field(s) changed on the cluster, left as they are (drift policy {policy.value}): {_listed(kept)}"
    )
