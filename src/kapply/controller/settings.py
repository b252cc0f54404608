"""The controller's settings, from `kapply controller`'s flags: sync periods, how long ghost diffs stay listed, how
often a long deploy reports its progress, whether Apps may fetch from the controller's own disk, and whether they may
pull from registries on the controller's machine over plain http."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Settings:
    default_sync_period: float = 30.0
    min_sync_period: float = 30.0  # kapp-controller's appMinimumSyncPeriod; lower it for tests
    # A ghost diff stays in status.ghostDiffs until this many syncs in a row passed without it, so that a field an
    # HPA rewrites every few minutes stays visible between its recurrences.
    ghost_quiet_syncs: int = 10
    progress_interval: float = 10.0  # seconds between status updates of a running deploy's output
    # `file://` git URLs read repositories from the controller's own disk: refused unless allowed (tests allow them).
    allow_file_urls: bool = False
    # Registries are reached over https; with this, those on localhost, 127.0.0.1 or [::1] over plain http (tests run
    # one there). Plain http to any other registry is refused all the same.
    allow_plain_http_registries: bool = False
