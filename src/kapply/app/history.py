"""App-change ConfigMaps: one per deploy that changes something, as kapp records them
(`<app>-change-xxxxx`, labeled with the app's label value), kept to a maximum count.

Beyond kapp (kapp issue 338): kapply also stores the masked diff of what the deploy
changed, under `data.diff`, so that `kapply app-change list --diff` shows what each
change did. Masking happens before it is stored: Secret values never reach it.

Also beyond kapp (issue 34): each change keeps what it applied (the documents as given, Configs included, and where
they were placed), gzipped JSON in a Secret of the change's name beside it (they may hold Secret data), so that
`kapply app-change rollback` can deploy them again. The Secret is owned by the change's ConfigMap (whoever deletes
the change, kapp's GC included, deletes it) and carries none of the app's labels (kapp never sees it as the app's).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import gzip
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import orjson

from kapply import objects
from kapply.app.meta import AppMeta, ChangeMeta, now
from kapply.app.record import CONFIGMAPS, App, save_meta
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, ResourceType, once_answered

DIFF_KEY = "diff"
MAX_DIFF_BYTES = 512 * 1024  # a ConfigMap holds at most 1 MiB
# seconds an interrupted run spends recording its change as failed: a process asked to stop has little time (a pod's
# grace period is 30 s by default), and the API server may be the very thing the run was waiting on
INTERRUPTED_GRACE = 10.0
SECRETS = ResourceType("", "v1", "Secret", "secrets", True, frozenset({"create", "delete", "get", "list"}))
KEPT_LABEL = "kapply.dev/app-change"  # on the Secret keeping what a change applied: the change's name
KEPT_TYPE = "kapply.dev/app-change-applied"
KEPT_KEY = "applied.json.gz"
MAX_KEPT_BYTES = 1000 * 1024  # a Secret holds at most 1 MiB, its metadata included


@dataclass(frozen=True, slots=True)
class Applied:
    """What a deploy applied, as given: its documents (resources and Configs, before kapply prepared them) and where
    they were placed (the default namespace, `--into-ns`, `--map-ns`). Deploying them again is a rollback."""

    documents: tuple[Obj, ...]
    namespace: str
    into_namespace: str = ""
    namespace_map: Mapping[str, str] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        payload = {
            "version": 1,
            "namespace": self.namespace,
            "intoNamespace": self.into_namespace,
            "namespaceMap": dict(self.namespace_map),
            "documents": list(self.documents),
        }
        return gzip.compress(orjson.dumps(payload, default=str), mtime=0)

    @classmethod
    def from_bytes(cls, data: bytes) -> Applied:
        payload = orjson.loads(gzip.decompress(data))
        if not isinstance(payload, dict) or payload.get("version") != 1:
            raise ValueError("not a kept change of a version this kapply reads")
        return cls(
            tuple(payload["documents"]),
            str(payload["namespace"]),
            str(payload.get("intoNamespace") or ""),
            dict(payload.get("namespaceMap") or {}),
        )


@dataclass(frozen=True)
class Begun:
    """A change begun: its name ("" when not recorded), its ConfigMap as created (the change's finishing write
    starts from it, without reading it again) and the creation of the Secret that keeps what it applies, which goes
    on while the change applies (nothing waits for it but the change's end: issue 33, round trips)."""

    name: str = ""
    created: Obj | None = None
    keeping: asyncio.Task[bool] | None = None


@dataclass(frozen=True, slots=True)
class AppChange:
    name: str
    meta: ChangeMeta
    diff: str
    created: str


def _selector(app: App) -> str:
    if app.uses_app_label_for_changes:
        return f"{objects.IS_APP_CHANGE_LABEL},{objects.APP_CHANGE_APP_LABEL}={app.meta.label_value}"
    return f"{objects.IS_APP_CHANGE_LABEL},{objects.APP_CHANGE_APP_NAME_LABEL}={app.name}"


def _stored_diff(diff: str) -> str:
    encoded = diff.encode()
    if len(encoded) <= MAX_DIFF_BYTES:
        return diff
    return encoded[:MAX_DIFF_BYTES].decode(errors="ignore") + "\n... (diff truncated: too large for a ConfigMap)\n"


async def begin(
    cluster: Cluster,
    app: App,
    description: str,
    namespaces: list[str],
    diff: str,
    record: bool = True,
    *,
    applied: Applied | None = None,
    warn: Callable[[str], None] = lambda _: None,
) -> tuple[App, Begun]:
    """Start a change: create its ConfigMap (unless record is False, kapp's --app-changes-max-to-keep=0), start
    keeping what it applies (`applied`, see `keep`: beside the record's write, on until `finish`) and point the app's
    lastChange at it. Returns the updated app and the change begun."""
    if not record:
        return await save_meta(cluster, app, unrecorded(app, description, namespaces)), Begun()
    meta = ChangeMeta(started_at=now(), description=description, namespaces=tuple(namespaces))
    labels = {objects.IS_APP_CHANGE_LABEL: "", objects.APP_CHANGE_APP_LABEL: app.meta.label_value}
    if len(app.name) <= 63:
        labels[objects.APP_CHANGE_APP_NAME_LABEL] = app.name
    created = await cluster.create(
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"generateName": f"{app.name}-change-", "namespace": app.namespace, "labels": labels},
            "data": {"spec": orjson.dumps(meta.to_json()).decode(), DIFF_KEY: _stored_diff(diff)},
        },
    )
    name = created["metadata"]["name"]
    keeping = None if applied is None else asyncio.ensure_future(keep(cluster, created, applied, warn))
    try:
        app = await save_meta(cluster, app, _with_last_change(app, name, meta))
    except BaseException:
        if keeping is not None:  # the change stays unfinished, as any change whose deploy stops here
            keeping.cancel()
            await asyncio.gather(keeping, return_exceptions=True)
        raise
    return app, Begun(name, created, keeping)


def unrecorded(app: App, description: str, namespaces: Sequence[str] = ()) -> AppMeta:
    """The app's metadata once a change that is not recorded (a delete's) begins now: what `begin` writes for it,
    or the hold's own write of the record (kapply.app.lock) when the change begins with it."""
    meta = ChangeMeta(started_at=now(), description=description, namespaces=tuple(namespaces))
    return _with_last_change(app, "", meta)


async def keep(cluster: Cluster, change: Obj, applied: Applied, warn: Callable[[str], None]) -> bool:
    """Keep what the change (its ConfigMap as created) applies, in a Secret of its name owned by it. A change too
    large to keep, or a Secret that cannot be created, is only warned about: the deploy goes on, and that change
    cannot be rolled back to. A user who may not create Secrets is not warned on every deploy (kapp's output stays
    the same for them): a rollback to the change says why it cannot be done."""
    meta = change["metadata"]
    data = applied.to_bytes()
    if len(data) > MAX_KEPT_BYTES:
        warn(
            f"App-change '{meta['name']}' applies {len(data)} bytes (compressed), more than a Secret holds "
            f"({MAX_KEPT_BYTES}): what it applied is not kept, so it cannot be rolled back to"
        )
        return False
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"], "uid": meta.get("uid", "")}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": KEPT_TYPE,
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": {KEPT_LABEL: meta["name"]},
            "ownerReferences": [owner],
        },
        "data": {KEPT_KEY: base64.b64encode(data).decode()},
    }
    try:
        await cluster.create(SECRETS, secret)
    except KapplyError as e:  # the cluster's refusal, or no answer: the deploy it runs beside goes on
        if not (isinstance(e, ClusterError) and e.forbidden):
            warn(f"What app-change '{meta['name']}' applies is not kept (it cannot be rolled back to): {e}")
        return False
    return True


async def kept(cluster: Cluster, app: App, name: str) -> Applied | None:
    """What the change `name` applied, None when it kept nothing (recorded by kapp, by a kapply before it kept
    changes, too large to keep, or by a user who may not create Secrets)."""
    secret = await cluster.get(SECRETS, app.namespace, name)
    if secret is None or secret.get("type") != KEPT_TYPE:
        return None
    try:
        return Applied.from_bytes(base64.b64decode((secret.get("data") or {})[KEPT_KEY]))
    except (KeyError, ValueError, TypeError, OSError, EOFError) as e:  # a Secret changed by hand
        raise KapplyError(f"Secret '{name}' (namespace: {app.namespace}) does not hold a kept app-change: {e}") from e


def _with_last_change(app: App, name: str, meta: ChangeMeta) -> AppMeta:
    """The app's lastChange pointing at the change `name`; "" (none recorded) clears lastChangeName, as kapp."""
    return replace(app.meta, last_change_name=name, last_change=meta)


async def finish(
    cluster: Cluster, app: App, change: Begun, successful: bool, *, also: Callable[[Obj], None] | None = None
) -> App:
    """Mark the change finished and copy it into the app's lastChange, once what it applies is kept: the change's
    ConfigMap and the record written together (issue 33: round trips; an error of the change's first), the record
    with `also`'s change of it (the hold's release: kapply.app.lock.released)."""
    meta = app.meta.last_change.finish(successful)
    if change.keeping is not None:
        await change.keeping
    results = await asyncio.gather(
        _finish_change(cluster, app, change, meta),
        save_meta(cluster, app, _with_last_change(app, change.name, meta), also),
        return_exceptions=True,
    )
    for result in results:
        if isinstance(result, BaseException):
            raise result
    finished = results[1]
    assert isinstance(finished, App)
    return finished


async def _finish_change(cluster: Cluster, app: App, change: Begun, meta: ChangeMeta) -> None:
    """Write the finished change into its ConfigMap: from the copy created (with its resourceVersion), else or when
    that is stale (changed or deleted since) as kapp does, GET then PUT."""
    if not change.name:
        return
    spec = orjson.dumps(meta.to_json()).decode()
    if change.created is not None:
        cm = copy.deepcopy(change.created)
        cm.setdefault("data", {})["spec"] = spec
        try:
            await cluster.update(CONFIGMAPS, cm)
            return
        except ClusterError as e:
            if not (e.conflict or e.not_found):
                raise
    current = await cluster.get(CONFIGMAPS, app.namespace, change.name)
    if current is not None:
        current.setdefault("data", {})["spec"] = spec
        await cluster.update(CONFIGMAPS, current)


async def record_failure(cluster: Cluster, app: App, change: Begun, failure: KapplyError) -> None:
    """Mark the change failed, once the API server answers again if it went away (within INTERRUPTED_GRACE seconds:
    a restart). If even that fails, the failure that ended the run stays the error the user sees, with this one
    noted under it."""
    try:
        await once_answered(lambda: finish(cluster, app, change, successful=False), INTERRUPTED_GRACE)
    except KapplyError as e:
        failure.add_note(f"(recording the app-change as failed did not work either: {e})")


async def record_interrupted(cluster: Cluster, app: App, change: Begun) -> None:
    """Mark the change failed when the run was interrupted (Ctrl-C, SIGTERM: its task cancelled), within
    INTERRUPTED_GRACE seconds; if that does not work, the change stays unfinished, as kapp leaves every interrupted
    change."""
    with contextlib.suppress(KapplyError, TimeoutError):
        async with asyncio.timeout(INTERRUPTED_GRACE):
            await finish(cluster, app, change, successful=False)


async def list_changes(cluster: Cluster, app: App) -> list[AppChange]:
    """The app's changes, oldest first (a labeled app has none)."""
    if app.labeled:
        return []
    cms = await cluster.list(CONFIGMAPS, label_selector=_selector(app), namespace=app.namespace)
    cms.sort(key=lambda cm: (cm["metadata"]["creationTimestamp"], cm["metadata"]["name"]))
    out = []
    for cm in cms:
        data = cm.get("data") or {}
        try:
            meta = ChangeMeta.from_json(orjson.loads(data.get("spec") or "{}"))
        except ValueError:  # not JSON (orjson.JSONDecodeError), or not a change's shape (AppMetaError)
            meta = ChangeMeta()
        out.append(AppChange(cm["metadata"]["name"], meta, data.get(DIFF_KEY, ""), cm["metadata"]["creationTimestamp"]))
    return out


def to_collect(changes: list[AppChange], max_to_keep: int) -> list[AppChange]:
    """The oldest changes beyond max_to_keep (changes are oldest first)."""
    return changes[: max(0, len(changes) - max_to_keep)]


async def gc(cluster: Cluster, app: App, max_to_keep: int) -> int:
    """Delete the oldest changes beyond max_to_keep; the number deleted."""
    doomed = to_collect(await list_changes(cluster, app), max_to_keep)
    await _delete(cluster, app, doomed)
    return len(doomed)


@dataclass(frozen=True, slots=True)
class Listing:
    """An app's changes (oldest first) and the UIDs of the Secrets that keep what they applied, by name: listed
    together, one wave (issue 33: round trips). `kept` is None when the Secrets could not be listed (a user who may
    not list them): each is then read by name, as before."""

    changes: tuple[AppChange, ...]
    kept: Mapping[str, str] | None


async def listing(cluster: Cluster, app: App) -> Listing:
    """The app's changes and, beside them, the kept Secrets of its namespace (a metadata-only LIST by the kept label
    and type: no value reaches this process)."""
    changes, kept = await asyncio.gather(list_changes(cluster, app), _kept_uids(cluster, app))
    return Listing(tuple(changes), kept)


async def _kept_uids(cluster: Cluster, app: App) -> dict[str, str] | None:
    if app.labeled:
        return {}
    try:
        found = await cluster.list_metadata(
            SECRETS, namespace=app.namespace, label_selector=KEPT_LABEL, field_selector=f"type={KEPT_TYPE}"
        )
    except ClusterError:  # refused (narrow RBAC) or failed: each Secret is read by name, a refusal suppressed
        return None
    return {str(meta["name"]): str(meta["uid"]) for meta in found if meta.get("name") and meta.get("uid")}


async def delete_all(cluster: Cluster, app: App, listed: Awaitable[Listing] | None = None) -> None:
    """Delete the app's changes and what they kept. `listed`: the history as listed earlier (while the app's resources
    were deleted: issue 33, round trips); its changes are deleted beside a LIST of the history again, and a change
    recorded meanwhile (by a deploy that does not hold the app: kapp's) is deleted after it, so that none is left
    where the app's record goes. An earlier listing that failed is not trusted: the history is listed again first."""
    first = None
    if listed is not None:
        with contextlib.suppress(KapplyError):
            first = await listed
    if first is None:
        fresh = await listing(cluster, app)
        await _delete(cluster, app, fresh.changes, fresh.kept)
        return
    again = asyncio.ensure_future(listing(cluster, app))  # first: it goes out with the DELETEs
    try:
        await _delete(cluster, app, first.changes, first.kept)
        late = await again
    finally:
        again.cancel()
        await asyncio.gather(again, return_exceptions=True)
    deleted = {change.name for change in first.changes}
    left = [change for change in late.changes if change.name not in deleted]
    if left:
        await _delete(cluster, app, left, late.kept)


async def _delete(
    cluster: Cluster, app: App, changes: Sequence[AppChange], kept: Mapping[str, str] | None = None
) -> None:
    """Delete the changes and what they kept (at once: the owner reference's garbage collection would come later).
    All at once, each change's ConfigMap beside the DELETE of its kept Secret, by the UID `kept` lists for its name
    (as a precondition: a Secret made again since stays), or with `kept` None beside the read of its Secret (issue
    33: round trips); a Secret `kept` does not list is left to the garbage collection (none was kept, or it was made
    after the listing: owned by the change all the same). The first error in the changes' order is raised once all
    are done."""

    async def delete(name: str) -> None:
        async def secret() -> None:
            with contextlib.suppress(ClusterError):  # a user who may not delete Secrets: the owner reference does
                if kept is None:
                    await _delete_kept(cluster, app, name)
                elif name in kept:
                    await cluster.delete(SECRETS, app.namespace, name, uid=kept[name])

        done = await asyncio.gather(cluster.delete(CONFIGMAPS, app.namespace, name), secret(), return_exceptions=True)
        for result in done:
            if isinstance(result, BaseException):
                raise result

    results = await asyncio.gather(*(delete(change.name) for change in changes), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result


async def _delete_kept(cluster: Cluster, app: App, name: str) -> None:
    """Delete the Secret that keeps change `name`, only if it is one (a Secret of that name made otherwise stays)."""
    secret = await cluster.get(SECRETS, app.namespace, name)
    if secret is not None and secret.get("type") == KEPT_TYPE:
        await cluster.delete(SECRETS, app.namespace, name, uid=secret["metadata"].get("uid"))
