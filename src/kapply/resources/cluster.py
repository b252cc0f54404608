"""The one module that talks to the Kubernetes API.

Objects are plain dicts. Requests are async and share one HTTP/2 connection
(lightkube's configured httpx2 transport: kubeconfig TLS and auth), so many
can be in flight at once, as with client-go. Discovery uses the aggregated
discovery endpoints (two requests for the whole API surface) and is cached for
the life of the client. Nothing else in kapply builds URLs or reads HTTP errors.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import orjson
from lightkube.config.client_adapter import ConnectionParams
from lightkube.config.kubeconfig import SingleConfig

from kapply import objects
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.kubeconfig import ExecCredentialAuth

FIELD_MANAGER = "kapply"
LIST_PAGE_SIZE = 500
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
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        ns = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        return f"{base}{ns}/{self.plural}" + (f"/{name}" if name else "")


@dataclass(frozen=True)
class Discovery:
    """Every served resource type; within a group the preferred version comes first."""

    types: tuple[ResourceType, ...]
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


def _error(response: httpx2.Response) -> ClusterError:
    try:
        status = orjson.loads(response.content)
        message, reason = status.get("message", ""), status.get("reason", "")
    except (orjson.JSONDecodeError, AttributeError):
        message, reason = response.text.strip() or response.reason_phrase, ""
    return ClusterError(
        f"API server says: {message} (reason: {reason or response.reason_phrase})",
        status=response.status_code,
        reason=reason,
    )


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
        self.server: str = config.cluster.server
        self.namespace: str | None = config.namespace
        self._http = httpx2.AsyncClient(**params)
        self._params = params
        self._http1: httpx2.AsyncClient | None = None
        self._discovery: Discovery | None = None
        self._discovery_lock = asyncio.Lock()

    async def close(self) -> None:
        await self._http.aclose()
        if self._http1 is not None:
            await self._http1.aclose()

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
        try:
            try:
                response = await self._http.request(method, path, params=params, content=content, headers=headers)
            except httpx2.RemoteProtocolError:
                # The API server closes an HTTP/2 connection (GOAWAY) before answering an unauthenticated
                # request, and the HTTP/2 client then loses the 401; HTTP/1.1 gets the real answer.
                if self._http1 is None:
                    self._http1 = httpx2.AsyncClient(**{**self._params, "http2": False})
                response = await self._http1.request(method, path, params=params, content=content, headers=headers)
        except httpx2.HTTPError as e:
            raise ClusterError(f"Request {method} {path} to {self.server} failed: {e}") from e
        if response.status_code >= 400:
            raise _error(response)
        return orjson.loads(response.content) if response.content else None

    async def discovery(self, refresh: bool = False) -> Discovery:
        async with self._discovery_lock:
            if self._discovery is None or refresh:
                core, groups = await asyncio.gather(
                    self.request("GET", "/api", accept=AGGREGATED_DISCOVERY),
                    self.request("GET", "/apis", accept=AGGREGATED_DISCOVERY),
                )
                if core.get("kind") == "APIGroupDiscoveryList" and groups.get("kind") == "APIGroupDiscoveryList":
                    types = _types_from_aggregated(core) + _types_from_aggregated(groups)
                else:
                    types = await self._legacy_discovery(core, groups)
                self._discovery = Discovery(tuple(types))
            return self._discovery

    async def _legacy_discovery(self, core: Obj, groups: Obj) -> list[ResourceType]:
        """Per group-version discovery for API servers without aggregated discovery (before 1.26)."""
        group_versions = [("", v) for v in core.get("versions", [])]
        for g in groups.get("groups", []):
            preferred = g["preferredVersion"]["version"]
            versions = [preferred] + [v["version"] for v in g["versions"] if v["version"] != preferred]
            group_versions += [(g["name"], v) for v in versions]

        async def one(group: str, version: str) -> list[ResourceType]:
            path = f"/apis/{group}/{version}" if group else f"/api/{version}"
            doc = await self.request("GET", path)
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

    async def list_many(
        self, rtypes: Iterable[ResourceType], *, label_selector: str | None = None
    ) -> builtins.list[Obj]:
        results = await asyncio.gather(*(self.list(t, label_selector=label_selector) for t in rtypes))
        return [obj for objs in results for obj in objs]

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

    @staticmethod
    def _write_params(dry_run: bool) -> dict[str, str]:
        params = {"fieldManager": FIELD_MANAGER}
        if dry_run:
            params["dryRun"] = "All"
        return params
