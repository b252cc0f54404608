"""Objects kept in memory in front of a cluster, for `kapply dev`: an App or PackageInstall read from files is
reconciled by the controller's own reconcilers without being created on the cluster, as kctrl dev reconciles its
objects in fake clientsets. Everything the reconcilers deploy, delete and read besides (service accounts, tokens,
Secrets, the App's resources and its kapp record) goes to the cluster as usual.

A `LocalCluster` is a cluster client whose objects of the `kept` types live in a dictionary, served by the methods
the API server's are (get, list, create, update, patch, delete, write_status; add_finalizer and remove_finalizer go
through get and update), with what the reconcilers rely on of an API server: an update must carry the
resourceVersion it read (else 409, as any conflict), a create of an existing name is refused (409), a change of
anything but metadata and status bumps the generation, the status changes only through write_status, and an object
with finalizers is only marked deleted (deletionTimestamp) until the last one is removed. Every request for another
type goes to the API server, through the client this extends. `on_write` is told every object written (deleted
ones with their deletionTimestamp), in order: the CLI tails an App's status from it.
"""

from __future__ import annotations

import copy
import itertools
import operator
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from kapply.controller.status import now
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, ResourceType
from kapply.resources.kubeconfig import KubeContext

Key = tuple[str, str, str, str]  # group, plural, namespace, name
OnWrite = Callable[[ResourceType, Obj], None]
MERGE_PATCH = "application/merge-patch+json"
_NOT_SPEC = frozenset({"metadata", "status"})  # what a change of leaves the generation as it is
_KEPT_METADATA = ("uid", "creationTimestamp", "deletionTimestamp", "generation")  # the server's, not the writer's


def _described(rtype: ResourceType, name: str) -> str:
    resource = f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural
    return f'{resource} "{name}"'


def _not_found(rtype: ResourceType, name: str) -> ClusterError:
    message = f"{_described(rtype, name)} not found"
    return ClusterError(f"API server says: {message} (reason: NotFound)", status=404, reason="NotFound", detail=message)


def _conflict(message: str, reason: str) -> ClusterError:
    return ClusterError(f"API server says: {message} (reason: {reason})", status=409, reason=reason, detail=message)


def _field(obj: Obj, path: str) -> str:
    """A field's value for a field selector (`spec.refName`, `metadata.name`), "" when absent."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def _matches(obj: Obj, selector: str | None, lookup: Callable[[Obj, str], str]) -> bool:
    """`selector`'s equalities (`a=b,c==d,e!=f`) all hold; a bare key (a label selector's `a`) asks that it be set."""
    for requirement in filter(None, (selector or "").split(",")):
        key, negated, value = requirement.partition("!=")
        if not negated:
            key, equal, value = requirement.replace("==", "=").partition("=")
            if not equal:
                if not lookup(obj, key.strip()):
                    return False
                continue
        if (lookup(obj, key.strip()) == value.strip()) == bool(negated):
            return False
    return True


def _label(obj: Obj, key: str) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(key, ""))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: a map patch merges into a map (null removes a key), anything else replaces the target."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


class LocalCluster(Cluster):
    def __init__(
        self,
        context: KubeContext,
        kept: Iterable[ResourceType],
        *,
        timeout: float = 60,
        on_write: OnWrite | None = None,
    ) -> None:
        super().__init__(context, timeout=timeout)
        self._kept = frozenset((t.group, t.plural) for t in kept)
        self._objects: dict[Key, Obj] = {}
        self._versions = itertools.count(1)
        self.on_write: OnWrite = on_write or (lambda rtype, obj: None)

    def keeps(self, rtype: ResourceType) -> bool:
        return (rtype.group, rtype.plural) in self._kept

    @staticmethod
    def _key(rtype: ResourceType, namespace: str | None, name: str) -> Key:
        return rtype.group, rtype.plural, namespace or "", name

    def _store(self, rtype: ResourceType, obj: Obj) -> Obj:
        """Keep `obj` under a new resourceVersion (or let it go: deleted and no finalizer left); a copy of it."""
        meta = obj["metadata"]
        meta["resourceVersion"] = str(next(self._versions))
        key = self._key(rtype, meta.get("namespace"), meta["name"])
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._objects.pop(key, None)
        else:
            self._objects[key] = copy.deepcopy(obj)
        self.on_write(rtype, copy.deepcopy(obj))
        return copy.deepcopy(obj)

    def _existing(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj:
        found = self._objects.get(self._key(rtype, namespace, name))
        if found is None:
            raise _not_found(rtype, name)
        return found

    def add(self, rtype: ResourceType, obj: Obj) -> Obj:
        """Keep an object as given (its status and deletionTimestamp too: the start of a reconcile), with what the
        API server would have set (uid, generation 1, creationTimestamp) when it has none; the stored copy."""
        body = copy.deepcopy(obj)
        meta = body.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("generation", 1)
        meta.setdefault("creationTimestamp", now())
        return self._store(rtype, body)

    async def get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        if not self.keeps(rtype):
            return await super().get(rtype, namespace, name)
        found = self._objects.get(self._key(rtype, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    async def list_with_version(
        self,
        rtype: ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
    ) -> tuple[list[Obj], str]:
        if not self.keeps(rtype):
            return await super().list_with_version(
                rtype, namespace=namespace, label_selector=label_selector, field_selector=field_selector, limit=limit
            )
        items = [
            copy.deepcopy(obj)
            for (group, plural, ns, _), obj in sorted(self._objects.items(), key=operator.itemgetter(0))
            if (group, plural) == (rtype.group, rtype.plural)
            and (namespace is None or ns == namespace)
            and _matches(obj, label_selector, _label)
            and _matches(obj, field_selector, _field)
        ]
        for item in items:
            item["apiVersion"], item["kind"] = rtype.api_version, rtype.kind
        return items[:limit] if limit else items, str(next(self._versions))

    async def create(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        if not self.keeps(rtype):
            return await super().create(rtype, obj, dry_run=dry_run)
        body = {k: copy.deepcopy(v) for k, v in obj.items() if k != "status"}  # a status is written on its own
        meta = body.setdefault("metadata", {})
        if self._key(rtype, meta.get("namespace"), meta.get("name", "")) in self._objects:
            raise _conflict(f"{_described(rtype, meta['name'])} already exists", "AlreadyExists")
        meta.pop("deletionTimestamp", None)
        meta.update({"uid": str(uuid.uuid4()), "generation": 1, "creationTimestamp": now()})
        return copy.deepcopy(body) if dry_run else self._store(rtype, body)

    async def update(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        if not self.keeps(rtype):
            return await super().update(rtype, obj, dry_run=dry_run)
        meta = obj["metadata"]
        stored = self._existing(rtype, meta.get("namespace"), meta["name"])
        version = meta.get("resourceVersion")
        if version and version != stored["metadata"]["resourceVersion"]:
            raise _conflict(
                f"Operation cannot be fulfilled on {_described(rtype, meta['name'])}: the object has been modified; "
                "please apply your changes to the latest version and try again",
                "Conflict",
            )
        return self._replace(rtype, stored, obj, dry_run=dry_run)

    def _replace(self, rtype: ResourceType, stored: Obj, obj: Obj, *, dry_run: bool = False) -> Obj:
        body = {k: copy.deepcopy(v) for k, v in obj.items() if k != "status"}
        if "status" in stored:
            body["status"] = copy.deepcopy(stored["status"])
        meta = body["metadata"] = dict(body.get("metadata") or {})
        for key in _KEPT_METADATA:
            if key in stored["metadata"]:
                meta[key] = stored["metadata"][key]
        spec = {k: v for k, v in body.items() if k not in _NOT_SPEC}
        if spec != {k: v for k, v in stored.items() if k not in _NOT_SPEC}:
            meta["generation"] = int(meta.get("generation") or 0) + 1
        return copy.deepcopy(body) if dry_run else self._store(rtype, body)

    async def patch(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str = "application/json-patch+json",
    ) -> Obj:
        if not self.keeps(rtype):
            return await super().patch(rtype, namespace, name, patch, patch_type)
        if patch_type != MERGE_PATCH:
            message = f"{patch_type} is not supported for objects kept in memory ({_described(rtype, name)})"
            raise ClusterError(f"API server says: {message} (reason: UnsupportedMediaType)", status=415)
        stored = self._existing(rtype, namespace, name)
        return self._replace(rtype, stored, merge_patch(stored, patch))

    async def delete(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        propagation: str = "Background",
    ) -> Obj | None:
        if not self.keeps(rtype):
            return await super().delete(rtype, namespace, name, uid=uid, propagation=propagation)
        stored = self._objects.get(self._key(rtype, namespace, name))
        if stored is None:
            return None
        if uid and stored["metadata"].get("uid") != uid:
            raise _conflict(
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {stored['metadata'].get('uid')}",
                "Conflict",
            )
        body = copy.deepcopy(stored)
        body["metadata"].setdefault("deletionTimestamp", now())
        self._store(rtype, body)
        return None

    async def write_status(
        self, rtype: ResourceType, obj: Obj, status: Obj, *, unchanged: Callable[[Obj, Obj], bool] = operator.eq
    ) -> None:
        if not self.keeps(rtype):
            return await super().write_status(rtype, obj, status, unchanged=unchanged)
        if unchanged(obj.get("status") or {}, status):
            return None
        meta = obj["metadata"]
        found = self._objects.get(self._key(rtype, meta.get("namespace"), meta["name"]))
        if found is None:  # gone: no status left to write
            return None
        stored = self._store(rtype, {**copy.deepcopy(found), "status": copy.deepcopy(status)})
        meta["resourceVersion"] = stored["metadata"]["resourceVersion"]
        obj["status"] = stored["status"]
        return None
