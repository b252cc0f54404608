"""The packaging controllers' settings, from `kapply controller`'s flags."""

from __future__ import annotations

from dataclasses import dataclass

from kapply.packaging import names

INSTALL_DEFAULT_SYNC_PERIOD = 600.0  # kapp-controller's packageInstallDefaultSyncPeriod (10m)
MINIMUM_SYNC_PERIOD = 30.0  # kapp-controller raises a lower packageInstallDefaultSyncPeriod to this


@dataclass(frozen=True, slots=True)
class PackagingSettings:
    # The syncPeriod of the App a PackageInstall without one creates (`--package-install-default-sync-period`).
    install_default_sync_period: float = INSTALL_DEFAULT_SYNC_PERIOD
    # Packages and PackageMetadatas here are visible from every namespace (`--packaging-global-namespace`).
    global_namespace: str = names.DEFAULT_GLOBAL_NAMESPACE


def from_flags(enabled: bool, install_default_sync_period: float, global_namespace: str) -> PackagingSettings | None:
    """The settings `kapply controller`'s flags give: None with `--packaging=false`; a default sync period below 30 s
    raised to it, as kapp-controller raises its packageInstallDefaultSyncPeriod."""
    if not enabled:
        return None
    return PackagingSettings(max(install_default_sync_period, MINIMUM_SYNC_PERIOD), global_namespace)
