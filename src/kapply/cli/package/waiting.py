"""Waiting for packaging resources as kctrl waits, polling every `--wait-check-interval` until `--wait-timeout`: a
PackageRepository or PackageInstall is done when its status reports its current generation
(`observedGeneration`) with ReconcileSucceeded, and fails with ReconcileFailed. Meanwhile the stages of the
repository, or of the install's App, are tailed (tailing.py), from the status they had when waiting began. The
resource's own conditions are not said: kctrl 0.53 says them (`packageinstall/x (packaging.carvel.dev/v1alpha1)
namespace: ns: Reconciling`) only when tailing the App failed, and kapply's tail does not fail."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kapply.cli.package.common import WaitFlags, log
from kapply.cli.package.tailing import condition, progress
from kapply.controller.apps import APPS
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.packaging import names, store
from kapply.resources.cluster import Cluster, ResourceType
from kapply.ui.output import Output
from kapply.ui.packages import status_line
from kapply.values import format_duration

PAUSED = "Canceled/paused"  # an App's friendlyDescription once it has seen it is paused
# A PackageInstall whose version is no longer in any repository says so (versions.py) without pausing its App: its
# reconcile fails before it reaches the App.
NO_VERSION = "Expected to find at least one version"


def description(resource: names.Resource, namespace: str, name: str) -> str:
    """kctrl's name of a resource in its messages: `packageinstall/x (packaging.kapply.dev/v1alpha1) namespace: ns`."""
    return f"{resource.kind.lower()}/{name} ({resource.api_version}) namespace: {namespace}"


def _status(obj: Obj) -> Obj:
    found = obj.get("status")
    return found if isinstance(found, dict) else {}


def observed(obj: Obj) -> bool:
    """Whether the status reports the current spec."""
    return bool(_status(obj).get("observedGeneration") == obj["metadata"].get("generation"))


@dataclass
class Tail:
    """The status lines of one object, from the status it had when waiting began."""

    out: Output
    previous: Obj
    deploy_output: str = ""
    generations: set[int] = field(default_factory=set)  # those "Waiting for generation N" was said of

    def update(self, obj: Obj) -> None:
        status = _status(obj)
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
    return condition(_status(obj)) if observed(obj) else ""


class Deadline:
    def __init__(self, flags: WaitFlags) -> None:
        self.flags = flags
        self.end = time.monotonic() + flags.timeout

    async def next(self, what: str) -> None:
        """Sleep until the next check; KapplyError naming `what` once the timeout has passed."""
        if time.monotonic() >= self.end:
            raise KapplyError(f"{what}: timed out waiting after {format_duration(self.flags.timeout)}")
        await asyncio.sleep(min(self.flags.interval, max(self.end - time.monotonic(), 0)))


@dataclass(frozen=True, slots=True)
class _Waited:
    """What waiting for one kind of packaging resource says, and whose stages it tails."""

    resource: names.Resource
    rtype: ResourceType
    waiting: str  # `Waiting for <waiting> reconciliation for '<name>'`
    noun: str  # `<noun> '<name>' in namespace '<namespace>' deleted`
    tails_app: bool  # the stages of the resource's App (an install's), else its own
    failed: Callable[[str, Obj], str]  # the error of a ReconcileFailed status, given the resource's description


_REPOSITORY = _Waited(
    names.PACKAGE_REPOSITORY,
    store.REPOSITORIES,
    "package repository",
    "Package repository",
    False,
    lambda what, status: f"Reconciling repository: ReconcileFailed: {status.get('usefulErrorMessage', '')}",
)
_INSTALL = _Waited(
    names.PACKAGE_INSTALL,
    store.INSTALLS,
    "PackageInstall",
    "Package install",
    True,
    lambda what, status: (
        f"{what}: Reconciling: {status.get('usefulErrorMessage', '')}. {status.get('friendlyDescription', '')}"
    ),
)


async def wait_for_repository(
    cluster: Cluster,
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
    await _wait_reconciled(_REPOSITORY, cluster, namespace, name, out, flags, created, unchanged, before)


async def wait_for_install(
    cluster: Cluster, namespace: str, name: str, out: Output, flags: WaitFlags, *, created: bool = False
) -> None:
    """Until the PackageInstall has reconciled its current spec, tailing its App's stages (all of them when the
    install was just `created`, else those that change from now on)."""
    await _wait_reconciled(_INSTALL, cluster, namespace, name, out, flags, created, False, None)


async def _wait_reconciled(
    kind: _Waited,
    cluster: Cluster,
    namespace: str,
    name: str,
    out: Output,
    flags: WaitFlags,
    created: bool,
    unchanged: bool,
    before: Obj | None,
) -> None:
    what = description(kind.resource, namespace, name)
    deadline, tail = Deadline(flags), None
    while True:
        found = await store.get(cluster, kind.rtype, namespace, name)
        if found is None:
            raise KapplyError(f"{kind.noun} '{name}' in namespace '{namespace}' deleted")
        tailed = await cluster.get(APPS, namespace, name) if kind.tails_app else found
        if tail is not None:
            if tailed is not None:
                tail.update(tailed)
        elif unchanged and observed(found):
            # kctrl's: a repository that already reports its current spec (an unchanged `add` or `update`) is told
            # from its first stage, its last reconcile told again, without waiting
            tail = Tail(out, {})
            tail.update(found)
        else:
            log(out, f"Waiting for {kind.waiting} reconciliation for '{name}'")
            tail = Tail(out, {})
            if created:
                tail.update(tailed or {})
            else:
                tail.previous = _status(before or tailed or {})
                if before is not None and observed(found):  # the stages it has passed since
                    tail.update(found)
        match reported(found):
            case "ReconcileSucceeded":
                return
            case "ReconcileFailed":
                raise KapplyError(kind.failed(what, _status(found)))
        await deadline.next(f"{what}: Reconciling")


async def wait_for_app_paused(cluster: Cluster, namespace: str, name: str, flags: WaitFlags) -> None:
    """Until the install's App has seen that it is paused (kctrl waits so before changing what the App reads), or
    the PackageInstall reports that no version of its package matches (its App is never paused then, and the update
    that follows is what mends it: kctrl stops waiting too)."""
    deadline = Deadline(flags)
    while True:
        app = await cluster.get(APPS, namespace, name)
        if app is None or (observed(app) and _status(app).get("friendlyDescription") == PAUSED):
            return
        install = await store.get(cluster, store.INSTALLS, namespace, name)
        if install is not None and observed(install) and no_version(install):  # it has seen the pause, and failed
            return
        await deadline.next(f"Waiting for app '{name}' in namespace '{namespace}' to be paused")


def no_version(install: Obj | None) -> bool:
    """The PackageInstall failed to select a version of its package (none in the repositories matches): said by its
    condition's message and friendlyDescription (kapply), or its usefulErrorMessage."""
    if install is None:
        return False
    status = _status(install)
    said = [status.get("usefulErrorMessage"), status.get("friendlyDescription")]
    said += [c.get("message") for c in status.get("conditions") or [] if isinstance(c, dict)]
    return any(NO_VERSION in str(text or "") for text in said)


async def wait_for_deletion(
    cluster: Cluster,
    rtype: ResourceType,
    resource: names.Resource,
    namespace: str,
    name: str,
    out: Output,
    flags: WaitFlags,
    gone: str = "",
) -> None:
    """Until the resource is gone (`gone`, if any, then `...: DeletionSucceeded`, as kctrl says it); KapplyError
    when its deletion fails."""
    what = description(resource, namespace, name)
    deadline = Deadline(flags)
    while True:
        found = await cluster.get(rtype, namespace, name)
        if found is None:
            if gone:
                log(out, gone)
            status_line(out, f"{what}: DeletionSucceeded", "")
            return
        if reported(found) == "DeleteFailed":
            status = _status(found)
            raise KapplyError(
                f"{what}: Deleting: {status.get('usefulErrorMessage', '')}. {status.get('friendlyDescription', '')}"
            )
        await deadline.next(f"{what}: Deleting")
