"""A PackageInstall's status, as kapp-controller's reconciler/status.go writes it and its App's mirrored
(packageinstall.go), plus kapply's `ghostDiffs` and `drift` of the App, with the suggested rules as a ytt file that
the PackageInstall's overlay annotation adds to the package (`suggestedOverlay`).

kapp-controller's rules: one condition; a failure's friendlyDescription is `Reconcile failed: ` and the error's first
line (cut at 80 characters, `...` after a cut or before further lines); `Reconciling` and a success clear
usefulErrorMessage, a failure keeps it (a mirrored App failure sets it to the App's, with the condition message
`Error (see .status.usefulErrorMessage for details)`)."""

from __future__ import annotations

from copy import deepcopy

from kapply.controller.status import Condition
from kapply.objects import Obj
from kapply.packaging import names

MAX_DESCRIPTION = 80
GHOST_DIFFS_KEY = "kapply-ghost-diffs"  # the suffix of the overlay annotation the suggestion names
GHOST_DIFFS_FILE = "ghost-diffs.yml"


def short(error: str) -> str:
    """kapp-controller's friendly error: the first line, cut to 80 characters with `...`, or with `...` when more
    lines follow."""
    first, _, rest = error.partition("\n")
    if len(first) > MAX_DESCRIPTION:
        return first[:MAX_DESCRIPTION] + "..."
    return first + "..." if rest else first


def _condition(status: Obj, condition: Condition, message: str = "") -> Obj:
    out = deepcopy(status)
    entry: Obj = {"type": condition.value, "status": "True"}
    if message:
        entry["message"] = message
    out["conditions"] = [entry]
    return out


def reconciling(status: Obj, generation: int) -> Obj:
    out = _condition(status, Condition.RECONCILING)
    out["observedGeneration"] = generation
    out["friendlyDescription"] = "Reconciling"
    out.pop("usefulErrorMessage", None)
    return out


def succeeded(status: Obj) -> Obj:
    out = _condition(status, Condition.RECONCILE_SUCCEEDED)
    out["friendlyDescription"] = "Reconcile succeeded"
    out.pop("usefulErrorMessage", None)
    return out


def failed(status: Obj, error: str, useful: str | None = None) -> Obj:
    """A failed reconcile: the error as the condition's message; usefulErrorMessage set when given, else kept."""
    return _failure(status, Condition.RECONCILE_FAILED, "Reconcile failed", error, useful)


def deleting(status: Obj, generation: int) -> Obj:
    out = _condition(status, Condition.DELETING)
    out["observedGeneration"] = generation
    out["friendlyDescription"] = "Deleting"
    return out


def delete_failed(status: Obj, error: str, useful: str | None = None) -> Obj:
    """A failed delete, as `failed`."""
    return _failure(status, Condition.DELETE_FAILED, "Delete failed", error, useful)


def _failure(status: Obj, condition: Condition, friendly: str, error: str, useful: str | None) -> Obj:
    out = _condition(status, condition, error)
    out["friendlyDescription"] = f"{friendly}: {short(error)}"
    if useful is not None:
        out["usefulErrorMessage"] = useful
    return out


def app_condition(app: Obj) -> str:
    """The type of the App's condition ("" when it has none)."""
    conditions = (app.get("status") or {}).get("conditions") or []
    return str(conditions[0].get("type", "")) if conditions and isinstance(conditions[0], dict) else ""


def mirrored(status: Obj, app: Obj) -> Obj:
    """The PackageInstall's status after a reconcile that left its App as it was: the App's outcome (an App that has
    not yet seen its spec, or that has no condition, is still `Reconciling`)."""
    app_status: Obj = app.get("status") or {}
    generation = int(app["metadata"].get("generation") or 0)
    if app_status.get("observedGeneration") != generation:
        return status
    match app_condition(app):
        case Condition.RECONCILE_SUCCEEDED:
            return succeeded(status)
        case Condition.RECONCILE_FAILED:
            return failed(status, names.SEE_USEFUL_ERROR_MESSAGE, str(app_status.get("usefulErrorMessage", "")))
        case _:
            return status


def mirrored_deletion(status: Obj, app: Obj) -> Obj:
    """A deleting PackageInstall's status, from its App being deleted."""
    match app_condition(app):
        case Condition.DELETING:
            return _condition(status, Condition.DELETING) | {"friendlyDescription": "Deleting"}
        case Condition.DELETE_FAILED:
            app_status: Obj = app.get("status") or {}
            return delete_failed(status, names.SEE_USEFUL_ERROR_MESSAGE, str(app_status.get("usefulErrorMessage", "")))
        case _:
            return status


def suggested_overlay(config: str, namespace: str, name: str) -> str:
    """A ytt file adding the suggested kapp Config to the package's templated output: a plain YAML document in a ytt
    file is output as it is, next to the package's own, so the Config reaches the deploy and its rebase rules end the
    ghost diffs without changing the package. Comments are ytt's (`#!`): a `#` comment would fail ytt."""
    secret = f"{name}-ghost-diffs"
    key = f"{names.extension_keys(names.Extension.YTT_PATHS_FROM_SECRET_NAME)[0]}.{GHOST_DIFFS_KEY}"
    return (
        "#! kapply: the rebase rules that end the ghost diffs of this PackageInstall (status.ghostDiffs.diffs), as a\n"
        "#! ytt file of its package's first ytt step. Add it with:\n"
        f"#!   kubectl get packageinstall {name} -n {namespace} -o jsonpath='{{.status.ghostDiffs.suggestedOverlay}}'"
        f" > {GHOST_DIFFS_FILE}\n"
        f"#!   kubectl create secret generic {secret} -n {namespace} --from-file={GHOST_DIFFS_FILE}\n"
        f"#!   kubectl annotate packageinstall {name} -n {namespace} {key}={secret}\n"
        f"{config}"
    )


def _has_ytt_step(app: Obj) -> bool:
    steps = (app.get("spec") or {}).get("template") or []
    return any(isinstance(step, dict) and "ytt" in step for step in steps)


def with_app_reports(status: Obj, app: Obj | None) -> Obj:
    """The status with the App's `ghostDiffs` (and, when the package has a ytt step for it to go to, the suggested
    overlay), `drift` and `fieldOwners` (known owners and held fields); each left out when the App has none."""
    out = {k: v for k, v in status.items() if k not in ("ghostDiffs", "drift", "fieldOwners")}
    app_status: Obj = (app or {}).get("status") or {}
    ghosts = app_status.get("ghostDiffs")
    if isinstance(ghosts, dict) and ghosts.get("diffs") and app is not None:
        reported = {k: v for k, v in ghosts.items() if k in ("diffs", "suggestedConfig")}
        config = str(ghosts.get("suggestedConfig") or "")
        if config and _has_ytt_step(app):
            meta = app["metadata"]
            reported["suggestedOverlay"] = suggested_overlay(config, meta["namespace"], meta["name"])
        out["ghostDiffs"] = reported
    for key in ("drift", "fieldOwners"):
        if isinstance(reported_by_app := app_status.get(key), dict) and reported_by_app:
            out[key] = reported_by_app
    return out
