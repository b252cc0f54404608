"""Pod logs during `kapply deploy` (kapp's `--logs`, `--logs-all`): while the deploy applies and waits, the logs of
the app's Pods are followed and printed as `logs | <pod> > <container> | <line>`, with kapp's `# ...` lines (TTY and
JSON only) prefixed the same way; they stop when the deploy ends.

As kapp, the Pods are those with the app's label; without `--logs-all`, only those annotated
`kapp.k14s.io/deploy-logs`: `""` or `for-new` (Pods that were not there before the deploy), `for-existing` (Pods that
were), `for-new-or-existing`. `kapp.k14s.io/deploy-logs-container-names` (a comma list) chooses a Pod's containers
(with `--logs-all` too).
Each log is read from its start, and lines of different containers interleave as they come.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from kapply.cli.logs import (
    RESTART,
    RETRY,
    WATCH_RETRY,
    TailOptions,
    _containers,
    _log_lines,
    _running,
    watching_forbidden,
)
from kapply.errors import ClusterError

if TYPE_CHECKING:
    from kapply.objects import Obj
    from kapply.resources.cluster import Cluster, ResourceType
    from kapply.ui.logs import LogView
    from kapply.ui.output import Output

DEPLOY_LOGS = "kapp.k14s.io/deploy-logs"
DEPLOY_LOGS_CONTAINER_NAMES = "kapp.k14s.io/deploy-logs-container-names"
FOLLOW = TailOptions(follow=True, lines=None, pod="", containers=())


def shown(pod: Obj, existing: bool, *, logs_all: bool) -> bool:
    """Whether a Pod's logs are shown: all with --logs-all, else as its deploy-logs annotation says."""
    if logs_all:
        return True
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if DEPLOY_LOGS not in annotations:
        return False
    value = annotations[DEPLOY_LOGS]
    if value in ("", "for-new"):
        return not existing
    if value == "for-existing":
        return existing
    return bool(value == "for-new-or-existing")


def containers(pod: Obj) -> list[str]:
    """The containers of a shown Pod to follow, init containers first: those its container-names annotation lists
    (with --logs-all too, as kapp)."""
    names = _containers(pod, ())
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if DEPLOY_LOGS_CONTAINER_NAMES not in annotations:
        return names
    wanted = annotations[DEPLOY_LOGS_CONTAINER_NAMES].split(",")
    return [name for name in names if name in wanted]


@asynccontextmanager
async def deploy_logs(
    cluster: Cluster, out: Output, selector: str, namespaces: list[str], *, logs_all: bool, new_app: bool
) -> AsyncIterator[None]:
    """Follow the logs of the app's Pods (those with `selector`) while the body runs; stop when it ends. Where Pods
    may not be listed cluster-wide, those in `namespaces` (the app's first, as kapp's), with kapp's note naming those
    where they may not be listed either.

    The Pods there before the deploy are listed before the body starts: one listed later could count a Pod the
    deploy created as existing. A `new_app` (no record when its plan looked) has none (its label's value was chosen
    then), so nothing is listed first (issue 33: a round trip less) and where Pods may be listed is found as the
    logs are followed."""
    from kapply.ui.logs import LogView

    pods = (await cluster.discovery()).preferred("", "Pod")
    if pods is None:
        yield
        return
    view = LogView(out, container_tag=True, prefix="logs")
    listing = asyncio.ensure_future(_listed(cluster, out, pods, selector, namespaces))
    if not new_app:
        with contextlib.suppress(ClusterError):  # Pods may not be seen: no logs (`_follow_listed` sees it too)
            await listing
    task = asyncio.create_task(_follow_listed(cluster, pods, selector, listing, view, new_app, logs_all=logs_all))
    try:
        yield
        await asyncio.wait({listing})  # kapp's note on Pods that may not be listed comes before the deploy's end
    finally:
        for running in (task, listing):
            running.cancel()
        await asyncio.gather(task, listing, return_exceptions=True)


async def _listed(
    cluster: Cluster, out: Output, pods: ResourceType, selector: str, namespaces: list[str]
) -> tuple[list[str | None], set[str]]:
    """Where the app's Pods may be listed (None: cluster-wide, else the app's namespaces where they may), and the
    UIDs of those there now."""
    from kapply import objects

    try:
        return [None], {objects.uid(p) for p in await cluster.list(pods, label_selector=selector)}
    except ClusterError as e:
        if not e.forbidden:
            raise
    scopes: list[str | None] = []
    existing: set[str] = set()
    forbidden = []
    for namespace in namespaces:
        try:
            listed = await cluster.list(pods, label_selector=selector, namespace=namespace)
        except ClusterError as refused:
            if not refused.forbidden:
                raise
            forbidden.append(namespace)
            continue
        scopes.append(namespace)
        existing |= {objects.uid(p) for p in listed}
    if forbidden:
        out.notice(watching_forbidden(forbidden))
    return scopes, existing


async def _follow_listed(
    cluster: Cluster,
    pods: ResourceType,
    selector: str,
    listing: asyncio.Future[tuple[list[str | None], set[str]]],
    view: LogView,
    new_app: bool,
    *,
    logs_all: bool,
) -> None:
    """The Pods followed where `listing` found they may be listed; those it found existed before the deploy,
    unless the app is new (they are the deploy's)."""
    try:
        scopes, existing = await listing
    except ClusterError:
        return  # Pods may not be seen: no logs
    await _follow(cluster, pods, selector, scopes, set() if new_app else existing, view, logs_all=logs_all)


async def _follow(
    cluster: Cluster,
    pods: ResourceType,
    selector: str,
    scopes: list[str | None],
    existing: set[str],
    view: LogView,
    *,
    logs_all: bool,
) -> None:
    """Each Pod (there now or created later) is followed once, if shown. The watches (the one list-then-watch loop,
    kapply.resources.cluster's) keep each Pod's latest state, so a container's log is opened as soon as it runs (no
    polling: a deploy may end soon after its Pods run)."""
    from kapply import objects
    from kapply.resources.cluster import Events, Refusal, list_then_watch

    latest: dict[str, Obj | None] = {}  # by uid; None once deleted
    changed = asyncio.Event()  # set (and replaced) at each change of `latest`
    tails: set[asyncio.Task[None]] = set()

    async def tail(uid: str, tag: str, container: str) -> None:
        waited = False
        while (pod := latest.get(uid)) is not None:
            if _running(pod, container):
                try:
                    async with _log_lines(cluster, pods, pod, container, FOLLOW) as lines:
                        view.starting(tag)
                        try:
                            async for text in lines:
                                view.line(tag, text)
                        except ClusterError:
                            return  # a stream that breaks off ends the container's tailing, as kapp's
                    view.stopped(tag)
                    await asyncio.sleep(RESTART)
                    continue
                except ClusterError:
                    pass  # not readable yet
            if not waited:
                view.waiting(tag)
                waited = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), RETRY)

    def put(uid: str, pod: Obj | None) -> None:
        nonlocal changed
        latest[uid] = pod
        changed.set()
        changed = asyncio.Event()

    def event(kind: str, pod: Obj) -> None:
        uid = objects.uid(pod)
        new = uid not in latest
        put(uid, None if kind == "DELETED" else pod)
        if new and kind != "DELETED" and shown(pod, uid in existing, logs_all=logs_all):
            tails.update(asyncio.create_task(tail(uid, f"{objects.name(pod)} > {c}", c)) for c in containers(pod))

    def relisted(namespace: str | None, listed: list[Obj]) -> None:
        """Pods of the list's scope that it did not find went while no watch ran."""
        kept = {objects.uid(pod) for pod in listed}
        for uid, pod in list(latest.items()):
            if pod is not None and uid not in kept and namespace in (None, objects.namespace(pod)):
                put(uid, None)

    def refused(refusal: Refusal, error: ClusterError) -> float:
        return WATCH_RETRY

    def watch(namespace: str | None) -> Coroutine[None, None, None]:
        return list_then_watch(
            cluster,
            pods,
            Events(event, functools.partial(relisted, namespace)),
            namespace=namespace,
            label_selector=selector,
            refused=refused,
            retry=WATCH_RETRY,
        )

    try:
        await asyncio.gather(*(watch(namespace) for namespace in scopes))
    finally:
        for task in tails:
            task.cancel()
        await asyncio.gather(*tails, return_exceptions=True)
