"""Waiting for packaging resources as kctrl waits, polling every `--wait-check-interval` until `--wait-timeout`: a
PackageRepository or PackageInstall is done when its status reports its current generation
(`observedGeneration`) with ReconcileSucceeded, and fails with ReconcileFailed.

Meanwhile a repository's stages are tailed from its own status (tailing.py), from the status it had when waiting
began; an install's App is tailed as kctrl tails it (app_tail.py), beside the polls, until they end. The
install's own conditions are said (`packageinstall/x (packaging.carvel.dev/v1alpha1) namespace: ns: Reconciling`,
each once) only after tailing the App failed, as kctrl 0.53 says them. A kicked repository is waited for as kctrl
does, by its tail alone."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from kapply.cli.package.app_tail import REPOSITORY, tail, tail_app
from kapply.cli.package.common import WaitFlags, log
from kapply.cli.package.tailing import condition, observed, progress, status_of
from kapply.controller.vocabulary import Resource, Vocabulary
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster
from kapply.ui.output import Output
from kapply.ui.packages import status_line
from kapply.values import format_duration

PAUSED = "Canceled/paused"  # an App's friendlyDescription once it has seen it is paused
# A PackageInstall whose version is no longer in any repository says so (versions.py) without pausing its App: its
# reconcile fails before it reaches the App.
NO_VERSION = "Expected to find at least one version"
# What kctrl says when tailing the App failed: `install` and `installed update` (with a blank line after), `installed
# kick` and `delete`
TAIL_ERROR = "Error tailing app: {}\n"
KICK_TAIL_ERROR = "Error tailing or reconciling app: {}"


def description(resource: Resource, namespace: str, name: str) -> str:
    """kctrl's name of a resource in its messages: `packageinstall/x (packaging.carvel.dev/v1alpha1) namespace: ns`."""
    return f"{resource.kind.lower()}/{name} ({resource.api_version}) namespace: {namespace}"


@dataclass
class Tail:
    """The status lines of one object, from the status it had when waiting began."""

    out: Output
    previous: Obj
    deploy_output: str = ""
    generations: set[int] = field(default_factory=set)  # those "Waiting for generation N" was said of

    def update(self, obj: Obj) -> None:
        status = status_of(obj)
        if status == self.previous:
            return
        if not observed(obj):
            generation = int(obj["metadata"].get("generation") or 0)
            if generation not in self.generations:
                self.generations.add(generation)
                status_line(self.out, f"Waiting for generation {generation} to be observed", "")
            return
        found = progress(self.previous, status, self.deploy_output)
        for line in found.lines:
            status_line(self.out, line.message, line.at, line.block)
        self.previous, self.deploy_output = status, found.deploy_output


def reported(obj: Obj) -> str:
    """The condition the resource reports for its current spec ("" while it has not seen it)."""
    return condition(status_of(obj)) if observed(obj) else ""


class Deadline:
    def __init__(self, flags: WaitFlags) -> None:
        self.flags = flags
        self.end = time.monotonic() + flags.timeout

    async def next(self, what: str) -> None:
        """Sleep until the next check; KapplyError naming `what` once the timeout has passed."""
        if time.monotonic() >= self.end:
            raise KapplyError(f"{what}: timed out waiting after {format_duration(self.flags.timeout)}")
        await asyncio.sleep(min(self.flags.interval, max(self.end - time.monotonic(), 0)))


async def wait_for_repository(
    cluster: Cluster,
    vocabulary: Vocabulary,
    namespace: str,
    name: str,
    out: Output,
    flags: WaitFlags,
    *,
    created: bool = False,
    unchanged: bool = False,
    before: Obj | None = None,
) -> None:
    """Until the repository has reconciled its current spec, tailing its stages (all of them when it was just
    `created`, else those that change from now on, or since `before`, the repository as it was before an update;
    an `unchanged` one, an `add` or `update` that wrote nothing, that already reports its current spec is told from
    its first stage: kctrl tells its last reconcile again). Whether it changed is the caller's to say: the controller
    may report a new generation before its first stage, or have started fetching before the first look."""
    repositories = vocabulary.repository.rtype
    deadline, tail = Deadline(flags), None
    while True:
        found = await cluster.get(repositories, namespace, name)
        if found is None:
            raise KapplyError(f"Package repository '{name}' in namespace '{namespace}' deleted")
        if tail is not None:
            tail.update(found)
        elif unchanged and observed(found):
            # kctrl's: a repository that already reports its current spec (an unchanged `add` or `update`) is told
            # from its first stage, its last reconcile told again, without waiting
            tail = Tail(out, {})
            tail.update(found)
        else:
            log(out, f"Waiting for package repository reconciliation for '{name}'")
            tail = Tail(out, {} if created else status_of(before or found))
            if created or (before is not None and observed(found)):  # all its stages, or those passed since
                tail.update(found)
        match reported(found):
            case "ReconcileSucceeded":
                return
            case "ReconcileFailed":
                useful = status_of(found).get("usefulErrorMessage", "")
                raise KapplyError(f"Reconciling repository: ReconcileFailed: {useful}")
        await deadline.next(f"{description(vocabulary.repository, namespace, name)}: Reconciling")


@contextlib.asynccontextmanager
async def _app_tailed(
    cluster: Cluster, vocabulary: Vocabulary, namespace: str, name: str, out: Output, error: str
) -> AsyncIterator[Callable[[], bool]]:
    """The install's App tailed (app_tail.py) while the wait runs, stopped when it ends; yields whether tailing
    failed (its error said as `error` says it)."""
    failed = False

    async def tail_it() -> None:
        nonlocal failed
        try:
            await tail_app(cluster, vocabulary.app.rtype, namespace, name, out)
        except KapplyError as e:
            failed = True
            log(out, error.format(e))

    task = asyncio.create_task(tail_it())
    try:
        yield lambda: failed
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _said_once(out: Output) -> Callable[[str], None]:
    """kctrl's deduping status lines: each message once."""
    said: set[str] = set()

    def say(message: str) -> None:
        if message not in said:
            said.add(message)
            status_line(out, message, "")

    return say


async def wait_for_install(
    cluster: Cluster,
    vocabulary: Vocabulary,
    namespace: str,
    name: str,
    out: Output,
    flags: WaitFlags,
    *,
    tail_error: str = TAIL_ERROR,
) -> None:
    """Until the PackageInstall has reconciled its current spec, its App tailed meanwhile (kctrl's
    waitForResourceInstallation: each check after an interval)."""
    install = vocabulary.install
    what = description(install, namespace, name)
    log(out, f"Waiting for PackageInstall reconciliation for '{name}'")
    say, deadline = _said_once(out), Deadline(flags)
    async with _app_tailed(cluster, vocabulary, namespace, name, out, tail_error) as tail_failed:
        while True:
            await deadline.next(f"{what}: Reconciling")
            found = await cluster.get(install.rtype, namespace, name)
            if found is None:
                raise KapplyError(f"Package install '{name}' in namespace '{namespace}' deleted")
            if not observed(found):
                continue
            status = status_of(found)
            for reached in status.get("conditions") or []:
                if tail_failed():
                    say(f"{what}: {reached.get('type', '')}")
                if reached.get("status") != "True":
                    continue
                if reached.get("type") == "ReconcileSucceeded":
                    return
                if reached.get("type") == "ReconcileFailed":
                    useful, friendly = status.get("usefulErrorMessage", ""), status.get("friendlyDescription", "")
                    raise KapplyError(f"{what}: Reconciling: {useful}. {friendly}")


async def wait_for_app_paused(
    cluster: Cluster, vocabulary: Vocabulary, namespace: str, name: str, flags: WaitFlags
) -> None:
    """Until the install's App has seen that it is paused (kctrl waits so before changing what the App reads), or
    the PackageInstall reports that no version of its package matches (its App is never paused then, and the update
    that follows is what mends it: kctrl stops waiting too)."""
    deadline = Deadline(flags)
    while True:
        app = await cluster.get(vocabulary.app.rtype, namespace, name)
        if app is None or (observed(app) and status_of(app).get("friendlyDescription") == PAUSED):
            return
        install = await cluster.get(vocabulary.install.rtype, namespace, name)
        if install is not None and observed(install) and no_version(install):  # it has seen the pause, and failed
            return
        await deadline.next(f"Waiting for app '{name}' in namespace '{namespace}' to be paused")


def no_version(install: Obj | None) -> bool:
    """The PackageInstall failed to select a version of its package (none in the repositories matches): said by its
    condition's message and friendlyDescription (kapply), or its usefulErrorMessage."""
    if install is None:
        return False
    status = status_of(install)
    said = [status.get("usefulErrorMessage"), status.get("friendlyDescription")]
    said += [c.get("message") for c in status.get("conditions") or [] if isinstance(c, dict)]
    return any(NO_VERSION in str(text or "") for text in said)


async def wait_for_repository_deletion(
    cluster: Cluster, vocabulary: Vocabulary, namespace: str, name: str, out: Output, flags: WaitFlags
) -> None:
    """Until the repository is gone (`Package repository ... deleted`, then `...: DeletionSucceeded`, as kctrl says
    it); KapplyError when its deletion fails."""
    what = description(vocabulary.repository, namespace, name)
    deadline = Deadline(flags)
    while True:
        found = await cluster.get(vocabulary.repository.rtype, namespace, name)
        if found is None:
            log(out, f"Package repository '{name}' in namespace '{namespace}' deleted")
            status_line(out, f"{what}: DeletionSucceeded", "")
            return
        _check_deletion(found, what)
        await deadline.next(f"{what}: Deleting")


async def wait_for_install_deletion(
    cluster: Cluster, vocabulary: Vocabulary, namespace: str, name: str, out: Output, flags: WaitFlags
) -> None:
    """Until the PackageInstall is gone (`...: DeletionSucceeded`), its App tailed meanwhile (kctrl's
    waitForResourceDelete: each check after an interval); KapplyError when its deletion fails."""
    what = description(vocabulary.install, namespace, name)
    say, deadline = _said_once(out), Deadline(flags)
    async with _app_tailed(cluster, vocabulary, namespace, name, out, KICK_TAIL_ERROR) as tail_failed:
        while True:
            await deadline.next(f"{what}: Deleting")
            found = await cluster.get(vocabulary.install.rtype, namespace, name)
            if found is None:
                say(f"{what}: DeletionSucceeded")
                return
            if not observed(found):
                continue
            if tail_failed():
                for reached in status_of(found).get("conditions") or []:
                    say(f"{what}: {reached.get('type', '')}")
            _check_deletion(found, what)


def _check_deletion(found: Obj, what: str) -> None:
    """KapplyError when the resource reports its deletion failed."""
    if reported(found) == "DeleteFailed":
        status = status_of(found)
        raise KapplyError(
            f"{what}: Deleting: {status.get('usefulErrorMessage', '')}. {status.get('friendlyDescription', '')}"
        )


async def tail_repository(
    cluster: Cluster, vocabulary: Vocabulary, namespace: str, name: str, out: Output, flags: WaitFlags
) -> None:
    """kctrl's wait for a repository it kicked: its RepoTailer alone, no polls (app_tail.py), up to
    `--wait-timeout`."""
    what = description(vocabulary.repository, namespace, name)
    log(out, f"Waiting for package repository reconciliation for '{name}'")
    try:
        await asyncio.wait_for(
            tail(cluster, vocabulary.repository.rtype, REPOSITORY, namespace, name, out), flags.timeout
        )
    except TimeoutError:
        raise KapplyError(f"{what}: Reconciling: timed out waiting after {format_duration(flags.timeout)}") from None
