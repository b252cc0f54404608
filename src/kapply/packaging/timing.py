"""When to try a failed PackageRepository or PackageInstall again: kapp-controller's 2^F seconds after F consecutive
failures, at most the sync period (kapply.controller.timing, for a period that is the object's own)."""

from __future__ import annotations

from kapply.controller import timing
from kapply.controller.settings import Settings


def retry_delay(failures: int, period: float) -> float:
    return timing.after_failure(failures, None, Settings(default_sync_period=period, min_sync_period=period))
