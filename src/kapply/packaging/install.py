"""Reconciling one PackageInstall, as kapp-controller's packageinstall.go: select the Package (selection.py), refuse a
downgrade, make its App (install_app.py) exist as the PackageInstall wants it, and mirror the App's outcome
(install_status.py); a PackageInstall being deleted deletes its App and waits for it to go.

A PackageInstall is reconciled when its spec or annotations change, when its App's status changes or the App goes, and
when a Package it could select appears, changes or goes (triggers.py), and, beyond kapp-controller, once per sync
period of its App (a pass that changes nothing writes nothing), so that an event missed during a watch gap is caught
up. A failing pass is tried again after 2, 4, 8 ... seconds, at most the App's sync period.

Beyond kapp-controller: after the pass changed the App's spec the PackageInstall says `Reconciling` (kapp-controller
shows the App's previous outcome until the App reconciles, kapp-controller#341), so `kubectl wait
--for=condition=ReconcileSucceeded` waits for the new spec; the App's ghost diffs and drift are shown on the
PackageInstall; only an App this PackageInstall controls is updated or deleted; a successful pass with a (version,
values) pair new to the install keeps a revision of it, for `kapply package installed rollback` (revisions.py).
"""

from __future__ import annotations

import logging

from kapply.api import AsyncClient
from kapply.controller.spec import SpecError, parsed
from kapply.controller.status import same_but_times
from kapply.controller.vocabulary import Vocabulary
from kapply.objects import Obj, has_finalizer
from kapply.packaging import install_status, names, revisions, store
from kapply.packaging.failures import is_conflict, unexpected
from kapply.packaging.install_app import OwnedByOtherError, deleting_app, desired_app, owned_by
from kapply.packaging.selection import choose, kubernetes_version, needs_kubernetes_version, visible_packages
from kapply.packaging.settings import PackagingSettings
from kapply.packaging.spec import (
    PackageInstallSpec,
    PackageSpec,
    package_selection,
    parse_package,
    parse_package_install,
)
from kapply.packaging.timing import retry_delay
from kapply.values import parse_duration
from kapply.versions import SelectionError, downgrade_refusal

_log = logging.getLogger("kapply.controller")
KIND = names.PACKAGE_INSTALL.kind
# Seconds between looks at a deleting PackageInstall's App, besides its events (one missed during a watch gap would
# otherwise keep the PackageInstall's finalizer).
DELETE_RECHECK = 10.0
Key = tuple[str, str]


class InstallReconciler:
    def __init__(
        self,
        api: AsyncClient,
        settings: PackagingSettings,
        vocabulary: Vocabulary,
        keeper: revisions.Keeper | None = None,
    ) -> None:
        self.api = api
        self.keeper = keeper  # keeps the installs' revisions (revisions.py); None: none kept (`kapply dev`)
        self.settings = settings
        self.vocabulary = vocabulary  # the controller's (its Settings')
        self._installs, self._apps = vocabulary.install.rtype, vocabulary.app.rtype
        self._failures: dict[Key, int] = {}  # consecutive failed passes (the status has no count)

    def forget(self, key: Key) -> None:
        self._failures.pop(key, None)
        if self.keeper is not None:
            self.keeper.forget(key)

    async def reconcile(self, namespace: str, name: str) -> float | None:
        """One pass; returns when to come back (seconds), None when there is nothing to come back for. Whatever
        fails, the status says so (failures.py)."""
        install = await store.get(self.api.cluster, self._installs, namespace, name)
        if install is None:
            self.forget((namespace, name))
            return None
        try:
            return await self._reconcile(install)
        except Exception as e:
            if is_conflict(e):
                raise
            _log.exception("%s %s/%s: reconcile failed unexpectedly", KIND, namespace, name)
            generation = int(install["metadata"].get("generation") or 0)
            status = install_status.reconciling(install.get("status") or {}, generation)
            return await self._fail(install, status, unexpected(e), None)

    async def _reconcile(self, install: Obj) -> float | None:
        spec, problem = parsed(parse_package_install, install)
        if install["metadata"].get("deletionTimestamp"):
            return await self._delete(install, spec)
        await self.api.cluster.add_finalizer(self._installs, install, self.vocabulary.install_finalizer)
        generation = int(install["metadata"].get("generation") or 0)
        status = install_status.reconciling(install.get("status") or {}, generation)
        if spec is None:
            return await self._fail(install, status, problem, None)
        try:
            return await self._install(install, spec, status)
        except (SpecError, SelectionError, OwnedByOtherError) as e:
            return await self._fail(install, status, str(e), spec)

    async def _install(self, install: Obj, spec: PackageInstallSpec, status: Obj) -> float | None:
        """Select, refuse a downgrade, run as the App, report the App's outcome."""
        package = await self._select(install, spec)
        status["version"] = package.version
        last = str(status.get("lastAttemptedVersion") or "")
        refusal = None if spec.extensions.downgradable else downgrade_refusal(package.version, last)
        if refusal is not None:  # nothing to do until the Packages or the PackageInstall change
            await self._write(install, install_status.failed(status, names.SEE_USEFUL_ERROR_MESSAGE, refusal))
            meta = install["metadata"]
            _log.warning("%s %s/%s: %s", KIND, meta["namespace"], meta["name"], refusal.splitlines()[0])
            return None
        status["lastAttemptedVersion"] = package.version
        app, changed = await self._run_as_app(install, spec, package)
        self._failures.pop((install["metadata"]["namespace"], install["metadata"]["name"]), None)
        reported = install_status.with_app_reports(status if changed else install_status.mirrored(status, app), app)
        if self.keeper is not None and revisions.succeeded(reported):
            kept = await self.keeper.keep(install, install.get("status") or {}, spec, package.version)
            reported = revisions.with_note(reported, kept)
        await self._write(install, reported)
        return self._sync_period(spec)

    async def _select(self, install: Obj, spec: PackageInstallSpec) -> PackageSpec:
        wanted = package_selection(spec)
        namespace = install["metadata"]["namespace"]
        packages = await visible_packages(
            self.api, self.vocabulary.package.rtype, namespace, wanted.ref_name, self.settings.global_namespace
        )
        cluster = await kubernetes_version(self.api) if needs_kubernetes_version(packages, wanted.ref_name) else None
        return parse_package(choose(packages, wanted.ref_name, wanted.selection, spec.extensions, cluster))

    async def _run_as_app(self, install: Obj, spec: PackageInstallSpec, package: PackageSpec) -> tuple[Obj, bool]:
        """Create or update the App as the PackageInstall wants it; the App, and whether this pass changed it."""
        namespace, name = install["metadata"]["namespace"], install["metadata"]["name"]
        app = await self.api.cluster.get(self._apps, namespace, name)
        desired = desired_app(app, install, spec, package, self.settings.install_default_sync_period, self.vocabulary)
        if app is not None and desired == app:
            return app, False
        if app is None:
            saved = await self.api.cluster.create(self._apps, desired)
        else:
            saved = await self.api.cluster.update(self._apps, desired)
        verb = "created" if app is None else "updated"
        _log.info("%s %s/%s: %s App for %s %s", KIND, namespace, name, verb, package.ref_name, package.version)
        return saved, True

    async def _write(self, install: Obj, status: Obj) -> None:
        await self.api.cluster.write_status(self._installs, install, status, unchanged=same_but_times)

    def _sync_period(self, spec: PackageInstallSpec | None) -> float:
        """The App's sync period: the PackageInstall's, else the controller's default."""
        if spec is not None and spec.sync_period:
            return parse_duration(spec.sync_period)
        return self.settings.install_default_sync_period

    def _retry_delay(self, install: Obj, spec: PackageInstallSpec | None) -> float:
        """2, 4, 8 ... seconds after consecutive failures, at most the App's sync period."""
        key = install["metadata"]["namespace"], install["metadata"]["name"]
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        return retry_delay(failures, self._sync_period(spec))

    async def _fail(self, install: Obj, status: Obj, error: str, spec: PackageInstallSpec | None) -> float:
        again = self._retry_delay(install, spec)
        meta = install["metadata"]
        _log.warning("%s %s/%s: %s (retrying in %.0fs)", KIND, meta["namespace"], meta["name"], error, again)
        await self._write(install, install_status.failed(status, error))
        return again

    async def _delete(self, install: Obj, spec: PackageInstallSpec | None) -> float | None:
        """Delete the App (with the PackageInstall's current deletion settings), mirror its deletion, and let the
        PackageInstall go once the App is gone."""
        namespace, name = install["metadata"]["namespace"], install["metadata"]["name"]
        if not has_finalizer(install, self.vocabulary.install_finalizer):
            return None
        app = await self.api.cluster.get(self._apps, namespace, name)
        if app is None or not owned_by(app, install):  # gone, or never ours: nothing of ours to wait for
            await self.api.cluster.remove_finalizer(self._installs, namespace, name, self.vocabulary.install_finalizer)
            self.forget((namespace, name))
            _log.info("%s %s/%s: deleted", KIND, namespace, name)
            return None
        status: Obj = install.get("status") or {}
        if spec is not None:
            updated = deleting_app(app, install, spec)
            if updated != app:
                app = await self.api.cluster.update(self._apps, updated)
        if not app["metadata"].get("deletionTimestamp"):
            await self.api.cluster.delete(self._apps, namespace, name, uid=app["metadata"].get("uid"))
            generation = int(install["metadata"].get("generation") or 0)
            await self._write(install, install_status.deleting(status, generation))
            return DELETE_RECHECK
        await self._write(install, install_status.mirrored_deletion(status, app))
        return DELETE_RECHECK


def install_fingerprint(install: Obj) -> object:
    """What of a PackageInstall must change for a reconcile: its spec, the start of its deletion, and its annotations
    (the extensions and the downgrade permission are annotations, which do not change the generation)."""
    meta = install["metadata"]
    annotations = meta.get("annotations") or {}
    return int(meta.get("generation") or 0), bool(meta.get("deletionTimestamp")), tuple(sorted(annotations.items()))
