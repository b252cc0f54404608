"""The cluster's own schemas, through whichever client the operator uses: its OpenAPI v3 documents, fetched once
(all group-versions at once) and optionally kept in a file cache; then, when the matcher meets a kind the schema
does not know (a CRD created since), the group-versions that are new since, at most once every few seconds.

The cache file is named after the content hashes the server puts in its OpenAPI v3 index, so an upgrade or
a new or changed CRD gives a new file, and a hit costs one small request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import hashlib
import inspect
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from kapply.errors import KapplyError
from kapply.matcher.schema import Schema
from kapply.resources.cluster import OPENAPI_V3, Cluster, KubernetesApiClient, api_client_get
from kapply.resources.kubeconfig import KubeconfigFlags, KubeContext, load

Document = Mapping[str, Any]  # an OpenAPI document, or any JSON object the API server answers with
Get = Callable[[str], Document] | Callable[[str], Awaitable[Document]]
DEFAULT_REFRESH_INTERVAL = 10.0  # seconds

_log = logging.getLogger(__name__)
_T = TypeVar("_T")
_AsyncGet = Callable[[str], Awaitable[Document | None]]
_Work = Callable[[_AsyncGet], Coroutine[Any, Any, None]]


class Getter(Protocol):
    """Any client with a `get(path)` that returns the decoded JSON the API server answers at `path` (a path such
    as `/openapi/v3/apis/apps/v1?hash=...`), or an awaitable of it."""

    def get(self, path: str, /) -> Document | Awaitable[Document]: ...


SchemaSource = Cluster | KubernetesApiClient | Getter | Get | Document


async def fetch_schema(
    source: SchemaSource, *, cache_dir: Path | None = None, refresh_interval: float | None = DEFAULT_REFRESH_INTERVAL
) -> Schema:
    """The schemas of every group-version the cluster serves, built-in and custom.

    `source` is kapply's `Cluster`, the official client's `ApiClient`, a function or an object with a `get(path)`
    method (sync or async) that returns the decoded JSON at a path of the API server, or an OpenAPI v2 or v3
    document itself. A kind the schema is later asked for and does not know makes it fetch the group-versions new
    since, at most once every `refresh_interval` seconds (None: never); a document is never refreshed."""
    if isinstance(source, Mapping):
        return Schema.from_openapi([source])
    get, run = _connect(source)
    urls = await _group_versions(get)
    refresh = None if refresh_interval is None else _Refresh(run, urls, refresh_interval)
    cache_file = None
    if cache_dir is not None:
        digest = hashlib.sha256("\n".join(sorted(urls)).encode()).hexdigest()[:32]
        cache_file = Path(cache_dir) / f"openapi-{digest}.json"
        if cache_file.exists():
            return Schema.from_json(cache_file.read_bytes(), refresh=refresh)
    schema = Schema.from_openapi(await _documents(get, urls), refresh=refresh)
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        partial = cache_file.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(schema.to_json())
        partial.replace(cache_file)
    return schema


def fetch_schema_sync(
    source: SchemaSource, *, cache_dir: Path | None = None, refresh_interval: float | None = DEFAULT_REFRESH_INTERVAL
) -> Schema:
    """`fetch_schema` for synchronous code, even when it runs inside an event loop (an async handler that calls a
    sync function): then on a worker thread, with a loop of its own, while the caller waits. kapply's `Cluster`
    is not used itself (its connections belong to the loop it runs on): a new one, for the same context, is."""
    if isinstance(source, Cluster):
        context = source.context

        async def fetch() -> Schema:
            async with Cluster(context) as cluster:
                return await fetch_schema(cluster, cache_dir=cache_dir, refresh_interval=refresh_interval)

        return _run_sync(fetch)
    return _run_sync(lambda: fetch_schema(source, cache_dir=cache_dir, refresh_interval=refresh_interval))


def schema_from_kubeconfig(
    path: str | None = None,
    *,
    context: str | None = None,
    cache_dir: Path | None = None,
    refresh_interval: float | None = DEFAULT_REFRESH_INTERVAL,
) -> Schema:
    """`fetch_schema_sync` for the cluster a kubeconfig selects (kapply's precedence: `path`, `$KAPP_KUBECONFIG`,
    `$KUBECONFIG`, `~/.kube/config`)."""
    cluster = Cluster(load(KubeconfigFlags(path=path, context=context)))  # never connected: see fetch_schema_sync
    return fetch_schema_sync(cluster, cache_dir=cache_dir, refresh_interval=refresh_interval)


def _run_sync(work: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Runs a coroutine to completion for synchronous code: on this thread, or, when this thread is already running
    an event loop (sync code called from an async handler, where `asyncio.run` refuses), on a worker thread with
    a loop of its own. The calling thread waits either way."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="kapply-matcher") as pool:
        return pool.submit(lambda: asyncio.run(work())).result()


def _is_group_version(path: str) -> bool:
    parts = path.split("/")
    return (parts[0] == "api" and len(parts) == 2) or (parts[0] == "apis" and len(parts) == 3)


async def _group_versions(get: _AsyncGet) -> frozenset[str]:
    """The URLs of the group-versions in the server's OpenAPI v3 index (each with its content hash)."""
    index = await get(OPENAPI_V3)
    if not index:
        raise KapplyError(f"The API server serves no OpenAPI v3 index at {OPENAPI_V3}")
    paths: Mapping[str, Any] = index.get("paths") or {}
    return frozenset(entry["serverRelativeURL"] for path, entry in paths.items() if _is_group_version(path))


async def _documents(get: _AsyncGet, urls: frozenset[str]) -> list[Document]:
    """The documents at `urls`, all at once; one gone since the index was read (a CRD deleted) is left out."""
    return [document for document in await asyncio.gather(*map(get, sorted(urls))) if document]


class _Refresh:
    """Brings the group-versions new since the last fetch into a schema that meets a kind it does not know, at most
    once every `interval` seconds; a failure is logged, and the kind compared as JSON as it would be without."""

    def __init__(self, run: Callable[[_Work], None], known: frozenset[str], interval: float) -> None:
        self._run = run
        self._known = known
        self._interval = interval
        self._lock = threading.Lock()
        self._next = 0.0

    def __call__(self, schema: Schema) -> None:
        with self._lock:
            now = time.monotonic()
            if now < self._next:
                return
            self._next = now + self._interval
        try:
            self._run(functools.partial(self._update, schema))
        except Exception as e:
            _log.warning("Refreshing the matcher's schema failed: %s", e)

    async def _update(self, schema: Schema, get: _AsyncGet) -> None:
        urls = await _group_versions(get)
        documents = await _documents(get, urls - self._known)
        if documents:
            schema.update(documents)
        self._known = urls


def _connect(source: Cluster | KubernetesApiClient | Getter | Get) -> tuple[_AsyncGet, Callable[[_Work], None]]:
    """How to GET a path in the running event loop, and how to run a refresh from synchronous code later."""
    if isinstance(source, Cluster):
        return source.document, functools.partial(_run_in_new_cluster, source.context)
    get: Callable[[str], Any]
    if isinstance(source, KubernetesApiClient):
        get = api_client_get(source)
    elif callable(source):
        get = source
    elif callable(getattr(source, "get", None)):
        get = source.get
    else:
        raise TypeError(f"Cannot fetch schemas through a {type(source).__name__}: it has no get(path)")
    if inspect.iscoroutinefunction(get):
        return get, functools.partial(_run_on_loop, asyncio.get_running_loop(), get)
    return _in_thread(get), functools.partial(_run_in_threads, get)


def _in_thread(get: Callable[[str], Any]) -> _AsyncGet:
    """A blocking `get` on the loop's worker threads, so that the group-versions are still fetched at once. What
    it returns may be awaitable after all (a lambda around an async client)."""

    async def threaded(path: str) -> Document | None:
        result = await asyncio.to_thread(get, path)
        if inspect.isawaitable(result):
            result = await result
        document: Document | None = result
        return document

    return threaded


def _run_in_new_cluster(context: KubeContext, work: _Work) -> None:
    """kapply's Cluster belongs to the loop it runs on, which may be the one waiting here: a new one, for the same
    context, on a loop of its own."""

    async def connected() -> None:
        async with Cluster(context) as cluster:
            await work(cluster.document)

    _run_sync(connected)


def _run_in_threads(get: Callable[[str], Any], work: _Work) -> None:
    _run_sync(lambda: work(_in_thread(get)))


def _run_on_loop(loop: asyncio.AbstractEventLoop, get: _AsyncGet, work: _Work) -> None:
    """An async client belongs to the loop it was first used on: while that loop runs, the refresh runs there, in
    the background (waiting for it here could deadlock that very loop), and the comparisons made meanwhile treat
    the kind as unknown. Without a running loop, the refresh runs on a loop of its own."""
    if loop.is_running():
        future = asyncio.run_coroutine_threadsafe(work(get), loop)
        future.add_done_callback(_log_failure)
    else:
        _run_sync(lambda: work(get))


def _log_failure(future: concurrent.futures.Future[None]) -> None:
    if not future.cancelled() and (error := future.exception()) is not None:
        _log.warning("Refreshing the matcher's schema failed: %s", error)
