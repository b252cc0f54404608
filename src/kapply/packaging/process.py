"""The controller process with the packaging controllers: kapply.controller.main's Controller, with PackageRepositories
and PackageInstalls registered beside Apps, and the watches that concern PackageInstalls (Packages, and the Apps they
control). kapp-controller runs them in one process too. Each kind has workers of its own, so a burst of Packages
never takes the Apps' workers, and as many as the Apps (`--concurrency`), where kapp-controller's packaging
controllers have one (MaxConcurrentReconciles 1): with one, a tenant's repository stuck on a slow source would hold
every other namespace's repositories back, the global namespace's included. Their queues serve namespaces in turn
and hold each to its share of the workers, as the Apps' (kapply.controller.queue)."""

from __future__ import annotations

from kapply.api import AsyncClient
from kapply.controller.main import ControllerOptions, Kind, Trigger
from kapply.controller.main import run as run_controller
from kapply.controller.metrics import PACKAGE_REPOSITORY, Kappctrl
from kapply.packaging.install import InstallReconciler, install_fingerprint
from kapply.packaging.repository import RepositoryReconciler
from kapply.packaging.revisions import Keeper
from kapply.packaging.settings import PackagingSettings
from kapply.packaging.triggers import InstallIndex, app_trigger, package_trigger


def registrations(
    api: AsyncClient, options: ControllerOptions, settings: PackagingSettings, kappctrl: Kappctrl
) -> tuple[tuple[Kind, ...], tuple[Trigger, ...]]:
    """The packaging kinds and triggers for a Controller whose metrics hold `kappctrl` (kapp-controller's series: a
    PackageRepository's are counted and timed by its reconciler; a PackageInstall's are its App's)."""
    vocabulary = options.settings.vocabulary
    repositories = RepositoryReconciler(api, options.settings, kappctrl.of(PACKAGE_REPOSITORY))
    installs = InstallReconciler(api, settings, vocabulary, Keeper(api))
    index = InstallIndex()

    def forget(key: tuple[str, str]) -> None:
        index.forget(key)
        installs.forget(key)

    kinds = (
        Kind(vocabulary.repository.kind, vocabulary.repository.rtype, repositories.reconcile, options.workers),
        Kind(
            vocabulary.install.kind,
            vocabulary.install.rtype,
            installs.reconcile,
            options.workers,
            fingerprint=install_fingerprint,
            observe=index.observe,
            forget=forget,
        ),
    )
    # With `-n`, Packages of that namespace and of the global namespace concern its PackageInstalls.
    namespaces = (
        (None,) if options.namespace is None else tuple(dict.fromkeys((options.namespace, settings.global_namespace)))
    )
    triggers = (
        Trigger(vocabulary.app.rtype, app_trigger(vocabulary)),
        Trigger(vocabulary.package.rtype, package_trigger(index, settings.global_namespace), namespaces),
    )
    return kinds, triggers


async def run(api: AsyncClient, options: ControllerOptions, settings: PackagingSettings | None) -> None:
    """Run the controller until cancelled: Apps, and with `settings` the packaging controllers too."""
    if settings is None:
        await run_controller(api, options)
        return
    kappctrl = Kappctrl()
    kinds, triggers = registrations(api, options, settings, kappctrl)
    await run_controller(api, options, kinds, triggers, kappctrl)
