"""A PackageInstall's revisions, what `kapply package installed history` lists and `rollback` goes back to
(docs/packages.md, "History and rollback"): each time an install reconciles successfully with a (package version,
values) pair other than its latest revision's, a Secret `<install>.pkgi-v<N>` in its namespace records the version,
the `packageRef` that selected it and the content of its values Secrets. A Secret, since values may hold secrets;
owned by the PackageInstall, so that it goes with it; the newest KEEP kept.

The controller has no rights on Secrets (docs/reconciler.md, "Security"): the revisions are read and written with the
token of the install's service account, the account its App deploys with, so that what the controller does for a
namespace is bounded by the rights granted there. An account that may not do it keeps no revision: the install still
succeeds, and its ReconcileSucceeded condition says why there is none (`note`). Neither values nor their digest are
logged or shown on the status.

Revisions are looked at when a pass ends in success after one that did not (a new spec, a new version, values changed
through `kapply package installed update`, which pauses the install meanwhile), and on the first success the process
sees, never while the install is paused or canceled; a periodic sync of an unchanged install asks nothing more of the
API server."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kapply.api import AsyncClient
from kapply.controller.credentials import Tokens
from kapply.controller.status import Condition
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.packaging.spec import PackageInstallSpec
from kapply.resources.cluster import Cluster, ResourceType

_log = logging.getLogger("kapply.controller")
SECRETS = ResourceType("", "v1", "Secret", "secrets", True, frozenset({"get", "list", "create", "delete"}))
KEEP = 10  # revisions kept per install (the oldest deleted)
SUFFIX = ".pkgi-v"
# On a revision Secret: the install's uid (a name may be longer than a label value), and what `history` shows.
INSTALL_UID_LABEL = "packaging.kapply.dev/package-install-uid"
REVISION_ANNOTATION = "packaging.kapply.dev/revision"
VERSION_ANNOTATION = "packaging.kapply.dev/package-version"
DIGEST_ANNOTATION = "packaging.kapply.dev/values-digest"
CONTENT_KEY = "revision.json"
Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class ValuesSecret:
    """One of the install's values Secrets, as the API gives its data (base64)."""

    name: str
    data: tuple[tuple[str, str], ...]  # (key, base64), by key


@dataclass(frozen=True, slots=True)
class Revision:
    number: int
    version: str
    digest: str  # of the values: tells two revisions' values apart without showing them
    created: str  # the Secret's creationTimestamp
    package_ref: str  # the install's spec.packageRef, as JSON
    values: tuple[ValuesSecret, ...]


def secret_name(install: str, number: int) -> str:
    return f"{install}{SUFFIX}{number}"


def values_digest(values: Sequence[ValuesSecret]) -> str:
    """A short digest of the values' names and content (`sha256:` and 12 hex digits)."""
    canonical = json.dumps([[v.name, [list(kv) for kv in v.data]] for v in values], separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()[:12]


def values_secret(secret: Obj) -> ValuesSecret:
    data = secret.get("data") or {}
    return ValuesSecret(str(secret["metadata"]["name"]), tuple(sorted((str(k), str(v)) for k, v in data.items())))


def revision_secret(install: Obj, number: int, version: str, values: Sequence[ValuesSecret]) -> Obj:
    """The Secret of revision `number` of the install, owned by it (not its controller: nothing reconciles it)."""
    meta = install["metadata"]
    content = {
        "version": version,
        "packageRef": (install.get("spec") or {}).get("packageRef") or {},
        "values": [{"secretName": v.name, "data": dict(v.data)} for v in values],
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": secret_name(meta["name"], number),
            "namespace": meta["namespace"],
            "labels": {INSTALL_UID_LABEL: meta["uid"]},
            "annotations": {
                REVISION_ANNOTATION: str(number),
                VERSION_ANNOTATION: version,
                DIGEST_ANNOTATION: values_digest(values),
            },
            "ownerReferences": [
                {"apiVersion": install["apiVersion"], "kind": install["kind"], "name": meta["name"], "uid": meta["uid"]}
            ],
        },
        "data": {CONTENT_KEY: base64.b64encode(json.dumps(content, sort_keys=True).encode()).decode()},
    }


def parse(secret: Obj) -> Revision:
    """A revision from its Secret; KapplyError naming the Secret when it is not one."""
    meta = secret.get("metadata") or {}
    name = meta.get("name", "")
    annotations = meta.get("annotations") or {}
    try:
        content = json.loads(base64.b64decode((secret.get("data") or {})[CONTENT_KEY]))
        values = tuple(
            ValuesSecret(str(v["secretName"]), tuple(sorted((str(k), str(d)) for k, d in v["data"].items())))
            for v in content["values"]
        )
        return Revision(
            int(annotations[REVISION_ANNOTATION]),
            str(content["version"]),
            values_digest(values),
            str(meta.get("creationTimestamp") or ""),
            json.dumps(content["packageRef"], sort_keys=True),
            values,
        )
    except (KeyError, ValueError, TypeError, AttributeError) as e:
        raise KapplyError(f"Reading revision Secret '{name}': not a revision ({type(e).__name__})") from None


def expired(numbers: Iterable[int], keep: int = KEEP) -> list[int]:
    """The revisions beyond the newest `keep`, oldest first."""
    ordered = sorted(numbers)
    return ordered[: max(len(ordered) - keep, 0)]


def is_new(latest: Revision | None, version: str, values: Sequence[ValuesSecret]) -> bool:
    return latest is None or (latest.version, latest.digest) != (version, values_digest(values))


def note(why: str) -> str:
    return f"No revision kept for rollback: {why}"


def succeeded(status: Obj) -> bool:
    conditions = status.get("conditions") or []
    return bool(conditions) and conditions[0].get("type") == Condition.RECONCILE_SUCCEEDED


def with_note(status: Obj, text: str | None) -> Obj:
    """A successful status, with `text` as its condition's message."""
    if not text:
        return status
    return {**status, "conditions": [{**status["conditions"][0], "message": text}]}


async def listed(cluster: Cluster, namespace: str, install: Obj) -> list[Revision]:
    """The install's revisions, oldest first (with whatever rights `cluster` has: the install's account's in the
    controller, the user's in the CLI)."""
    uid = install["metadata"].get("uid", "")
    found = await cluster.list(SECRETS, namespace=namespace, label_selector=f"{INSTALL_UID_LABEL}={uid}")
    return sorted((parse(s) for s in found), key=lambda r: r.number)


async def values_of(cluster: Cluster, namespace: str, spec: PackageInstallSpec) -> tuple[ValuesSecret, ...]:
    secrets = []
    for ref in spec.values:
        if ref.secret_name:
            secret = await cluster.get(SECRETS, namespace, ref.secret_name)
            if secret is None:
                raise KapplyError(f"values Secret '{ref.secret_name}' not found in namespace '{namespace}'")
            secrets.append(values_secret(secret))
    return tuple(secrets)


async def record(cluster: Cluster, install: Obj, spec: PackageInstallSpec, version: str) -> Revision | None:
    """Keep a revision of the install running `version` with its values now, unless its latest has the same; delete
    those beyond KEEP. The revision made, or None."""
    namespace = install["metadata"]["namespace"]
    existing = await listed(cluster, namespace, install)
    values = await values_of(cluster, namespace, spec)
    if not is_new(existing[-1] if existing else None, version, values):
        return None
    number = existing[-1].number + 1 if existing else 1
    made = parse(await cluster.create(SECRETS, revision_secret(install, number, version, values)))
    for old in expired([*(r.number for r in existing), number]):
        await cluster.delete(SECRETS, namespace, secret_name(install["metadata"]["name"], old))
    return made


class Keeper:
    """Keeps the revisions of the installs a controller reconciles, with each install's service account."""

    def __init__(self, controller: AsyncClient) -> None:
        self.controller = controller
        self.tokens = Tokens(controller)
        self._seen: dict[Key, tuple[str, str]] = {}  # (uid, version) last looked at
        self._notes: dict[Key, str] = {}

    def forget(self, key: Key) -> None:
        self._seen.pop(key, None)
        self._notes.pop(key, None)

    async def keep(self, install: Obj, before: Obj, spec: PackageInstallSpec, version: str) -> str | None:
        """After a successful pass (`before`: the status it started from): keep a revision if there is a new one;
        the note to show on the status when none can be kept."""
        meta = install["metadata"]
        key, seen = (meta["namespace"], meta["name"]), (str(meta.get("uid", "")), version)
        # (paused, the App still runs what it ran: its values may be changing, as `installed update` pauses it)
        if spec.paused or spec.canceled or (self._seen.get(key) == seen and succeeded(before)):
            return self._notes.get(key)
        why = await self._keep(install, spec, version)
        self._seen[key] = seen
        if why is None:
            self._notes.pop(key, None)
            return None
        self._notes[key] = note(why)
        _log.warning("%s/%s: %s", key[0], key[1], self._notes[key])
        return self._notes[key]

    async def _keep(self, install: Obj, spec: PackageInstallSpec, version: str) -> str | None:
        """Why no revision could be looked at (None when it was)."""
        namespace, account = install["metadata"]["namespace"], spec.service_account
        if not account:
            return "the install names no service account (spec.serviceAccountName)"
        try:
            token = await self.tokens.token(namespace, account)
        except KapplyError as e:
            return str(e)
        async with self.controller.with_token(token, namespace) as client:
            try:
                made = await record(client.cluster, install, spec, version)
            except ClusterError as e:
                if e.unauthorized:
                    self.tokens.forget(namespace, account, token)
                if e.forbidden:
                    return f"service account '{account}' may not read and write Secrets in namespace '{namespace}'"
                return str(e)
            except KapplyError as e:
                return str(e)
        if made is not None:
            _log.info("%s/%s: kept revision %d (%s)", namespace, install["metadata"]["name"], made.number, version)
        return None
