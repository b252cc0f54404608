"""When to reconcile an App again (kapp-controller's reconcile_timer.go): after a success, its sync period; after a
failure, 2^F seconds for F consecutive failures, capped at the sync period."""

from __future__ import annotations

from kapply.controller.settings import Settings
from kapply.controller.spec import AppSpec


def sync_period(spec: AppSpec | None, settings: Settings) -> float:
    """The App's `syncPeriod` (else the default), raised to the minimum the controller allows."""
    period = spec.sync_period if spec and spec.sync_period is not None else settings.default_sync_period
    return max(period, settings.min_sync_period)


def after_failure(failures: int, spec: AppSpec | None, settings: Settings) -> float:
    """The delay before the next try after `failures` consecutive failures (this one included): 2, 4, 8 ... seconds,
    never longer than the sync period."""
    return float(min(2 ** min(max(failures, 1), 29), sync_period(spec, settings)))
