"""The one module that talks to the Kubernetes API.

Objects are plain dicts. Requests are async, over kapply.transport's pool of
HTTP/1.1 connections (h11: docs/design.md), with the TLS context
and credentials of the kubeconfig context (kapply.resources.auth). Discovery
uses the aggregated discovery endpoints (two requests for the whole API
surface) and is cached for the life of the client. Nothing else in kapply
builds URLs or reads HTTP errors (tests/unit/test_cluster_seam.py checks it): the
subresources (an object's status and finalizers, a service account's token, a
container's log), the versioned LIST, `/version`, OpenAPI documents and the one
list-then-watch loop are here.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import operator
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict, TypeVar, runtime_checkable
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import orjson

from kapply import objects
from kapply.errors import ClusterError, ConcurrencyError, ManifestError
from kapply.objects import Obj
from kapply.resources.auth import credentials, ssl_context
from kapply.resources.kubeconfig import KubeContext
from kapply.resources.names import path_segment_problems
from kapply.transport import Endpoint, Failure, Pool, TransportError, failure_of, in_words

_log = logging.getLogger("kapply")

FIELD_MANAGER = "kapply"
USER_AGENT = "kapply"  # what the API server's audit log and metrics call the client
# Objects per LIST page. kapp lists without a limit (one response per type); 10,000 keeps a LIST of an app's objects
# one request up to that size (a redeploy costs one LIST per type whatever N) while still bounding a page's memory.
LIST_PAGE_SIZE = 10_000
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"  # list_metadata's answer
AGGREGATED_DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
# Told every answer of the API server to any Cluster of the process: the cluster, the HTTP method (WATCH for a watch
# stream) and the status code. The controller counts them for its metrics (kapply.controller.main), its Apps' clients
# (one per service-account token) included.
REQUEST_OBSERVERS: list[Callable[[Cluster, str, int], None]] = []


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served group/version/kind and how to reach it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: frozenset[str]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str = "") -> str:
        """The request path (of an object's `subresource`: `status`, `token`, `log`); every segment checked (a name
        such as `..` or `a/b` is refused) and escaped."""
        base = (
            f"/apis/{_segment(self.group)}/{_segment(self.version)}" if self.group else f"/api/{_segment(self.version)}"
        )
        ns = f"/namespaces/{_segment(namespace, 'namespace')}" if self.namespaced and namespace else ""
        path = f"{base}{ns}/{_segment(self.plural)}" + (f"/{_segment(name)}" if name else "")
        return f"{path}/{_segment(subresource)}" if name and subresource else path


@functools.lru_cache(maxsize=4096)
def _segment(value: str, what: str = "resource name") -> str:
    """A path segment, checked and escaped. Remembered: a deploy or delete of N resources builds ~3 N paths from a
    few types' segments and the objects' names (issue 33: ~15 us a path, 4-5 ms of a delete of 100)."""
    problems = path_segment_problems(value)
    if problems:
        raise ManifestError(f"invalid {what} {orjson.dumps(value).decode()}: [{', '.join(problems)}]")
    return quote(value, safe=":@")


@dataclass(frozen=True)
class Discovery:
    """Every served resource type; within a group the preferred version comes first. `failing`: the group versions
    (`metrics.k8s.io/v1beta1`) whose aggregated API server did not answer (an APIService that is not available)."""

    types: tuple[ResourceType, ...]
    failing: frozenset[str] = frozenset()
    _by_version_kind: dict[tuple[str, str], ResourceType] = field(init=False, repr=False, compare=False)
    _by_group_kind: dict[tuple[str, str], ResourceType] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_version_kind: dict[tuple[str, str], ResourceType] = {}
        by_group_kind: dict[tuple[str, str], ResourceType] = {}
        for t in self.types:
            by_version_kind.setdefault((t.api_version, t.kind), t)
            by_group_kind.setdefault((t.group, t.kind), t)
        object.__setattr__(self, "_by_version_kind", by_version_kind)
        object.__setattr__(self, "_by_group_kind", by_group_kind)

    def find(self, api_version: str, kind: str) -> ResourceType | None:
        return self._by_version_kind.get((api_version, kind))

    def preferred(self, group: str, kind: str) -> ResourceType | None:
        return self._by_group_kind.get((group, kind))

    def listable(self) -> list[ResourceType]:
        """One type per group and kind (its preferred version) that can be listed: the same object is
        served under every version of its group, so listing one version finds it once."""
        return [t for t in self._by_group_kind.values() if "list" in t.verbs]


SERVICE_ACCOUNTS = ResourceType("", "v1", "ServiceAccount", "serviceaccounts", True, frozenset({"get"}))
OPENAPI_V3 = "/openapi/v3"  # the index of the OpenAPI v3 documents, one per group version (kapply.matcher)
# A write made again after a conflict (409: another writer changed the object since it was read), each time on the
# object read afresh; after that many, ConcurrencyError: the caller's reconcile is tried again within seconds.
CONFLICT_ATTEMPTS = 5

MAX_ATTEMPTS = 10  # in all; client-go makes at most 11 (its default of 10 retries)
MAX_DELAY = 8.0  # seconds between attempts, at most
RESET_DELAY = 1.0  # client-go's wait before a GET whose connection was reset is sent again
CONNECTIONS = 16  # open at once for requests (a watch or log stream takes one for itself); see docs/design.md
_SECONDS = re.compile(r"[+-]?[0-9]+")  # a Retry-After client-go reads (strconv.Atoi): whole seconds


def retry_delay(
    method: str, attempt: int, *, status: int = 0, retry_after: str | None = None, failure: Failure | None = None
) -> float | None:
    """How long to wait before attempt `attempt + 1` of a request that failed, or None when it must not be retried.

    What client-go's rest.Request retries (request.go, with_retry.go's IsNextRetry and checkWait), and nothing else:
    an answer of 429 or 5xx that carries Retry-After in whole seconds (API Priority and Fairness, "storage is
    (re)initializing", a server shutting down: the request was not processed), for any method, after that time; and a
    GET whose connection was reset or closed before its answer was complete (net.IsConnectionReset, IsProbableEOF),
    after RESET_DELAY. A refused connection, an unknown host, a TLS failure or a timeout ends the request at once:
    waiting does not make a port listen, a name resolve or a certificate trusted, and a user (or the controller's
    backoff) decides what to do next. At most MAX_ATTEMPTS, each wait at most MAX_DELAY.
    """
    if attempt >= MAX_ATTEMPTS:
        return None
    if failure is not None:
        return RESET_DELAY if failure is Failure.RESET and method == "GET" else None
    if (status != 429 and status < 500) or retry_after is None or not _SECONDS.fullmatch(retry_after.strip()):
        return None
    return min(MAX_DELAY, max(0.0, float(retry_after)))


_T = TypeVar("_T")


async def once_answered(write: Callable[[], Awaitable[_T]], grace: float, interval: float = 0.5) -> _T:
    """`write()`, tried again every `interval` seconds for up to `grace` seconds while the API server does not
    answer (a refused or broken connection: a restart). Not for a command's own requests, which fail at once as
    client-go's do, but for the writes that close what a failed run opened (its app-change, its hold on the app),
    which would otherwise stay behind once the server is back."""
    deadline = asyncio.get_running_loop().time() + grace
    while True:
        try:
            return await write()
        except ClusterError as e:
            if not e.unanswered or asyncio.get_running_loop().time() >= deadline:
                raise
        await asyncio.sleep(interval)


def jittered(delay: float) -> float:
    """The delay stretched by a random part of itself (at most MAX_DELAY). API Priority and Fairness answers every
    request of a burst it rejects with the same Retry-After: retried after exactly that time, they would all come back
    at once and be rejected together again (and the server, seeing rejections go on, asks for ever longer waits)."""
    import random  # here: only a retry needs it (~1 ms of every command's start)

    return min(MAX_DELAY, delay * (1 + random.random()))


TRANSPORT_ERRORS = (TransportError, TimeoutError)


WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_WARNING = re.compile(r'\s*(\d{3})\s+\S+\s+"((?:[^"\\]|\\.)*)"(?:\s+"[^"]*")?\s*(?:,|$)')


def warnings_of(headers: Iterable[str]) -> list[str]:
    """The API server's warnings in `Warning` headers (RFC 7234: `299 - "text"`, several per header separated by
    commas), as client-go reads them: code 299 only, escapes undone, empty texts dropped. A header that does not
    parse is skipped."""
    found = []
    for header in headers:
        position = 0
        while position < len(header):
            match = _WARNING.match(header, position)
            if match is None:
                break
            position = match.end()
            text = re.sub(r"\\(.)", r"\1", match.group(2))
            if match.group(1) == "299" and text:
                found.append(text)
    return found


def _log_warning(text: str) -> None:
    _log.warning("Warning: %s", text)


def _error(status: int, reason: str, body: bytes, context: str = "") -> ClusterError:
    try:
        answer = orjson.loads(body)
        message, why = answer.get("message", ""), answer.get("reason", "")
    except (orjson.JSONDecodeError, AttributeError):
        message, why = body.decode(errors="replace").strip() or reason, ""
    return ClusterError(
        f"{context}API server says: {message} (reason: {why or reason})", status=status, reason=why, detail=message
    )


def _stale_from_aggregated(doc: Obj) -> set[str]:
    """The group versions aggregated discovery marks `Stale`: their API server (an APIService's) did not answer."""
    out = set()
    for group in doc.get("items", []):
        name = group.get("metadata", {}).get("name", "")
        for version in group.get("versions", []):
            if version.get("freshness") == "Stale":
                out.add(f"{name}/{version['version']}" if name else version["version"])
    return out


def _types_from_aggregated(doc: Obj) -> list[ResourceType]:
    types = []
    for group in doc.get("items", []):
        name = group.get("metadata", {}).get("name", "")
        for version in group.get("versions", []):
            for r in version.get("resources", []):
                kind = (r.get("responseKind") or {}).get("kind")
                if kind:
                    types.append(
                        ResourceType(
                            name,
                            version["version"],
                            kind,
                            r["resource"],
                            r.get("scope") == "Namespaced",
                            frozenset(r.get("verbs", [])),
                        )
                    )
    return types


def _request_options(context: KubeContext) -> dict[str, Any]:
    """What every request to the cluster adds: the name its certificate must carry (`tls-server-name`) and the proxy,
    the kubeconfig's `proxy-url` or else, as client-go, `HTTPS_PROXY`/`HTTP_PROXY` unless `NO_PROXY` names the server.
    The environment is read here, once, and never ~/.netrc (aiohttp's `trust_env` looked each request up there and
    sent any password it found to the API server)."""
    cluster = context.cluster
    options: dict[str, Any] = {}
    if cluster.tls_server_name:
        options["server_hostname"] = cluster.tls_server_name
    proxy = cluster.proxy_url if cluster.proxy_url is not None else _environment_proxy(cluster.server)
    if proxy:
        options["proxy"] = proxy
    return options


def _environment_proxy(server: str) -> str | None:
    """The proxy the environment names for `server`, as urllib reads it. urllib.request (~17 ms to import) is imported
    only where it could find one: on Linux only `*_proxy` variables name a proxy (macOS and Windows have system
    settings too)."""
    if sys.platform not in ("darwin", "win32") and not any(name.lower().endswith("_proxy") for name in os.environ):
        return None
    from urllib.request import getproxies, proxy_bypass

    url = urlsplit(server)
    return None if proxy_bypass(url.hostname or "") else getproxies().get(url.scheme)


class RequestOptions(TypedDict, total=False):
    """Cluster.request's keyword arguments, for the subclasses that wrap it to pass on as they are."""

    params: dict[str, str] | None
    body: Any
    content_type: str
    accept: str


class Cluster:
    """An async connection to one cluster, as the kubeconfig's selected context describes it."""

    def __init__(self, context: KubeContext, *, timeout: float = 60) -> None:
        self.context = context
        self.server: str = context.cluster.server
        self.namespace: str | None = context.namespace
        self._timeout = timeout
        self._credentials = credentials(context)
        self._options = _request_options(context)
        url = urlsplit(self.server)
        self._host, self._port = url.hostname or "", url.port  # what a failure to connect names
        self._prefix = url.path.rstrip("/")  # a server's own path (a proxy's, say: https://host/k8s/clusters/c-1)
        self._pool: Pool | None = None
        self._discovery: Discovery | None = None
        self._discovery_lock = asyncio.Lock()
        self._read_ahead: dict[str, asyncio.Future[Obj | None]] = {}  # by path: GETs `read_ahead` sent
        # what is done with the API server's warnings (a deprecated API version, say): logged, unless a user of the
        # cluster says otherwise (the CLI shows them as kapp does)
        self.on_warning: Callable[[str], None] = _log_warning

    def _session(self) -> Pool:
        """The pool is made on first use, in the running event loop (its connections belong to it): requests share
        at most CONNECTIONS keep-alive connections; each watch and log stream has one of its own, so a long stream
        never holds up a request. The TLS context (~3 ms: the kubeconfig's CA and client certificate) is made with
        it, and again after close()."""
        if self._pool is None:
            tls = ssl_context(self.context) if self.server.startswith("https:") else None
            endpoint = Endpoint.of(
                self.server, tls, server_hostname=self._options.get("server_hostname"), proxy=self._options.get("proxy")
            )
            headers = {"User-Agent": USER_AGENT}
            if not self.context.cluster.disable_compression:
                headers["Accept-Encoding"] = "gzip"
            self._pool = Pool(
                endpoint, limit=CONNECTIONS, headers=headers, connect_timeout=self._timeout, read_timeout=self._timeout
            )
        return self._pool

    def warm(self, requests: int, gets: int = 0) -> None:
        """About `requests` requests (writes, a connection each) and `gets` GETs (which the transport pipelines on
        fewer connections) are to be sent together soon: open the connections they will use now, while what comes
        before them is under way, so that their TCP and TLS handshakes are not on the step's way (2 round trips at a
        distance, bench/why.md). Connections the pool has count; at most CONNECTIONS. Only once a request was sent (a
        client that sent none has no pool yet, nor a step under way)."""
        if self._pool is not None:
            self._pool.warm(requests, gets)

    def read_ahead(self, rtype: ResourceType, namespace: str | None, name: str) -> None:
        """Sends the GET of one object now; the next `get` of it takes this answer (once) instead of asking. For a
        read its caller knows is coming before the code that makes it is ready (the CLI's app record, while the
        planning code imports: issue 33, a round trip hidden). A name that cannot be a path sends nothing (its
        `get` says why)."""
        try:
            path = rtype.path(namespace, name)
        except ManifestError:
            return
        if path not in self._read_ahead:
            self._read_ahead[path] = asyncio.ensure_future(self._get(path))

    async def close(self) -> None:
        ahead, self._read_ahead = list(self._read_ahead.values()), {}
        for answer in ahead:  # never taken: its outcome is nobody's
            answer.cancel()
        await asyncio.gather(*ahead, return_exceptions=True)
        if self._pool is not None:
            await self._pool.close()
        self._pool = None

    async def __aenter__(self) -> Cluster:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    def _url(self, path: str, params: dict[str, str] | None) -> str:
        """The request target: an already escaped path (see ResourceType.path) and its query, under the server's own
        path prefix, if any."""
        query = f"?{urlencode(params, quote_via=quote)}" if params else ""
        return f"{self._prefix}{path}{query}"

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> Any:
        headers = {"Accept": accept}
        content = None
        if body is not None:
            content = orjson.dumps(body)
            headers["Content-Type"] = content_type
        url = self._url(path, params)
        request = f"Request {method} {path} to {self.server}"
        # as kapp: the warnings of writes (a deprecated API version, say), not of reads nor of dry runs
        warns = method in WRITES and not (params or {}).get("dryRun")
        attempt = 0
        while True:
            attempt += 1
            try:
                status, reason, retry_after, answer = await self._send(method, url, content, headers, warns=warns)
            except TRANSPORT_ERRORS as e:
                delay = retry_delay(method, attempt, failure=failure_of(e))
                if delay is None:
                    tried = f" (after {attempt} attempts)" if attempt > 1 else ""
                    raise ClusterError(f"{request} failed{tried}: {in_words(e, self._host, self._port)}") from e
            else:
                if status < 400:
                    return orjson.loads(answer) if answer else None
                delay = retry_delay(method, attempt, status=status, retry_after=retry_after)
                if delay is None:  # an answer retried until now (a 429 storm, say) names the request too
                    raise _error(
                        status, reason, answer, f"{request} failed (after {attempt} attempts): " if attempt > 1 else ""
                    )
            delay = jittered(delay)
            _log.info("retrying %s %s in %.2fs (attempt %d of %d)", method, path, delay, attempt + 1, MAX_ATTEMPTS)
            await asyncio.sleep(delay)

    async def _send(
        self, method: str, url: str, content: bytes | None, headers: dict[str, str], *, warns: bool
    ) -> tuple[int, str, str | None, bytes]:
        """One request, authenticated; sent once more with renewed credentials when the server answers 401. With
        `warns`, the server's warnings go to `on_warning`."""
        authorization = await self._credentials.header()
        renewable = True
        while True:
            if authorization is not None:
                headers["Authorization"] = authorization
            started = time.monotonic()
            response = await self._session().request(method, url, headers, content)
            _log.debug("%s %s: %d (%.3fs)", method, url, response.status, time.monotonic() - started)
            for observe in REQUEST_OBSERVERS:
                observe(self, method, response.status)
            if warns:
                for text in warnings_of(response.header_values("Warning")):
                    self.on_warning(text)
            if response.status == 401 and renewable:
                renewable = False
                renewed = await self._credentials.renewed(authorization)
                if renewed is not None:
                    authorization = renewed
                    continue
            return response.status, response.reason, response.header("Retry-After"), response.body

    async def discovery(self, refresh: bool = False) -> Discovery:
        async with self._discovery_lock:
            if self._discovery is None or refresh:
                core, groups = await asyncio.gather(
                    self.request("GET", "/api", accept=AGGREGATED_DISCOVERY),
                    self.request("GET", "/apis", accept=AGGREGATED_DISCOVERY),
                )
                failing: set[str] = set()
                if core.get("kind") == "APIGroupDiscoveryList" and groups.get("kind") == "APIGroupDiscoveryList":
                    types = _types_from_aggregated(core) + _types_from_aggregated(groups)
                    failing = _stale_from_aggregated(core) | _stale_from_aggregated(groups)
                else:
                    types = await self._legacy_discovery(core, groups, failing)
                self._discovery = Discovery(tuple(types), frozenset(failing))
            return self._discovery

    async def _legacy_discovery(self, core: Obj, groups: Obj, failing: set[str]) -> list[ResourceType]:
        """Per group-version discovery for API servers without aggregated discovery (before 1.26); a group version
        whose API server is unavailable (503) is added to `failing`."""
        group_versions = [("", v) for v in core.get("versions", [])]
        for g in groups.get("groups", []):
            preferred = g["preferredVersion"]["version"]
            versions = [preferred] + [v["version"] for v in g["versions"] if v["version"] != preferred]
            group_versions += [(g["name"], v) for v in versions]

        async def one(group: str, version: str) -> list[ResourceType]:
            path = f"/apis/{group}/{version}" if group else f"/api/{version}"
            try:
                doc = await self.request("GET", path)
            except ClusterError as e:
                if e.status != 503:
                    raise
                failing.add(f"{group}/{version}" if group else version)
                return []
            return [
                ResourceType(group, version, r["kind"], r["name"], r["namespaced"], frozenset(r["verbs"]))
                for r in doc.get("resources", [])
                if "/" not in r["name"]
            ]

        results = await asyncio.gather(*(one(g, v) for g, v in group_versions))
        return [t for ts in results for t in ts]

    async def target(self) -> str:
        """kapp's `Target cluster '<server>' (nodes: <oldest>, <N-1>+)`; without the nodes if they can't be listed."""
        try:
            page = await self.request("GET", "/api/v1/nodes", params={"limit": "500"})
        except ClusterError:
            return self.unnamed_target()
        nodes = sorted(page.get("items") or [], key=lambda n: n["metadata"].get("creationTimestamp", ""))
        if not nodes:
            return self.unnamed_target()
        more = f", {len(nodes) - 1}+" if len(nodes) > 1 else ""
        return f"{self.unnamed_target()} (nodes: {nodes[0]['metadata']['name']}{more})"

    def unnamed_target(self) -> str:
        """kapp's target line when the nodes are not known (not listed, or not waited for)."""
        return f"Target cluster '{self.server}'"

    async def _object(self, method: str, path: str, **kwargs: Any) -> Obj:
        """A request whose answer is an object."""
        answer: Obj = await self.request(method, path, **kwargs)
        return answer

    async def get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        path = rtype.path(namespace, name)
        ahead = self._read_ahead.pop(path, None)
        return await (ahead if ahead is not None else self._get(path))

    async def _get(self, path: str) -> Obj | None:
        try:
            return await self._object("GET", path)
        except ClusterError as e:
            if e.status == 404:
                return None
            raise

    async def list_with_version(
        self,
        rtype: ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
    ) -> tuple[list[Obj], str]:
        """`list`, by labels and fields, and the resourceVersion the LIST was served at, which a watch then starts
        from (as client-go's reflector: each event after it is one the list did not show). `limit`: at most that
        many objects (one page)."""
        items, version = await self._listed(rtype, namespace, label_selector, field_selector, limit, "application/json")
        for item in items:
            item["apiVersion"], item["kind"] = rtype.api_version, rtype.kind
        return items, version

    async def list_metadata(
        self,
        rtype: ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]:
        """The `metadata` of a type's objects, by labels and fields, page by page: the API server answers with a
        PartialObjectMetadataList, so nothing else of them (a Secret's data) reaches this process."""
        items, _ = await self._listed(rtype, namespace, label_selector, field_selector, None, METADATA_LIST)
        return [objects.metadata(item) for item in items]

    async def _listed(
        self,
        rtype: ResourceType,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
        limit: int | None,
        accept: str,
    ) -> tuple[list[Obj], str]:
        params = {"limit": str(limit or LIST_PAGE_SIZE)}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        items: list[Obj] = []
        version = ""
        while True:
            page = await self.request("GET", rtype.path(namespace), params=params, accept=accept)
            meta = objects.metadata(page)
            version = version or str(meta.get("resourceVersion") or "")
            items += page.get("items") or []
            token = meta.get("continue")
            if not token or limit is not None:
                return items, version
            params = {**params, "continue": str(token)}

    async def list(
        self, rtype: ResourceType, *, label_selector: str | None = None, namespace: str | None = None
    ) -> list[Obj]:
        """All objects of a type (cluster-wide unless namespace is given), page by page. Items get the
        apiVersion and kind a LIST leaves out."""
        items, _ = await self.list_with_version(rtype, label_selector=label_selector, namespace=namespace)
        return items

    async def create(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        namespace = objects.namespace(obj) or None
        return await self._object("POST", rtype.path(namespace), body=obj, params=self._write_params(dry_run))

    async def update(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        meta = obj["metadata"]
        return await self._object(
            "PUT", rtype.path(meta.get("namespace"), meta["name"]), body=obj, params=self._write_params(dry_run)
        )

    async def patch(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str = "application/json-patch+json",
    ) -> Obj:
        return await self._object(
            "PATCH",
            rtype.path(namespace, name),
            body=patch,
            content_type=patch_type,
            params={"fieldManager": FIELD_MANAGER},
        )

    async def delete(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        propagation: str = "Background",
    ) -> Obj | None:
        """Delete; an object that is already gone counts as deleted. Returns the server's answer: a Status when it
        removed the object at once, the object itself (as deleted, or with its deletionTimestamp while finalizers or
        a grace period hold it) for types that answer so; None when it was gone already or nothing was answered."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            answer = await self.request("DELETE", rtype.path(namespace, name), body=body)
        except ClusterError as e:
            if e.status != 404:
                raise
            return None
        return answer if isinstance(answer, dict) else None

    async def write_status(
        self, rtype: ResourceType, obj: Obj, status: Obj, *, unchanged: Callable[[Obj, Obj], bool] = operator.eq
    ) -> None:
        """PUT `status` through the object's status subresource, unless `unchanged(stored status, status)`; `obj`
        takes the stored resourceVersion and status. The one conflict policy, for Apps and packages alike: on a
        conflict the object is read afresh and the status written over it; after CONFLICT_ATTEMPTS conflicts,
        ConcurrencyError (the reconcile is tried again: a status is never dropped silently). An object gone (404,
        or not found when read afresh: deleted, its finalizer already off) has no status left to write."""
        namespace, name = objects.namespace(obj) or None, objects.name(obj)
        path = rtype.path(namespace, name, "status")
        current = obj
        for _ in range(CONFLICT_ATTEMPTS):
            if unchanged(current.get("status") or {}, status):
                return
            written = True
            try:
                stored = await self.request("PUT", path, body={**current, "status": status})
            except ClusterError as e:
                if e.status == 404:
                    return
                if e.status != 409:
                    raise
                latest = await self.get(rtype, namespace, name)
                if latest is None:
                    return
                stored, written = latest, False
            obj["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
            obj["status"] = stored.get("status")
            if written:
                return
            current = stored
        raise ConcurrencyError(
            f"Writing the status of {rtype.kind} {_named(namespace, name)}: changed by others {CONFLICT_ATTEMPTS} times"
        )

    async def add_finalizer(self, rtype: ResourceType, obj: Obj, finalizer: str) -> None:
        """Add `finalizer` (an update; before a deploy applies anything), unless the object has it. `obj` may be the
        object as a watch last showed it: on a conflict the finalizer is added to the object read afresh. `obj` takes
        the stored metadata and status (its spec stays as the reconcile read it). ConcurrencyError after
        CONFLICT_ATTEMPTS conflicts; an object gone is left alone."""
        namespace, name = objects.namespace(obj) or None, objects.name(obj)
        current = obj
        for _ in range(CONFLICT_ATTEMPTS):
            finalizers = current["metadata"].get("finalizers") or []
            if finalizer in finalizers:
                break
            try:
                current = await self.update(
                    rtype, {**current, "metadata": {**current["metadata"], "finalizers": [*finalizers, finalizer]}}
                )
                break
            except ClusterError as e:
                if e.status != 409:
                    raise
            latest = await self.get(rtype, namespace, name)
            if latest is None:
                return
            current = latest
        else:
            raise ConcurrencyError(
                f"Adding the finalizer of {rtype.kind} {_named(namespace, name)}: changed by others "
                f"{CONFLICT_ATTEMPTS} times"
            )
        if current is not obj:
            obj["metadata"] = current["metadata"]
            obj["status"] = current.get("status")

    async def remove_finalizer(self, rtype: ResourceType, namespace: str | None, name: str, finalizer: str) -> None:
        """Remove `finalizer` from the object read afresh (the object may then go). ConcurrencyError after
        CONFLICT_ATTEMPTS conflicts, so that the reconcile is tried again rather than a deleting object left behind;
        an object gone, or without the finalizer, is left alone."""
        for _ in range(CONFLICT_ATTEMPTS):
            obj = await self.get(rtype, namespace, name)
            finalizers = (obj or {}).get("metadata", {}).get("finalizers") or []
            if obj is None or finalizer not in finalizers:
                return
            obj["metadata"]["finalizers"] = [f for f in finalizers if f != finalizer]
            try:
                await self.update(rtype, obj)
                return
            except ClusterError as e:
                if e.status != 409:
                    raise
        raise ConcurrencyError(
            f"Removing the finalizer of {rtype.kind} {_named(namespace, name)}: changed by others "
            f"{CONFLICT_ATTEMPTS} times"
        )

    async def request_token(self, namespace: str, account: str, seconds: int) -> str:
        """A token of the service account `namespace/account`, valid for `seconds` (the TokenRequest API)."""
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds},
        }
        answer = await self._object("POST", SERVICE_ACCOUNTS.path(namespace, account, "token"), body=request)
        token: str = answer["status"]["token"]
        return token

    async def group_version(self, group: str, version: str) -> Obj:
        """The resources one group version serves (its discovery document, `APIResourceList`), read afresh."""
        return await self._object("GET", f"/apis/{group}/{version}")

    async def server_version(self) -> Obj:
        """The API server's `/version` (`gitVersion`, `major`, `minor`, ...)."""
        return await self._object("GET", "/version")

    async def document(self, path: str) -> Obj | None:
        """The JSON document served at `path` (OPENAPI_V3's index, or a document as the index names it); None when
        there is none (404)."""
        try:
            return await self._object("GET", path)
        except ClusterError as e:
            if e.status == 404:
                return None
            raise

    @asynccontextmanager
    async def log_lines(
        self, pods: ResourceType, namespace: str, name: str, container: str, *, follow: bool, tail: int | None
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """The lines of a container's log (see stream_lines), streamed while `follow`; `tail`: the last lines only."""
        params = {"container": container, "follow": "true" if follow else "false"}
        if tail is not None:
            params["tailLines"] = str(tail)
        async with self.stream_lines(pods.path(namespace, name, "log"), params, read_timeout=None) as lines:
            yield lines

    async def watch(
        self,
        rtype: ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int = 300,
    ) -> AsyncIterator[tuple[str, Obj]]:
        """The events of a type (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`) from `resource_version` on, until the
        server ends the watch (after about `timeout_seconds`). An `ERROR` event (410 Gone: the version is too old)
        raises ClusterError with its code: the caller lists again and watches from the list's version."""
        params = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": str(timeout_seconds)}
        if label_selector:
            params["labelSelector"] = label_selector
        if resource_version:
            params["resourceVersion"] = resource_version
        path = rtype.path(namespace)
        async with self.stream_lines(path, params, read_timeout=timeout_seconds + 30) as lines:
            async for line in lines:
                if not line.strip():
                    continue
                event = orjson.loads(line)
                kind, obj = event.get("type", ""), event.get("object") or {}
                if kind == "ERROR":
                    raise ClusterError(f"Watching {path}: {obj.get('message', '')}", status=obj.get("code", 0))
                if kind != "BOOKMARK":
                    obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind
                yield kind, obj

    @asynccontextmanager
    async def stream_lines(
        self, path: str, params: dict[str, str], *, read_timeout: float | None
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """A streamed answer (a watch, a followed log), line by line without the newlines; a last line without one
        is dropped. On a connection of its own; `read_timeout`: the longest silence accepted (None: no limit). A
        refusal or a broken stream raises ClusterError."""
        where = f"Request GET {path} to {self.server}"
        url = self._url(path, params)
        try:
            authorization = await self._credentials.header()
            headers = {"Accept": "application/json"} | ({"Authorization": authorization} if authorization else {})
            async with self._session().stream(url, headers, read_timeout) as (response, chunks):
                _log.debug("GET %s: %d (streamed)", url, response.status)
                for observe in REQUEST_OBSERVERS:
                    observe(self, "WATCH" if params.get("watch") else "GET", response.status)
                if response.status >= 400:
                    body = b"".join([chunk async for chunk in chunks])
                    raise _error(response.status, response.reason, body, f"{where}: ")

                async def lines() -> AsyncIterator[bytes]:
                    pending = b""
                    try:
                        async for chunk in chunks:
                            *complete, pending = (pending + chunk).split(b"\n")
                            for line in complete:
                                yield line
                    except TRANSPORT_ERRORS as e:
                        raise ClusterError(f"{where} failed: {in_words(e, self._host, self._port)}") from e

                yield lines()
        except TRANSPORT_ERRORS as e:
            raise ClusterError(f"{where} failed: {in_words(e, self._host, self._port)}") from e

    @staticmethod
    def _write_params(dry_run: bool) -> dict[str, str]:
        params = {"fieldManager": FIELD_MANAGER}
        if dry_run:
            params["dryRun"] = "All"
        return params


def _named(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


class Refusal(enum.Enum):
    """Why the API server would not list or watch a type: what the caller of `list_then_watch` decides about."""

    UNAUTHORIZED = 401  # the credentials are not (or no longer) taken
    FORBIDDEN = 403  # not allowed (RBAC)
    NOT_FOUND = 404  # the type is not served (its CRD is not installed), or the namespace is gone


class Follower(Protocol):
    """What `list_then_watch` keeps current, informer-style (kapply.controller.cache.Store is one)."""

    @property
    def version(self) -> str:
        """The resourceVersion to watch from: the last list's, then that of each event and bookmark."""
        ...

    def replace(self, listed: list[Obj], version: str) -> None:
        """A LIST's objects, and the version it was served at, replace everything."""

    def apply(self, event: str, obj: Obj) -> None:
        """One watch event, in order: `ADDED`, `MODIFIED`, `DELETED`, or `BOOKMARK` (which only moves the version)."""

    def lost(self) -> None:
        """The watch broke off (or was cancelled): what was seen may be behind until the next event or list."""


def _nothing(listed: list[Obj]) -> None:
    return None


@dataclass
class Events:
    """A follower that keeps no objects: it tells `event` each object a list finds (as `ADDED`) and each watch event
    but bookmarks, in order, and `relisted` what each list found (what went while no watch ran is not among it)."""

    event: Callable[[str, Obj], None]
    relisted: Callable[[list[Obj]], None] = _nothing
    version: str = ""

    def replace(self, listed: list[Obj], version: str) -> None:
        self.version = version
        for obj in listed:
            self.event("ADDED", obj)
        self.relisted(listed)

    def apply(self, event: str, obj: Obj) -> None:
        self.version = str(objects.metadata(obj).get("resourceVersion") or self.version)
        if event != "BOOKMARK":
            self.event(event, obj)

    def lost(self) -> None:
        return None  # nothing is served from it: the next event or list brings the caller up to date


Connect = Callable[[], Awaitable[Cluster]]  # a connection made afresh (an App's service account: its current token)


async def list_then_watch(
    connect: Cluster | Connect,
    rtype: ResourceType,
    follower: Follower,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    refused: Callable[[Refusal, ClusterError], float | None],
    retry: float,
) -> None:
    """The one list-then-watch loop (client-go's reflector): LIST, then WATCH from the list's resourceVersion, keeping
    `follower` current; a watch the server ends (its timeout), or one that broke (a lost connection, any failure
    other than those below: after `retry` seconds), starts again from `follower.version`. 410 Gone (that version is
    too old) lists again at once. A refusal (401, 403, 404) is the caller's policy: `refused` gives the seconds to
    wait before listing again, or None to stop. `connect` (a cluster, or a coroutine giving one: an App's client,
    with its token renewed) is asked before each list and watch. Runs until cancelled or stopped by `refused`."""
    where = f"{rtype.plural} in {namespace}" if namespace else rtype.plural
    relist = True
    while True:
        try:
            cluster = await connect() if callable(connect) else connect
            if relist or not follower.version:
                follower.replace(
                    *await cluster.list_with_version(rtype, namespace=namespace, label_selector=label_selector)
                )
                relist = False
            try:
                async for event, obj in cluster.watch(
                    rtype, namespace=namespace, label_selector=label_selector, resource_version=follower.version
                ):
                    follower.apply(event, obj)
            except BaseException:
                follower.lost()
                raise
        except ClusterError as e:
            if e.status == 410:
                relist = True
                continue
            refusal = next((r for r in Refusal if r.value == e.status), None)
            if refusal is None:
                _log.warning("watching %s: %s (again in %.0fs)", where, e, retry)
                await asyncio.sleep(retry)
                continue
            wait = refused(refusal, e)
            if wait is None:
                return
            relist = True
            await asyncio.sleep(wait)


@runtime_checkable
class KubernetesApiClient(Protocol):
    """The official `kubernetes` client's `ApiClient` (version 37 on): how it sends a GET with its own settings."""

    def param_serialize(self, method: str, resource_path: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]: ...

    def call_api(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any: ...


def api_client_get(client: KubernetesApiClient) -> Callable[[str], Obj | None]:
    """A GET of a path (`document`'s) with the official client's server, credentials and TLS settings, as its
    generated API methods send one; None when there is nothing there (404)."""

    def get(path: str) -> Obj | None:
        resource_path, _, query = path.partition("?")
        method, url, headers, *_ = client.param_serialize(
            "GET",
            resource_path,
            query_params=parse_qsl(query),
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        response = client.call_api(method, url, header_params=headers)
        response.read()
        if response.status == 404:
            return None
        if response.status >= 400:
            raise ClusterError(f"GET {path}: {response.status} {response.reason}", status=response.status)
        document: Obj = orjson.loads(response.data)
        return document

    return get
