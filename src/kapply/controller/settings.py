"""The controller's settings, from `kapply controller`'s flags: sync periods, the drift policy of Apps that set none
and how drift is watched, how long ghost diffs stay listed, how often a long deploy reports its progress, whether
Apps may fetch from the controller's own disk, whether they may pull from registries on the controller's machine over
plain http, how long and how slowly a source may download, and the names it serves its APIs under."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kapply.api import DriftPolicy
from kapply.controller.vocabulary import KAPPLY, Vocabulary
from kapply.oci.transfer import MIN_BYTES_PER_SECOND, WINDOW

FETCH_TIMEOUT = 120.0  # seconds


class DriftWatching(StrEnum):
    """`--drift-watches`: how soon the controller acts on a change others made to an App's objects."""

    # Each type Apps deploy is watched: a change others made reconciles its App within seconds (main.DEBOUNCE).
    ON = "on"
    # The watches are kept, so that a sync of an unchanged App still plans from memory (cache.py) and costs the API
    # server no reads, but a change others made waits for the App's next sync.
    SYNC_PERIOD = "sync-period"
    # No watches of Apps' objects at all (kapp-controller's way): drift is found at the next sync, which reads the
    # objects from the API server; the controller keeps less in memory and holds fewer watches.
    OFF = "off"


@dataclass(frozen=True, slots=True)
class Settings:
    default_sync_period: float = 30.0
    min_sync_period: float = 30.0  # kapp-controller's appMinimumSyncPeriod; lower it for tests
    # A ghost diff stays in status.ghostDiffs until this many syncs in a row passed without it, so that a field an
    # HPA rewrites every few minutes stays visible between its recurrences.
    ghost_quiet_syncs: int = 10
    # The drift policy of an App whose spec sets none (`--default-drift-policy`; a PackageInstall's App has the
    # PackageInstall's, else its Package's, else this), and when drift is acted on (`--drift-watches`).
    default_drift_policy: DriftPolicy = DriftPolicy.ENFORCE
    drift_watches: DriftWatching = DriftWatching.ON
    progress_interval: float = 10.0  # seconds between status updates of a running deploy's output
    # `file://` git URLs read repositories from the controller's own disk: refused unless allowed (tests allow them).
    allow_file_urls: bool = False
    # Registries are reached over https; with this, those on localhost, 127.0.0.1 or [::1] over plain http (tests run
    # one there). Plain http to any other registry is refused all the same.
    allow_plain_http_registries: bool = False
    # A slow source is bounded twice (fetch.FetchPolicy): a download (an http source, an image or bundle pull) ends
    # within `fetch_timeout` seconds, and any download, git's over http included, is stopped when it brings fewer than
    # `fetch_min_rate` bytes a second over `fetch_min_rate_window` seconds (0: no minimum).
    fetch_timeout: float = FETCH_TIMEOUT
    fetch_min_rate: int = MIN_BYTES_PER_SECOND
    fetch_min_rate_window: float = WINDOW
    # The sandbox every fetch and template stage runs in (sandbox.py): heap bytes and CPU seconds of each of its
    # processes, and seconds for the whole stage.
    # Sources on the controller's own machine (loopback), link-local ones (a cloud's metadata service) and the API
    # server's addresses are refused unless allowed (tests serve their sources on loopback).
    allow_local_sources: bool = False
    api_server_addresses: tuple[str, ...] = ()  # the API server's addresses, which sources may never name
    sandbox_memory: int = 1 << 30
    sandbox_cpu: int = 120
    sandbox_timeout: float = 300.0
    # The API groups, finalizers and global namespace the controller serves (`--api-groups`): kapply's, or
    # kapp-controller's. Every part of the controller takes them from here.
    vocabulary: Vocabulary = KAPPLY
