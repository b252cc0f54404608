"""The one module that talks to the Kubernetes API.

Objects are plain dicts. Requests are async and share one HTTP/2 connection
(lightkube's configured httpx2 transport: kubeconfig TLS and auth), so many
can be in flight at once, as with client-go. Discovery uses the aggregated
discovery endpoints (two requests for the whole API surface) and is cached for
the life of the client. Nothing else in kapply builds URLs or reads HTTP errors.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx2
import orjson
from lightkube.config.client_adapter import ConnectionParams
from lightkube.config.kubeconfig import SingleConfig

from kapply import objects
from kapply.errors import ClusterError, ManifestError
from kapply.objects import Obj
from kapply.resources.kubeconfig import ExecCredentialAuth
from kapply.resources.names import path_segment_problems

_log = logging.getLogger("kapply")

FIELD_MANAGER = "kapply"
# Objects per LIST page. kapp lists without a limit (one response per type); 10,000 keeps a LIST of an app's objects
# one request up to that size (a redeploy costs one LIST per type whatever N) while still bounding a page's memory.
LIST_PAGE_SIZE = 10_000
AGGREGATED_DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


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

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The request path; every segment checked (a name such as `..` or `a/b` is refused) and escaped."""
        base = (
            f"/apis/{_segment(self.group)}/{_segment(self.version)}" if self.group else f"/api/{_segment(self.version)}"
        )
        ns = f"/namespaces/{_segment(namespace, 'namespace')}" if self.namespaced and namespace else ""
        return f"{base}{ns}/{_segment(self.plural)}" + (f"/{_segment(name)}" if name else "")


def _segment(value: str, what: str = "resource name") -> str:
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


IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "PATCH"})
MAX_ATTEMPTS = 10  # client-go's default number of retries
MAX_DELAY = 8.0  # seconds between attempts, at most


def retry_delay(
    method: str, attempt: int, *, status: int = 0, retry_after: str | None = None, error: Exception | None = None
) -> float | None:
    """How long to wait before attempt `attempt + 1` of a request that failed, or None when it must not be retried.

    As client-go: an answer of 429 or 5xx that carries Retry-After (API Priority and Fairness, "storage is
    (re)initializing", a server shutting down) means the request was not processed, so any request is retried
    after the time it names. Beyond client-go, a request that PUT, PATCH or DELETE may repeat safely (each carries
    a resourceVersion or UID precondition, or is a merge) is also retried on other 5xx answers (an etcd leader
    change) and on a lost connection; a POST only when it never reached the server. Bounded: MAX_ATTEMPTS in all,
    at most MAX_DELAY seconds apart, so a dead server fails the run in well under a minute plus timeouts.
    """
    if attempt >= MAX_ATTEMPTS:
        return None
    backoff: float = min(MAX_DELAY, 0.25 * 2.0 ** (attempt - 1))
    if error is not None:
        if isinstance(error, httpx2.ConnectError):  # refused or unreachable: the request was never sent
            return backoff
        retryable = (httpx2.TimeoutException, httpx2.NetworkError, httpx2.RemoteProtocolError)
        return backoff if method in IDEMPOTENT and isinstance(error, retryable) else None
    if status != 429 and status < 500:
        return None
    if retry_after is not None:
        try:
            return min(MAX_DELAY, max(0.0, float(retry_after)))
        except ValueError:
            return backoff
    return backoff if method in IDEMPOTENT and status in (429, 500, 502, 503, 504) else None


def jittered(delay: float) -> float:
    """The delay stretched by a random part of itself (at most MAX_DELAY). API Priority and Fairness answers every
    request of a burst it rejects with the same Retry-After: retried after exactly that time, they would all come back
    at once and be rejected together again (and the server, seeing rejections go on, asks for ever longer waits)."""
    return min(MAX_DELAY, delay * (1 + random.random()))


def _failure(error: Exception) -> str:
    """A transport error in words: some (timeouts) have an empty message."""
    text = str(error).strip()
    name = type(error).__name__
    return f"{name}: {text}" if text else f"{name} (no answer from the server)"


def _error(response: httpx2.Response, context: str = "") -> ClusterError:
    try:
        status = orjson.loads(response.content)
        message, reason = status.get("message", ""), status.get("reason", "")
    except (orjson.JSONDecodeError, AttributeError):
        message, reason = response.text.strip() or response.reason_phrase, ""
    return ClusterError(
        f"{context}API server says: {message} (reason: {reason or response.reason_phrase})",
        status=response.status_code,
        reason=reason,
        detail=message,
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


class Cluster:
    """An async connection to one cluster, as the kubeconfig's selected context describes it."""

    def __init__(self, config: SingleConfig, *, timeout: float = 60) -> None:
        params = ConnectionParams(timeout=httpx2.Timeout(timeout), http2=True).httpx_params(config)
        if config.user and config.user.exec:
            params["auth"] = ExecCredentialAuth(config.user.exec, config.cluster.server)
        self.config = config
        self.server: str = config.cluster.server
        self._timeout = timeout
        self.namespace: str | None = config.namespace
        self._http = httpx2.AsyncClient(**params)
        self._params = params
        self._http1: httpx2.AsyncClient | None = None
        self._watches: httpx2.AsyncClient | None = None
        self._discovery: Discovery | None = None
        self._discovery_lock = asyncio.Lock()

    async def close(self) -> None:
        await self._http.aclose()
        if self._http1 is not None:
            await self._http1.aclose()
        if self._watches is not None:
            await self._watches.aclose()

    async def __aenter__(self) -> Cluster:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

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
        request = f"Request {method} {path} to {self.server}"
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._send(method, path, params, content, headers)
            except httpx2.HTTPError as e:
                delay = retry_delay(method, attempt, error=e)
                if delay is None:
                    tried = f" (after {attempt} attempts)" if attempt > 1 else ""
                    raise ClusterError(f"{request} failed{tried}: {_failure(e)}") from e
            else:
                if response.status_code < 400:
                    return orjson.loads(response.content) if response.content else None
                delay = retry_delay(
                    method, attempt, status=response.status_code, retry_after=response.headers.get("Retry-After")
                )
                if delay is None:  # an answer retried until now (a 429 storm, say) names the request too
                    raise _error(response, f"{request} failed (after {attempt} attempts): " if attempt > 1 else "")
            delay = jittered(delay)
            _log.info("retrying %s %s in %.2fs (attempt %d of %d)", method, path, delay, attempt + 1, MAX_ATTEMPTS)
            await asyncio.sleep(delay)

    async def _send(
        self, method: str, path: str, params: dict[str, str] | None, content: bytes | None, headers: dict[str, str]
    ) -> httpx2.Response:
        try:
            return await self._http.request(method, path, params=params, content=content, headers=headers)
        except httpx2.RemoteProtocolError:
            if method != "GET":
                raise
            # The API server closes an HTTP/2 connection (GOAWAY) before answering an unauthenticated request, and
            # the HTTP/2 client then loses the 401; HTTP/1.1 gets the real answer. Only for reads: a write may
            # have been processed when its connection went away.
            if self._http1 is None:
                self._http1 = httpx2.AsyncClient(**{**self._params, "http2": False})
            return await self._http1.request(method, path, params=params, content=content, headers=headers)

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
            return f"Target cluster '{self.server}'"
        nodes = sorted(page.get("items") or [], key=lambda n: n["metadata"].get("creationTimestamp", ""))
        if not nodes:
            return f"Target cluster '{self.server}'"
        more = f", {len(nodes) - 1}+" if len(nodes) > 1 else ""
        return f"Target cluster '{self.server}' (nodes: {nodes[0]['metadata']['name']}{more})"

    async def _object(self, method: str, path: str, **kwargs: Any) -> Obj:
        """A request whose answer is an object."""
        answer: Obj = await self.request(method, path, **kwargs)
        return answer

    async def get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        try:
            return await self._object("GET", rtype.path(namespace, name))
        except ClusterError as e:
            if e.status == 404:
                return None
            raise

    async def list(
        self, rtype: ResourceType, *, label_selector: str | None = None, namespace: str | None = None
    ) -> list[Obj]:
        """All objects of a type (cluster-wide unless namespace is given), page by page. Items get the
        apiVersion and kind a LIST leaves out."""
        params = {"limit": str(LIST_PAGE_SIZE)}
        if label_selector:
            params["labelSelector"] = label_selector
        items: list[Obj] = []
        while True:
            page = await self.request("GET", rtype.path(namespace), params=params)
            for item in page.get("items") or []:
                item["apiVersion"], item["kind"] = rtype.api_version, rtype.kind
                items.append(item)
            token = objects.metadata(page).get("continue")
            if not token:
                return items
            params = {**params, "continue": token}

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
    ) -> None:
        """Delete; an object that is already gone counts as deleted."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            await self.request("DELETE", rtype.path(namespace, name), body=body)
        except ClusterError as e:
            if e.status != 404:
                raise

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
        timeout = httpx2.Timeout(self._timeout, read=timeout_seconds + 30)
        path = rtype.path(namespace)
        if self._watches is None:
            # Watches get connections of their own (HTTP/1.1, one per watch): long-lived streams multiplexed with
            # requests on one HTTP/2 connection stalled those requests for tens of seconds under a controller's load.
            self._watches = httpx2.AsyncClient(**{**self._params, "http2": False})
        try:
            async with self._watches.stream(
                "GET", path, params=params, headers={"Accept": "application/json"}, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise _error(response)
                async for line in response.aiter_lines():
                    if not line.strip():
                        continue
                    event = orjson.loads(line)
                    kind, obj = event.get("type", ""), event.get("object") or {}
                    if kind == "ERROR":
                        raise ClusterError(f"Watching {path}: {obj.get('message', '')}", status=obj.get("code", 0))
                    if kind != "BOOKMARK":
                        obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind
                    yield kind, obj
        except httpx2.HTTPError as e:
            raise ClusterError(f"Watching {path} on {self.server} failed: {_failure(e)}") from e

    @staticmethod
    def _write_params(dry_run: bool) -> dict[str, str]:
        params = {"fieldManager": FIELD_MANAGER}
        if dry_run:
            params["dryRun"] = "All"
        return params
