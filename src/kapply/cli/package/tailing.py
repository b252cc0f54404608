"""kctrl's status tailing (its AppStatusDiff): what changed between two statuses of an App (or a PackageRepository,
whose status has the same stages), as the lines kctrl prints (`Fetch started`, `Fetching` and the fetch output,
`Fetch succeeded`, `Template succeeded`, `Deploy started`, `Deploying` and the deploy output, then only its new lines,
`Deploy succeeded`; `Fetch failed`, `Template failed`, `Deploy failed` with the error output, `Delete ...` while
deleting). A stage is new when its `startedAt` or `updatedAt` changed."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import StrEnum

from kapply.objects import Obj


class Stage(StrEnum):
    FETCH = "fetch"
    TEMPLATE = "template"
    DEPLOY = "deploy"


@dataclass(frozen=True, slots=True)
class LogLine:
    message: str
    at: str  # the status's RFC 3339 time the line is about; "" for now
    block: str = ""  # output shown under the line, indented


@dataclass(frozen=True, slots=True)
class Progress:
    lines: tuple[LogLine, ...]
    deploy_output: str  # the deploy output shown so far (only its new lines are shown next time)
    ended: bool = False  # the reconcile ended, or a stage failed: kctrl's tail stops there
    error: str = ""  # how it failed (`Fetch failed`, `ReconcileFailed: <usefulErrorMessage>`), "" when it did not


def status_of(obj: Obj) -> Obj:
    """The object's status ({} when it has none)."""
    found = obj.get("status")
    return found if isinstance(found, dict) else {}


def observed(obj: Obj) -> bool:
    """Whether the status reports the current spec."""
    return bool(status_of(obj).get("observedGeneration") == obj["metadata"].get("generation"))


def condition(status: Obj) -> str:
    """The type of the status's condition (kapp-controller keeps one), "" when none."""
    conditions = status.get("conditions") or []
    found = next((c for c in conditions if isinstance(c, dict) and c.get("status") == "True"), None)
    return str(found.get("type", "")) if found else ""


def _stage(status: Obj, stage: Stage) -> Obj | None:
    found = status.get(stage.value)
    return found if isinstance(found, dict) else None


def _changed(old: Obj | None, new: Obj, field: str) -> bool:
    return old is None or old.get(field) != new.get(field)


def _errors(stage: Obj) -> str:
    return f"{stage.get('stderr', '')}\n{stage.get('error', '')}"


def _new_lines(seen: str, output: str) -> str:
    """The lines of `output` that `seen` does not have (kctrl shows a running deploy's output as it grows)."""
    old, new = seen.split("\n"), output.split("\n")
    opcodes = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    return "\n".join(line for tag, _, _, j1, j2 in opcodes if tag in ("insert", "replace") for line in new[j1:j2])


def progress(old: Obj, new: Obj, deploy_output: str, *, every_change: bool = False) -> Progress:
    """The lines for what changed from the `old` status to the `new` one; a failed stage ends them (kctrl stops
    there), and a reconcile that ended (ReconcileSucceeded, ReconcileFailed, DeleteFailed) is said once; with
    `every_change` (kctrl's App tail, told each change of the App, its status changed or not), whenever the new status
    reports it."""
    lines: list[LogLine] = []

    def failed(message: str, stage: Obj) -> Progress:
        lines.append(LogLine(message, str(stage.get("updatedAt", "")), _errors(stage)))
        return Progress(tuple(lines), deploy_output, True, message)

    fetch, old_fetch = _stage(new, Stage.FETCH), _stage(old, Stage.FETCH)
    if fetch is not None:
        started, updated = str(fetch.get("startedAt", "")), str(fetch.get("updatedAt", ""))
        # a new fetch seen for the first time: kctrl's watch sees it start even when a poll sees it ended
        if old_fetch is None or _changed(old_fetch, fetch, "startedAt"):
            lines.append(LogLine("Fetch started", started))
        if _changed(old_fetch, fetch, "updatedAt"):
            if fetch.get("exitCode", 0) != 0 and updated >= started:
                return failed("Fetch failed", fetch)
            lines.append(LogLine("Fetching", updated, str(fetch.get("stdout", ""))))
            lines.append(LogLine("Fetch succeeded", updated))
    template = _stage(new, Stage.TEMPLATE)
    if template is not None and _changed(_stage(old, Stage.TEMPLATE), template, "updatedAt"):
        if template.get("exitCode", 0) != 0:
            return failed("Template failed", template)
        lines.append(LogLine("Template succeeded", str(template.get("updatedAt", ""))))
    deploy, old_deploy = _stage(new, Stage.DEPLOY), _stage(old, Stage.DEPLOY)
    if deploy is not None:
        operation = "Delete" if condition(new) == "Deleting" else "Deploy"
        if _changed(old_deploy, deploy, "startedAt"):
            lines.append(LogLine(f"{operation} started", str(deploy.get("startedAt", ""))))
        if _changed(old_deploy, deploy, "updatedAt"):
            if deploy.get("exitCode", 0) != 0 and deploy.get("finished"):
                return failed(f"{operation} failed", deploy)
            output, at = str(deploy.get("stdout", "")), str(deploy.get("updatedAt", ""))
            if not deploy_output:
                lines.append(LogLine("Deploying" if operation == "Deploy" else "Deleting", at, output))
            elif new_lines := _new_lines(deploy_output, output):
                lines.append(LogLine("", at, new_lines))
            deploy_output = output
    ended = condition(new)
    error = f"{ended}: {new.get('usefulErrorMessage', '')}" if ended in ("ReconcileFailed", "DeleteFailed") else ""
    if lines or ended != condition(old) or every_change:
        if ended == "ReconcileSucceeded":
            lines.append(LogLine("Deploy succeeded", str((deploy or {}).get("updatedAt", ""))))
        elif error:
            lines.append(LogLine(error, ""))
    return Progress(tuple(lines), deploy_output, ended == "ReconcileSucceeded" or bool(error), error)
