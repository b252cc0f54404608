"""Reconciling one PackageRepository, as kapp-controller's pkgrepository: a repository being deleted takes its
Packages with it; a paused one is left alone; any other is fetched, templated into Packages and PackageMetadatas
(repository_content.py; an `imgpkgBundle`'s image references resolved by kbld through its `.imgpkg/images.yml`) and
deployed as the kapp app `<name>.pkgr` (repository_deploy.py), every sync period (10 minutes unless set, never under
30 s) and at once when its spec changes. The status has kapp-controller's shape and texts (fetch, template and deploy
stages, one condition, the consecutive counts).

As for Apps, a sync that changes nothing writes nothing (kapp-controller writes the stages' times and counts at every
sync): `consecutiveReconcileSuccesses` counts the syncs that changed something.
"""

from __future__ import annotations

import logging

from kapply.api import AsyncClient
from kapply.controller import status as app_status
from kapply.controller.fetch import FetchPolicy
from kapply.controller.metrics import PACKAGE_REPOSITORY, AppCount, Clock, KindSeries, Timed
from kapply.controller.sandbox import SandboxFailed, Stage, shared
from kapply.controller.settings import Settings
from kapply.controller.spec import SpecError
from kapply.controller.status import same_but_times
from kapply.errors import KapplyError
from kapply.objects import Obj, has_finalizer
from kapply.packaging import names, store
from kapply.packaging.failures import is_conflict, unexpected
from kapply.packaging.repository_deploy import RepositoryDeployed, RepositoryDeployFailed, delete, deploy
from kapply.packaging.repository_fetch import source_reader
from kapply.packaging.sandbox_repository import fetch_and_read
from kapply.packaging.spec import (
    REPOSITORY_DEFAULT_SYNC_PERIOD,
    PackageRepositorySpec,
    parse_package_repository,
)
from kapply.packaging.timing import retry_delay

_log = logging.getLogger("kapply.controller")
KIND = names.PACKAGE_REPOSITORY.kind


class StageFailed(KapplyError):
    """A stage failed: its status (fetch, template or deploy), its error (the message) and usefulErrorMessage."""

    def __init__(self, stage: str, result: app_status.Stage, useful: str) -> None:
        super().__init__(result.error)
        self.stage = stage
        self.status = result.to_status(with_stdout=stage != "template", finished=True if stage == "deploy" else None)
        self.useful = useful


def tool_failure(prefix: str, error: str, stderr: str) -> tuple[str, str]:
    """A stage's error and usefulErrorMessage, as kapp-controller words them: when a tool said why it failed, the
    error points at usefulErrorMessage, which holds what it said (`Fetching resources: Error (see
    .status.usefulErrorMessage for details)`); otherwise the error itself, after the stage's prefix."""
    if stderr:
        return f"{prefix}{names.SEE_USEFUL_ERROR_MESSAGE}", stderr
    message = f"{prefix}{error}"
    return message, message


def paused(status: Obj, generation: int) -> Obj:
    """A paused repository's status: its generation seen, `Paused`; the condition left as it was."""
    return {**status, "observedGeneration": generation, "friendlyDescription": "Paused"}


def _starts_anew(previous: Obj, generation: int) -> bool:
    """A pass for a spec not reconciled yet, or after a failure (an idle periodic sync writes nothing)."""
    return previous.get("observedGeneration") != generation or bool(previous.get("consecutiveReconcileFailures"))


class RepositoryReconciler:
    def __init__(self, api: AsyncClient, settings: Settings, series: KindSeries | None = None) -> None:
        self.api = api
        self.settings = settings
        # kapp-controller's series of PackageRepositories: attempts (it counts nothing else of them) and times
        self.series = series or KindSeries(controller=PACKAGE_REPOSITORY)
        self.vocabulary = settings.vocabulary
        self._repositories = settings.vocabulary.repository.rtype

    async def _write(self, repository: Obj, status: Obj) -> None:
        """A status that differs only in its times is not written (an unchanged repository's sync writes nothing)."""
        await self.api.cluster.write_status(self._repositories, repository, status, unchanged=same_but_times)

    async def reconcile(self, namespace: str, name: str) -> float | None:
        """One pass; returns when to come back (seconds), or None (gone, or paused: its next change brings it back).
        Whatever fails, the status says so (failures.py)."""
        repository = await store.get(self.api.cluster, self._repositories, namespace, name)
        if repository is None:
            self.series.forget(namespace, name)
            return None
        self.series.init(namespace, name)  # kapp-controller's InitMetrics, at every reconcile
        try:
            return await self._reconcile(repository)
        except Exception as e:
            if is_conflict(e):
                raise
            _log.exception("%s %s/%s: reconcile failed unexpectedly", KIND, namespace, name)
            deleting = bool(repository["metadata"].get("deletionTimestamp"))
            status = {
                **(repository.get("status") or {}),
                "observedGeneration": int(repository["metadata"].get("generation") or 0),
            }
            condition = app_status.Condition.DELETE_FAILED if deleting else app_status.Condition.RECONCILE_FAILED
            failed = app_status.failed(status, condition, unexpected(e), unexpected(e))
            again = retry_delay(failed["consecutiveReconcileFailures"], REPOSITORY_DEFAULT_SYNC_PERIOD)
            await self._write(repository, failed)
            return again

    async def _reconcile(self, repository: Obj) -> float | None:
        if repository["metadata"].get("deletionTimestamp"):
            return await self._delete(repository)
        generation = int(repository["metadata"].get("generation") or 0)
        status = {**(repository.get("status") or {}), "observedGeneration": generation}
        try:
            spec = parse_package_repository(repository)
        except SpecError as e:
            return await self._fail(repository, status, str(e), str(e), REPOSITORY_DEFAULT_SYNC_PERIOD)
        if spec.paused:
            await self._write(repository, paused(status, generation))
            return None
        return await self._sync(repository, spec, status)

    async def _sync(self, repository: Obj, spec: PackageRepositorySpec, status: Obj) -> float:
        """Fetch, template, deploy; the status says how each stage went."""
        namespace, name = repository["metadata"]["namespace"], repository["metadata"]["name"]
        previous: Obj = repository.get("status") or {}
        self.series.count(namespace, name, AppCount.ATTEMPT)
        clock = self.series.clock(namespace, name)
        if _starts_anew(previous, status["observedGeneration"]):
            await self._write(repository, app_status.reconciling(status))
        try:
            wanted = await self._fetch_and_template(namespace, name, spec, status, clock)
            deployed, status["deploy"] = await self._deploy(repository, wanted, clock)
        except StageFailed as e:
            clock.stop()
            status[e.stage] = e.status
            return await self._fail(repository, status, str(e), e.useful, spec.sync_period)
        clock.stop()
        unchanged = previous.get("observedGeneration") == status["observedGeneration"]
        if deployed.changed or not unchanged or previous.get("friendlyDescription") != "Reconcile succeeded":
            await self._write(repository, app_status.succeeded(status))
        left = f", left to other repositories: {', '.join(deployed.left)}" if deployed.left else ""
        _log.info("%s %s/%s: %s%s", KIND, namespace, name, "deployed" if deployed.changed else "no changes", left)
        return spec.sync_period

    async def _fetch_and_template(
        self, namespace: str, name: str, spec: PackageRepositorySpec, status: Obj, clock: Clock
    ) -> list[Obj]:
        """The objects the repository deploys, fetched and read in the sandbox; status.fetch and status.template say
        how each stage went (StageFailed when one failed); `clock` times each."""
        started = app_status.now()
        clock.begin()
        try:
            lock, wanted = await fetch_and_read(
                shared(self.settings),
                namespace,
                name,
                spec.fetch,
                FetchPolicy.from_settings(self.settings),
                source_reader(self.api, namespace),
                self.settings.vocabulary.package.api_version,
                on_fetched=clock.fetched,
            )
        except SandboxFailed as e:
            clock.end(Timed.FETCH if e.stage is Stage.FETCH else Timed.TEMPLATE)
            if e.stage is Stage.FETCH:
                error, useful = tool_failure("Fetching resources: ", str(e), e.stderr)
                raise StageFailed(
                    "fetch", app_status.Stage(1, stderr=e.stderr, error=error, started_at=started), useful
                ) from e
            status["fetch"] = app_status.Stage(0, stdout=e.lock, started_at=started).to_status()
            # ytt's and kbld's failures point at what they said; the controller's own (no `packages/`) are said as
            # they are
            error, useful = tool_failure("Templating dir: ", str(e), e.stderr) if e.stderr else (str(e), str(e))
            raise StageFailed("template", app_status.Stage(e.exit_code, stderr=e.stderr, error=error), useful) from e
        clock.end(Timed.TEMPLATE)
        status["fetch"] = app_status.Stage(0, stdout=lock, started_at=started).to_status()
        status["template"] = app_status.Stage(0).to_status(with_stdout=False)
        return wanted

    async def _deploy(self, repository: Obj, wanted: list[Obj], clock: Clock) -> tuple[RepositoryDeployed, Obj]:
        namespace, name = repository["metadata"]["namespace"], repository["metadata"]["name"]
        started = app_status.now()
        clock.begin()

        async def owns() -> None:  # before the deploy applies anything, as kapp-controller ("Blocking for deploy")
            try:
                await self.api.cluster.add_finalizer(
                    self._repositories, repository, self.vocabulary.repository_finalizer
                )
            except KapplyError as e:
                raise KapplyError(f"Blocking for deploy: {e}") from e

        try:
            deployed = await deploy(self.api, self.vocabulary, name, namespace, wanted, owns)
        except RepositoryDeployFailed as e:
            clock.end(Timed.DEPLOY)
            stage = app_status.Stage(
                1, stdout=e.output, stderr=f"kapply: Error: {e}", error=f"Deploying: {e}", started_at=started
            )
            raise StageFailed("deploy", stage, str(e)) from e
        clock.end(Timed.DEPLOY)
        return deployed, app_status.Stage(0, stdout=deployed.output, started_at=started).to_status(finished=True)

    async def _fail(self, repository: Obj, status: Obj, message: str, useful: str, period: float) -> float:
        failed = app_status.failed(status, app_status.Condition.RECONCILE_FAILED, message, useful)
        again = retry_delay(failed["consecutiveReconcileFailures"], period)
        meta = repository["metadata"]
        _log.warning("%s %s/%s: %s (retrying in %.0fs)", KIND, meta["namespace"], meta["name"], message, again)
        await self._write(repository, failed)
        return again

    async def _delete(self, repository: Obj) -> float | None:
        """Delete the repository's kapp app (its Packages go), then let the repository go."""
        namespace, name = repository["metadata"]["namespace"], repository["metadata"]["name"]
        if not has_finalizer(repository, self.vocabulary.repository_finalizer):
            return None
        status = {
            **(repository.get("status") or {}),
            "observedGeneration": int(repository["metadata"].get("generation") or 0),
        }
        await self._write(repository, app_status.with_condition(status, app_status.Condition.DELETING))
        try:
            await delete(self.api, self.vocabulary, name, namespace)
        except KapplyError as e:
            failed = app_status.failed(status, app_status.Condition.DELETE_FAILED, f"Deleting: {e}", str(e))
            again = retry_delay(failed["consecutiveReconcileFailures"], REPOSITORY_DEFAULT_SYNC_PERIOD)
            _log.warning("%s %s/%s: Deleting: %s (retrying in %.0fs)", KIND, namespace, name, e, again)
            await self._write(repository, failed)
            return again
        await self.api.cluster.remove_finalizer(
            self._repositories, namespace, name, self.vocabulary.repository_finalizer
        )
        self.series.forget(namespace, name)
        _log.info("%s %s/%s: deleted", KIND, namespace, name)
        return None
