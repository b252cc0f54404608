"""PersistentVolumeClaim, beyond kapp: a lost claim fails. A pending one is not waited on: with a
WaitForFirstConsumer storage class it binds only once a Pod uses it, and that Pod's workload is ordered after the
claim."""

from __future__ import annotations

from typing import Any

from kapply.apply.waiters.reading import status, text
from kapply.apply.waiters.state import State, failed, ok


def check(resource: dict[str, Any]) -> State:
    phase = text(status(resource), "phase")
    if phase == "Lost":
        return failed("Phase is Lost")
    if phase == "Bound":
        return ok()
    return ok(f"Phase is {phase or 'Pending'} (not waited on: binding may wait for a Pod)")
