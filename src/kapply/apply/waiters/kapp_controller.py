"""kapp-controller's App, PackageInstall and PackageRepository (kapp's KappctrlK14sIoV1alpha1App and its packaging
twins)."""

from __future__ import annotations

from typing import Any

from kapply.apply.waiters import deleting
from kapply.apply.waiters.reading import conditions, is_deleting, observed, status, text
from kapply.apply.waiters.state import State, failed, ok, ongoing

KINDS = frozenset(
    {
        ("kappctrl.k14s.io/v1alpha1", "App"),
        ("packaging.carvel.dev/v1alpha1", "PackageInstall"),
        ("packaging.carvel.dev/v1alpha1", "PackageRepository"),
    }
)


def check(resource: dict[str, Any]) -> State:
    if (waiting := observed(resource)) is not None:
        return waiting
    useful_error = text(status(resource), "usefulErrorMessage")
    for cond in conditions(resource):
        if text(cond, "status") != "True":
            continue
        error = useful_error or text(cond, "message")
        match text(cond, "type"):
            case "Reconciling":
                return ongoing("Reconciling")
            case "ReconcileFailed":
                return failed(f"Reconcile failed: {text(cond, 'reason')} (message: {error})")
            case "DeleteFailed":
                return failed(f"Delete failed: {text(cond, 'reason')} (message: {error})")
    if is_deleting(resource):
        return deleting.check(resource)
    return ok()
