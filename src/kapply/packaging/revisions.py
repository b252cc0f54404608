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
import binascii
import contextlib
import hashlib
import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kapply.api import AsyncClient
from kapply.controller.credentials import Tokens
from kapply.controller.status import Condition
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.packaging.spec import PackageInstallSpec
from kapply.resources.cluster import Cluster, ResourceType
from kapply.versions import SemverError, parse_version

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
# What a revision Secret's fields may be (its tenant may write anything there): its number (ASCII digits, as its name
# ends with them), its digest, a values Secret's name (a DNS subdomain) and one of its data keys (a Secret's key).
_NUMBER = re.compile(r"[1-9][0-9]{0,8}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{12}")
_SECRET_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+")
MAX_NAME = 253  # of a Secret, of its keys, and of a version (a Package is named `<refName>.<version>`)


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
    package: str  # the package it ran: its install's spec.packageRef.refName then
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


def number_of(meta: Obj, install: Obj) -> int | None:
    """The number of the install's revision whose Secret's metadata is `meta`, or None when that Secret is not one of
    the install's revisions, whatever it says: a revision is named `<install>.pkgi-v<N>`, carries the install's uid
    label and is owned by the install (an ownerReference naming its uid). A tenant may put any of the three on any
    Secret of its namespace; only the three together are the install's revision, so that another install's, or a
    Secret merely labelled, is never shown, rolled back to or pruned."""
    own = install["metadata"]
    uid, prefix, name = str(own.get("uid") or ""), f"{own['name']}{SUFFIX}", str(meta.get("name") or "")
    digits = name[len(prefix) :] if name.startswith(prefix) else ""
    owners = meta.get("ownerReferences") or []
    if not uid or not _NUMBER.fullmatch(digits) or (meta.get("labels") or {}).get(INSTALL_UID_LABEL) != uid:
        return None
    return int(digits) if any(isinstance(o, dict) and o.get("uid") == uid for o in owners) else None


def _refused(name: str, why: str) -> KapplyError:
    """A revision Secret refused, saying why (never a value it holds)."""
    return KapplyError(f"Reading revision Secret '{name}': not a revision ({why})")


def _is_version(text: object) -> bool:
    if not isinstance(text, str) or len(text) > MAX_NAME:
        return False
    try:
        parse_version(text)
    except SemverError:
        return False
    return True


def head(meta: Obj) -> tuple[int, str, str]:
    """A revision Secret's number, version and values digest, from its annotations (what `history` shows), checked:
    the number its name ends with, a package version (never a constraint: a rollback makes it the install's), a
    digest; KapplyError naming the Secret otherwise."""
    name, annotations = str(meta.get("name") or ""), meta.get("annotations") or {}
    number, version, digest = (annotations.get(k) for k in (REVISION_ANNOTATION, VERSION_ANNOTATION, DIGEST_ANNOTATION))
    if not isinstance(number, str) or not _NUMBER.fullmatch(number) or not name.endswith(f"{SUFFIX}{number}"):
        raise _refused(name, "its revision annotation is not the number its name ends with")
    if not isinstance(version, str) or not _is_version(version):
        raise _refused(name, "its version annotation is not a package version")
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise _refused(name, "its digest annotation is not a values digest")
    return int(number), version, digest


def _is_name(text: object) -> bool:
    return isinstance(text, str) and len(text) <= MAX_NAME and _SECRET_NAME.fullmatch(text) is not None


def _is_key(key: object) -> bool:
    """A Secret's data key, as the API server takes one (not a path, not `.`, `..` or `..`-prefixed)."""
    return (
        isinstance(key, str)
        and len(key) <= MAX_NAME
        and bool(_SECRET_KEY.fullmatch(key))
        and key[:2] not in (".", "..")
    )


def _is_base64(text: object) -> bool:
    if not isinstance(text, str):
        return False
    try:
        base64.b64decode(text, validate=True)
    except binascii.Error:
        return False
    return True


def _values_secret(name: str, value: object) -> ValuesSecret:
    """One of a revision's values Secrets, checked: its name, its data keys and their base64 values."""
    secret, data = (value.get("secretName"), value.get("data")) if isinstance(value, dict) else (None, None)
    if not isinstance(secret, str) or not _is_name(secret):
        raise _refused(name, "a values Secret's name is not a Secret's name")
    if not isinstance(data, dict) or not all(map(_is_key, data)):
        raise _refused(name, "a values key is not a plain name")
    if not all(map(_is_base64, data.values())):
        raise _refused(name, "a value is not base64")
    return ValuesSecret(secret, tuple(sorted(data.items())))


def parse(secret: Obj) -> Revision:
    """A revision from its Secret, every field checked (the tenant's namespace holds it); KapplyError naming the Secret
    when it is not one."""
    meta = secret.get("metadata") or {}
    name = str(meta.get("name") or "")
    number, version, digest = head(meta)
    content: object = None
    # (binascii.Error and JSONDecodeError are ValueErrors; RecursionError: JSON nested deeper than Python's stack)
    with contextlib.suppress(KeyError, ValueError, RecursionError):
        content = json.loads(base64.b64decode(str((secret.get("data") or {})[CONTENT_KEY]), validate=True))
    if not isinstance(content, dict):
        raise _refused(name, f"its {CONTENT_KEY} is not base64-encoded JSON of a map")
    if content.get("version") != version:
        raise _refused(name, "its content's version is not its version annotation's")
    if not isinstance(content.get("packageRef"), dict):
        raise _refused(name, "its content's packageRef is not a map")
    if not _is_name(content["packageRef"].get("refName")):
        raise _refused(name, "its content's packageRef names no package (refName)")
    if not isinstance(content.get("values"), list):
        raise _refused(name, "its content's values are not a list")
    values = tuple(_values_secret(name, v) for v in content["values"])
    if values_digest(values) != digest:
        raise _refused(name, "its values are not those of its digest annotation")
    created = str(meta.get("creationTimestamp") or "")
    return Revision(number, version, digest, created, content["packageRef"]["refName"], values)


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
    controller, the user's in the CLI): the Secrets carrying its uid label that are its revisions (`number_of`), so
    that only those are pruned; KapplyError naming one whose content is not a revision's."""
    uid = install["metadata"].get("uid", "")
    found = await cluster.list(SECRETS, namespace=namespace, label_selector=f"{INSTALL_UID_LABEL}={uid}")
    owned = (s for s in found if number_of(s.get("metadata") or {}, install) is not None)
    return sorted((parse(s) for s in owned), key=lambda r: r.number)


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
