"""App-change ConfigMaps: one per deploy that changes something, as kapp records them
(`<app>-change-xxxxx`, labeled with the app's label value), kept to a maximum count.

Beyond kapp (kapp issue 338): kapply also stores the masked diff of what the deploy
changed, under `data.diff`, so that `kapply app-change list --diff` shows what each
change did. Masking happens before it is stored: Secret values never reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, replace

import orjson

from kapply import objects
from kapply.app.meta import AppMeta, ChangeMeta, now
from kapply.app.record import CONFIGMAPS, App, save_meta
from kapply.errors import KapplyError
from kapply.resources.cluster import Cluster, once_answered

DIFF_KEY = "diff"
MAX_DIFF_BYTES = 512 * 1024  # a ConfigMap holds at most 1 MiB
# seconds an interrupted run spends recording its change as failed: a process asked to stop has little time (a pod's
# grace period is 30 s by default), and the API server may be the very thing the run was waiting on
INTERRUPTED_GRACE = 10.0


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
    cluster: Cluster, app: App, description: str, namespaces: list[str], diff: str, record: bool = True
) -> tuple[App, str]:
    """Start a change: create its ConfigMap (unless record is False, kapp's --app-changes-max-to-keep=0) and point
    the app's lastChange at it. Returns the updated app and the change's name ("" when not recorded)."""
    meta = ChangeMeta(started_at=now(), description=description, namespaces=tuple(namespaces))
    name = ""
    if record:
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
    app = await save_meta(cluster, app, _with_last_change(app, name, meta))
    return app, name


def _with_last_change(app: App, name: str, meta: ChangeMeta) -> AppMeta:
    """The app's lastChange pointing at the change `name`; "" (none recorded) clears lastChangeName, as kapp."""
    return replace(app.meta, last_change_name=name, last_change=meta)


async def finish(cluster: Cluster, app: App, name: str, successful: bool) -> App:
    """Mark the change finished (GET then PUT, as kapp) and copy it into the app's lastChange."""
    meta = app.meta.last_change.finish(successful)
    if name:
        cm = await cluster.get(CONFIGMAPS, app.namespace, name)
        if cm is not None:
            cm["data"]["spec"] = orjson.dumps(meta.to_json()).decode()
            await cluster.update(CONFIGMAPS, cm)
    return await save_meta(cluster, app, _with_last_change(app, name, meta))


async def record_failure(cluster: Cluster, app: App, name: str, failure: KapplyError) -> None:
    """Mark the change failed, once the API server answers again if it went away (within INTERRUPTED_GRACE seconds:
    a restart). If even that fails, the failure that ended the run stays the error the user sees, with this one
    noted under it."""
    try:
        await once_answered(lambda: finish(cluster, app, name, successful=False), INTERRUPTED_GRACE)
    except KapplyError as e:
        failure.add_note(f"(recording the app-change as failed did not work either: {e})")


async def record_interrupted(cluster: Cluster, app: App, name: str) -> None:
    """Mark the change failed when the run was interrupted (Ctrl-C, SIGTERM: its task cancelled), within
    INTERRUPTED_GRACE seconds; if that does not work, the change stays unfinished, as kapp leaves every interrupted
    change."""
    with contextlib.suppress(KapplyError, TimeoutError):
        async with asyncio.timeout(INTERRUPTED_GRACE):
            await finish(cluster, app, name, successful=False)


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
    for change in doomed:
        await cluster.delete(CONFIGMAPS, app.namespace, change.name)
    return len(doomed)


async def delete_all(cluster: Cluster, app: App) -> None:
    for change in await list_changes(cluster, app):
        await cluster.delete(CONFIGMAPS, app.namespace, change.name)
