"""`kapply logs`: the logs of an app's Pods, as kapp prints them; with `-f`, new lines and new Pods until Ctrl-C.

As kapp: the Pods are those with the app's label (in any namespace), `-m` and `-c` patterns (`%` or `*` at either
end is a wildcard) choose Pods and containers, init containers come first, a container's log is read only while it
runs (otherwise `# waiting for ... logs` is printed and, without `-f`, it is skipped), and each container is tailed
concurrently, so lines of different containers interleave as they come.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import existing_app, run
from kapply.errors import ClusterError, KapplyError
from kapply.flags import JSON

if TYPE_CHECKING:
    from kapply.objects import Obj
    from kapply.resources.cluster import Cluster, ResourceType
    from kapply.ui.logs import LogView
    from kapply.ui.output import Output

RETRY = 0.5  # seconds between checks whether a container runs (kapp's)
RESTART = 1.0  # seconds before a followed container whose stream ended is tailed again (kapp's)
WATCH_RETRY = 1.0  # seconds before a Pod watch that failed starts again


@dataclass(frozen=True, slots=True)
class TailOptions:
    follow: bool
    lines: int | None  # the last N lines of each log; None: all of it
    pod: str  # pattern of Pod names; "" for all
    containers: tuple[str, ...]  # patterns of container names; () for all


@dataclass(frozen=True, slots=True)
class _Tailing:
    """One container's log to tail: where it is read from, how, and where it is shown."""

    cluster: Cluster
    pods: ResourceType
    pod: Obj
    container: str
    options: TailOptions
    view: LogView


def watching_forbidden(namespaces: list[str]) -> str:
    """kapp's note when the user may not list Pods (neither cluster-wide nor in these namespaces): no logs follow."""
    quoted = ", ".join(f'"{namespace}"' for namespace in namespaces)
    return (
        'Pod watching error: pods is forbidden: User cannot list resource "pods" in API group "" '
        f"in the namespace(s) {quoted}"
    )


def logs(args: Args, out: Output) -> None:
    if not args["follow"] and args["lines"] <= 0:
        raise KapplyError("Expected --lines to be greater than zero since --follow is not specified")
    options = TailOptions(
        follow=args["follow"],
        lines=args["lines"] if args["lines"] >= 0 else None,
        pod=args["pod-name"],
        containers=tuple(args["container-name"]),
    )
    if options.follow and not args[JSON]:
        # Following ends with Ctrl-C, by the signal, as kapp's: nothing is left to clean up (every line is flushed as
        # it is printed), and waiting for the streams to close after the interrupt was seen to hang for 30 s.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        run(_logs(args, out, options))
    except KeyboardInterrupt:
        # Ctrl-C is how a follow ends: as kapp, end by the signal (a shell sees 130) with nothing more to say
        sys.stdout.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)


async def _logs(args: Args, out: Output, options: TailOptions) -> None:
    from kapply.ui.logs import LogView

    view = LogView(out, container_tag=args["container-tag"])
    async with existing_app(args, out) as (api, found):
        pods = (await api.cluster.discovery()).preferred("", "Pod")
        if pods is None:
            raise KapplyError("The cluster serves no Pods")
        tails = []
        async for pod in _pods(api.cluster, pods, found.label_selector, found.namespace, options, out):
            tails += [
                asyncio.create_task(_tail(_Tailing(api.cluster, pods, pod, container, options, view)))
                for container in _containers(pod, options.containers)
            ]
        await asyncio.gather(*tails)
        out.finish()


async def _pods(
    cluster: Cluster, pods: ResourceType, selector: str, app_namespace: str, options: TailOptions, out: Output
) -> AsyncIterator[Obj]:
    """The app's Pods that match `-m`, each once: those there now and, when following, those created later. Where
    Pods may not be listed cluster-wide, those in the app's namespace; where not there either, none, with kapp's
    note."""
    from kapply import objects
    from kapply.resources.filters import pattern_matches

    seen: set[str] = set()

    def new(pod: Obj) -> bool:
        if objects.uid(pod) in seen or (options.pod and not pattern_matches(options.pod, objects.name(pod))):
            return False
        seen.add(objects.uid(pod))
        return True

    for namespace in (None, app_namespace):
        try:
            found = (
                _added(cluster, pods, selector, namespace)
                if options.follow
                else _listed(await cluster.list(pods, label_selector=selector, namespace=namespace))
            )
            async for pod in found:
                if new(pod):
                    yield pod
            return
        except ClusterError as e:
            if not e.forbidden:
                raise
    out.notice(watching_forbidden([app_namespace]))


async def _listed(listed: list[Obj]) -> AsyncIterator[Obj]:
    for pod in listed:
        yield pod


async def _added(cluster: Cluster, pods: ResourceType, selector: str, namespace: str | None) -> AsyncIterator[Obj]:
    """The Pods a list finds, then those a watch from its version sees added, until cancelled (the one list-then-watch
    loop, kapply.resources.cluster's: a watch too old lists again, so a Pod may come twice); a refusal is raised."""
    from kapply.resources.cluster import Events, Refusal, list_then_watch

    found: asyncio.Queue[Obj | None] = asyncio.Queue()

    def added(kind: str, pod: Obj) -> None:
        if kind == "ADDED":
            found.put_nowait(pod)

    def refused(refusal: Refusal, error: ClusterError) -> float | None:
        raise error

    watching = asyncio.create_task(
        list_then_watch(
            cluster,
            pods,
            Events(added),
            namespace=namespace,
            label_selector=selector,
            refused=refused,
            retry=WATCH_RETRY,
        )
    )
    watching.add_done_callback(lambda _: found.put_nowait(None))
    try:
        while (pod := await found.get()) is not None:
            yield pod
        await watching  # it ended: with a refusal
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)


def _containers(pod: Obj, patterns: tuple[str, ...]) -> list[str]:
    """The containers to tail, init containers first: those `-c` names, but not one still waiting to start in a Pod
    that has ended (it never will)."""
    from kapply.resources.filters import pattern_matches

    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    ended = status.get("phase") in ("Succeeded", "Failed")
    statuses = {
        s.get("name"): s
        for s in (*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or []))
    }
    names = []
    for container in (*(spec.get("initContainers") or []), *(spec.get("containers") or [])):
        name = container.get("name", "")
        if ended and "waiting" in (statuses.get(name, {}).get("state") or {}):
            continue
        if not patterns or any(pattern_matches(p, name) for p in patterns):
            names.append(name)
    return names


def _running(pod: Obj | None, container: str) -> bool:
    status = (pod or {}).get("status") or {}
    statuses = (*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or []))
    return any(s.get("name") == container and "running" in (s.get("state") or {}) for s in statuses)


async def _tail(tailing: _Tailing) -> None:
    """Print one container's log; when following, again each time it runs again. A stream that breaks off ends the
    container's tailing silently, as in kapp."""
    from kapply import objects

    view, tag = tailing.view, f"{objects.name(tailing.pod)} > {tailing.container}"
    while True:
        try:
            async with _stream_when_running(tailing, tag) as lines:
                if lines is None:
                    return
                view.starting(tag)
                async for text in lines:
                    view.line(tag, text)
        except ClusterError:
            return
        if not tailing.options.follow:
            view.ending(tag)
            return
        view.stopped(tag)
        await asyncio.sleep(RESTART)


@asynccontextmanager
async def _stream_when_running(tailing: _Tailing, tag: str) -> AsyncIterator[AsyncIterator[str] | None]:
    """The container's log lines once it runs and its log can be read; None when it does not and not following
    (after saying so, as kapp does once in either case)."""
    from kapply import objects

    pod, waited = tailing.pod, False
    async with AsyncExitStack() as stack:
        while True:
            live = await tailing.cluster.get(tailing.pods, objects.namespace(pod), objects.name(pod))
            if _running(live, tailing.container):
                try:
                    lines = await stack.enter_async_context(
                        _log_lines(tailing.cluster, tailing.pods, pod, tailing.container, tailing.options)
                    )
                    break
                except ClusterError:
                    pass
            if not waited:
                tailing.view.waiting(tag)
                if not tailing.options.follow:
                    yield None
                    return
                waited = True
            await asyncio.sleep(RETRY)
        yield lines


@asynccontextmanager
async def _log_lines(
    cluster: Cluster, pods: ResourceType, pod: Obj, container: str, options: TailOptions
) -> AsyncIterator[AsyncIterator[str]]:
    """The lines of a container's log (each with its newline; a last line without one is dropped, as kapp does),
    streamed while following."""
    from kapply import objects

    async with cluster.log_lines(
        pods, objects.namespace(pod), objects.name(pod), container, follow=options.follow, tail=options.lines
    ) as raw:

        async def lines() -> AsyncIterator[str]:
            async for line in raw:
                yield line.decode(errors="replace") + "\n"

        yield lines()
