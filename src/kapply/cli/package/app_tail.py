"""kctrl's informer tails (its AppTailer and RepoTailer, kapp-controller 0.53's cli/pkg/kctrl/cmd/app/app_tailer.go and
cmd/package/repository/repo_tailer.go): what kctrl prints of an install's App while it waits for the PackageInstall
(`install`, `installed update|kick|delete`), and of a repository it kicked.

kctrl watches the object from the moment it starts waiting and tells each change of it as it comes: a change the
object has not observed yet (its generation ahead of its status) says `Waiting for generation N to be observed`, each
time; any other change says what changed in the status (tailing.progress) and, whenever the status reports a reconcile
that ended, `Deploy succeeded` or the failure, which ends the tail (so a change of an object already reconciled, its
labels say, says `Deploy succeeded` again, with the time it was). Its deletion says so and ends the tail; its creation
is told nothing (kctrl's informer has no handler for it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kapply.cli.package.tailing import Progress, observed, progress, status_of
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, ResourceType
from kapply.ui.output import Output
from kapply.ui.packages import status_line


class TailFailed(KapplyError):
    """The reconcile failed (kctrl's tail error: `Reconciling app: Fetch failed`, `Reconciling app:
    ReconcileFailed: <usefulErrorMessage>`)."""


def _stages(status: Obj) -> Obj:
    """A PackageRepository's status as kctrl's RepoTailer reads it: its stages and conditions only (not its
    usefulErrorMessage: a failure says `ReconcileFailed: ` and no more)."""
    return {key: status[key] for key in ("fetch", "template", "deploy", "conditions") if key in status}


def tell(out: Output, found: Progress, failing: str) -> bool:
    """Tell a reconcile's progress lines; True when they end the tail (TailFailed, `Reconciling <failing>: ...`, when
    the reconcile failed)."""
    for line in found.lines:
        status_line(out, line.message, line.at, line.block)
    if found.error:
        raise TailFailed(f"Reconciling {failing}: {found.error}")
    return found.ended


@dataclass(frozen=True, slots=True)
class Tailed:
    """What kctrl's tail of one kind says: its deletion (`<noun> '<name>' in namespace '<namespace>' deleted`), its
    failure (`Reconciling <failing>: ...`), and the status it reads."""

    noun: str
    failing: str
    status: Callable[[Obj], Obj]


APP = Tailed("App", "app", lambda status: status)
REPOSITORY = Tailed("Package repository", "repository", _stages)


@dataclass
class InformerTail:
    """The lines of one object's changes, each told against the object as last seen."""

    kind: Tailed
    out: Output
    namespace: str
    name: str
    seen: Obj | None = None
    deploy_output: str = ""  # the deploy output told so far (only its new lines are told next)

    def event(self, event: str, obj: Obj) -> bool:
        """Tell one watch event of the object (ADDED, MODIFIED, DELETED); True when the tail ends. TailFailed when
        its reconcile failed."""
        if event == "DELETED":
            status_line(self.out, f"{self.kind.noun} '{self.name}' in namespace '{self.namespace}' deleted", "")
            return True
        old, self.seen = self.seen, obj
        if event == "ADDED" or old is None:
            return False
        if not observed(obj):
            status_line(self.out, f"Waiting for generation {obj['metadata'].get('generation')} to be observed", "")
            return False
        before, after = (self.kind.status(status_of(o)) for o in (old, obj))
        found = progress(before, after, self.deploy_output, every_change=True)
        self.deploy_output = found.deploy_output
        return tell(self.out, found, self.kind.failing)


async def tail(
    cluster: Cluster,
    rtype: ResourceType,
    kind: Tailed,
    namespace: str,
    name: str,
    out: Output,
    *,
    absent_is_deleted: bool = False,
) -> None:
    """Tell the object's changes from now until the tail ends (InformerTail.event), an object that does not exist
    yet from its creation on: a list of it, then a watch from the list's resourceVersion, so that no change is
    missed. With `absent_is_deleted` (an object known to exist, being deleted), a list that does not show it means
    it is gone already: its deletion is told, where a watch would never tell it."""
    listed, version = await cluster.list_with_version(
        rtype, namespace=namespace, field_selector=f"metadata.name={name}"
    )
    told = InformerTail(kind, out, namespace, name, listed[0] if listed else None)
    if not listed and absent_is_deleted:
        told.event("DELETED", {})
        return
    while True:  # a watch the server ends (its timeout) goes on from the last version seen
        async for event, obj in cluster.watch(rtype, namespace=namespace, resource_version=version):
            meta = obj.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            if event != "BOOKMARK" and meta.get("name") == name and told.event(event, obj):
                return


async def tail_app(
    cluster: Cluster, apps: ResourceType, namespace: str, name: str, out: Output, *, absent_is_deleted: bool = False
) -> None:
    """kctrl's AppTailer: `tail` of an App (also `kapply app`'s, kapply.cli.app_tail)."""
    await tail(cluster, apps, APP, namespace, name, out, absent_is_deleted=absent_is_deleted)
