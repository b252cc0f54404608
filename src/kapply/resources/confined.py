"""A cluster client confined to one namespace and a few resources: what the controller hands to work it does with its
own identity for an object of a tenant's namespace (a PackageRepository's deploy and delete), so that the work cannot
reach beyond that namespace and those resources whatever it is told, by a record a tenant may have forged or by a
bug.

Every request goes through `Confined.request` or `Confined.stream_lines` (a Confined opens no connection of its own:
it sends on the cluster it wraps), which refuse before sending anything:

- a request outside the namespace, and any cluster-wide one (a LIST or WATCH of every namespace, any cluster-scoped
  object: Nodes, Namespaces, ...),
- a request for a resource the scope does not allow, or for a subresource,
- for a resource allowed by name only (the app record and its app-changes among the ConfigMaps), a request for
  another name; a LIST of it returns only the allowed names (the others are dropped from the answer),
- a DELETE of a whole collection.

Discovery (`/api`, `/apis`) reads no object and is allowed. A refusal is a ClusterError with status 403, as a
refusal by RBAC would be: code written for a user with narrow rights (kapp's fallback to listing in the app's
namespaces, `Target cluster` without its nodes) works unchanged, and nothing refused was sent.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Unpack
from urllib.parse import unquote

from kapply.errors import ClusterError
from kapply.resources.cluster import Cluster, Discovery, RequestOptions
from kapply.transport import Pool

_log = logging.getLogger("kapply")
_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True, slots=True)
class Allowed:
    """A resource (group and plural) the scope allows; with `names` or `prefixes`, only objects so named."""

    group: str
    plural: str
    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()

    @property
    def by_name(self) -> bool:
        return bool(self.names or self.prefixes)

    def allows(self, name: str) -> bool:
        return not self.by_name or name in self.names or any(name.startswith(p) for p in self.prefixes)

    def describe(self) -> str:
        resource = f"{self.plural}.{self.group}" if self.group else self.plural
        if not self.by_name:
            return resource
        named = [*sorted(self.names), *(f"{p}*" for p in self.prefixes)]
        return f"{resource} ({', '.join(named)})"


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a confined client may go: one namespace, and in it the `resources`."""

    namespace: str
    resources: tuple[Allowed, ...]

    def find(self, group: str, plural: str) -> Allowed | None:
        return next((a for a in self.resources if (a.group, a.plural) == (group, plural)), None)

    def describe(self) -> str:
        return f"namespace '{self.namespace}': {', '.join(a.describe() for a in self.resources)}"


class ConfinementError(ClusterError):
    """A request the confined client refused to send (status 403, as RBAC's refusal)."""

    def __init__(self, method: str, path: str, why: str, scope: Scope) -> None:
        detail = f"{method} {path} refused ({why}): this work may only reach {scope.describe()}"
        super().__init__(f"Request not sent: {detail}", status=403, reason="Forbidden", detail=detail)


@dataclass(frozen=True, slots=True)
class Target:
    """What a request path names: a namespaced resource's collection, or one object of it (`name`)."""

    group: str
    plural: str
    name: str


def target(method: str, path: str, scope: Scope) -> Target | None:
    """What the request reaches, None for discovery; ConfinementError for anything the scope does not allow."""

    def refuse(why: str) -> ConfinementError:
        return ConfinementError(method, path, why, scope)

    if method not in _METHODS:
        raise refuse(f"method {method}")
    parts = [unquote(p) for p in path.split("?", 1)[0].split("/")]
    if parts[0] != "" or len(parts) < 2 or parts[1] not in ("api", "apis"):
        raise refuse("not a Kubernetes API path")
    rest = parts[2:] if parts[1] == "api" else parts[3:]
    group = "" if parts[1] == "api" else (parts[2] if len(parts) > 2 else "")
    version_only = len(rest) <= 1  # /api, /api/v1, /apis, /apis/g, /apis/g/v
    if version_only:
        if method != "GET":
            raise refuse("a write to a discovery path")
        return None
    rest = rest[1:]  # past the version
    if len(rest) < 3 or rest[0] != "namespaces":
        raise refuse("cluster-wide")
    if rest[1] != scope.namespace:
        raise refuse(f"outside the namespace, in '{rest[1]}'")
    allowed = scope.find(group, rest[2])
    if allowed is None:
        raise refuse(f"resource {rest[2]}.{group}" if group else f"resource {rest[2]}")
    if len(rest) > 4:
        raise refuse(f"subresource {'/'.join(rest[4:])}")
    name = rest[3] if len(rest) == 4 else ""
    if not name and method in ("PUT", "PATCH", "DELETE"):
        raise refuse(f"{method} of a whole collection")
    if name and not allowed.allows(name):
        raise refuse(f"the {allowed.plural} '{name}'")
    return Target(group, allowed.plural, name)


def _created_name(body: Any) -> str:
    meta = body.get("metadata") if isinstance(body, dict) else None
    if not isinstance(meta, dict):
        return ""
    return str(meta.get("name") or meta.get("generateName") or "")


def _named_items(answer: Any, allowed: Allowed) -> Any:
    """A LIST's answer with only the items the scope allows by name."""
    if not isinstance(answer, dict) or not isinstance(answer.get("items"), list):
        return answer
    kept = [i for i in answer["items"] if allowed.allows(str((i.get("metadata") or {}).get("name") or ""))]
    return {**answer, "items": kept}


class Confined(Cluster):
    """`inner` confined to `scope` (see the module docs). Shares the inner cluster's connection and discovery; closing
    it closes nothing (the inner cluster is its owner's)."""

    def __init__(self, inner: Cluster, scope: Scope) -> None:
        super().__init__(inner.context)
        self.inner = inner
        self.scope = scope
        self.namespace = scope.namespace
        self.on_warning = inner.on_warning

    def _session(self) -> Pool:
        raise ConfinementError(
            "SEND", "-", "a connection of its own: requests go through the wrapped client", self.scope
        )

    async def close(self) -> None:
        return None

    async def discovery(self, refresh: bool = False) -> Discovery:
        return await self.inner.discovery(refresh)

    async def request(self, method: str, path: str, **options: Unpack[RequestOptions]) -> Any:
        try:
            reached = target(method, path, self.scope)
            allowed = None if reached is None else self.scope.find(reached.group, reached.plural)
            created = _created_name(options.get("body"))
            if method == "POST" and allowed is not None and allowed.by_name and not allowed.allows(created):
                raise ConfinementError(method, path, f"creating '{created}'", self.scope)
        except ConfinementError as e:
            _log.debug("%s", e)
            raise
        answer = await self.inner.request(method, path, **options)
        if method == "GET" and reached is not None and not reached.name and allowed is not None and allowed.by_name:
            return _named_items(answer, allowed)
        return answer

    @asynccontextmanager
    async def stream_lines(
        self, path: str, params: dict[str, str], *, read_timeout: float | None
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        reached = target("GET", path, self.scope)
        allowed = None if reached is None else self.scope.find(reached.group, reached.plural)
        if reached is None or (not reached.name and allowed is not None and allowed.by_name):
            raise ConfinementError("GET", path, "a stream of objects not all allowed", self.scope)
        async with self.inner.stream_lines(path, params, read_timeout=read_timeout) as lines:
            yield lines
