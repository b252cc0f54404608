"""The Apps list as the dashboard keeps it: the App and PackageInstall objects the user can list, kept current by ONE
list-then-watch per served kind (kapply.resources.cluster.list_then_watch), whatever the number of Apps or pages
open; each page is told of every change through its own queue (server-sent events), never by polling.

A kind the user may not list cluster-wide is listed in the kubeconfig's namespace instead; what stays out of sight
(the other namespaces, or the kind altogether) is said on the page (`hidden`), never an error of the page."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from kapply.api import AsyncClient
from kapply.controller.vocabulary import Resource
from kapply.controller.vocabulary_choice import app, install, served
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Events, Refusal, list_then_watch

RETRY = 5.0  # seconds before a broken watch starts again
REFUSED_RETRY = 30.0  # seconds before a refused list is asked again (RBAC may change)


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind the dashboard lists: an App or a PackageInstall of one vocabulary (kapply's or kapp-controller's)."""

    resource: Resource

    @property
    def name(self) -> str:
        return f"{self.resource.plural}.{self.resource.group}"


async def served_kinds(api: AsyncClient) -> list[Kind]:
    """The Apps and PackageInstalls of kapply's groups and of kapp-controller's that the cluster serves."""
    discovery = await api.cluster.discovery()
    return [Kind(needed(vocabulary)) for needed in (app, install) for vocabulary in served(discovery, needed)]


def object_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    group = str(obj.get("apiVersion", "")).partition("/")[0]
    return f"{obj.get('kind')}.{group}/{meta.get('namespace', '')}/{meta.get('name', '')}"


class Board:
    """The objects seen, what is hidden, and the queues of the pages that follow the list."""

    def __init__(self) -> None:
        self.objects: dict[str, Obj] = {}
        self.hidden: dict[str, str] = {}  # kind name -> what the user cannot see, and the API server's message
        self._pages: set[asyncio.Queue[str]] = set()

    def subscribe(self) -> asyncio.Queue[str]:
        queue: asyncio.Queue[str] = asyncio.Queue()
        self._pages.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[str]) -> None:
        self._pages.discard(queue)

    def _tell(self, key: str) -> None:
        for queue in self._pages:
            queue.put_nowait(key)

    def event(self, event: str, obj: Obj) -> None:
        key = object_key(obj)
        if event == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        self._tell(key)

    def relisted(self, kind: Kind, namespace: str | None, listed: Sequence[Obj]) -> None:
        """A list's objects are all of `kind` (in `namespace`) there is: the others seen before are gone."""
        keep = {object_key(obj) for obj in listed}
        prefix = f"{kind.resource.kind}.{kind.resource.group}/"
        for key in [k for k in self.objects if k.startswith(prefix) and k not in keep]:
            if namespace is None or key.startswith(f"{prefix}{namespace}/"):
                del self.objects[key]
                self._tell(key)

    def hide(self, kind: Kind, text: str) -> None:
        if self.hidden.get(kind.name) != text:
            self.hidden[kind.name] = text
            self._tell("")  # "": what is hidden changed


async def follow(api: AsyncClient, board: Board, kind: Kind) -> None:
    """Keep `board` current with `kind`: cluster-wide when the user may list it so, else in the kubeconfig's
    namespace (saying that the others are hidden), else nowhere (saying why), asking again now and then."""
    rtype = kind.resource.rtype
    stopped: list[ClusterError] = []

    def cluster_wide_refused(refusal: Refusal, error: ClusterError) -> float | None:
        stopped.append(error)
        return None

    await list_then_watch(
        api.cluster,
        rtype,
        Events(board.event, lambda listed: board.relisted(kind, None, listed)),
        refused=cluster_wide_refused,
        retry=RETRY,
    )
    namespace = api.namespace()
    board.hide(kind, f"{kind.name} outside namespace {namespace} are hidden: {stopped[-1]}")

    def namespace_refused(refusal: Refusal, error: ClusterError) -> float | None:
        board.hide(kind, f"{kind.name} are hidden (not even namespace {namespace} may be listed): {error}")
        return REFUSED_RETRY

    def listed(objects: list[Obj]) -> None:
        board.hide(kind, f"{kind.name} outside namespace {namespace} are hidden: {stopped[-1]}")
        board.relisted(kind, namespace, objects)

    await list_then_watch(
        api.cluster, rtype, Events(board.event, listed), namespace=namespace, refused=namespace_refused, retry=RETRY
    )
