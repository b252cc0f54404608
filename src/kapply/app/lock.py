"""One deploy (or delete) of an app at a time, and only the one that was planned.

kapply holds an app while it applies: the app record carries an annotation naming the holder and when it last
renewed it; the holder renews it every RENEW seconds and removes it when done. Taking it is a write of the record with
the resourceVersion just read (optimistic concurrency), so two processes cannot both take it; a second deploy fails
at once naming the holder. A holder that died stops renewing, and after TTL seconds its hold lapses.

Taking the hold also checks that the record is the one the plan was made from: a deploy or delete that ran between
planning and applying (while a user read the diff, say) changed it, and the approved plan may no longer be true. A
deploy may say how to check its plan again instead (`revalidate`): when the app still has the objects it planned
with, it goes ahead, and each update checks its own approved diff (kapp's granularity: see `kapply.apply.execute`).
A new app's record is created with the hold on it, so of two first deploys of one app only one goes ahead.

kapp knows nothing of this annotation (it keeps it, as it keeps any annotation on the record): kapply and kapp can
still interleave; two kapplys (or kapply controllers) cannot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import orjson

from kapply import objects
from kapply.app.meta import AppMeta
from kapply.app.record import (
    CONFIGMAPS,
    App,
    last_written,
    merge_labels,
    new_record,
    remember_written,
    update_record,
)
from kapply.errors import AppNotFoundError, ClusterError, ConcurrencyError, KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, once_answered

TTL = timedelta(seconds=60)
RENEW = 15.0
INTERRUPTED_GRACE = 10.0  # seconds an interrupted holder spends releasing the app (else the hold lapses after TTL)
RELEASE_GRACE = 10.0  # seconds a holder keeps trying to release the app while the API server does not answer
RELEASE_RETRY = 0.5
_log = logging.getLogger("kapply")


def holder_id() -> str:
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def _value(holder: str, now: datetime) -> str:
    return orjson.dumps({"holder": holder, "renewed": now.strftime("%Y-%m-%dT%H:%M:%SZ")}).decode()


def held_by_other(cm: Obj, holder: str, now: datetime) -> str | None:
    """Who else holds the app (and since when they last renewed), or None when it is free, lapsed or ours."""
    raw = objects.annotations(cm).get(objects.DEPLOY_LOCK)
    if not raw:
        return None
    try:
        value = orjson.loads(raw)
        other, renewed = value["holder"], datetime.fromisoformat(value["renewed"].replace("Z", "+00:00"))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None  # not a hold kapply wrote: ignore it
    if other == holder or now - renewed > TTL:
        return None
    return f"{other} (renewed {value['renewed']})"


# Called, when the app's record changed since the plan, with the metadata it holds now; raises ConcurrencyError when
# the plan no longer holds.
Revalidate = Callable[[AppMeta], Awaitable[None]]


@contextlib.asynccontextmanager
async def hold(
    cluster: Cluster,
    app: App,
    labels: Mapping[str, str] | None = None,
    *,
    revalidate: Revalidate | None = None,
    meta: AppMeta | None = None,
) -> AsyncIterator[App]:
    """Hold the app for the duration of the block (see the module docs); yields the stored app. `labels` are kapp's
    `--labels`, written with the hold, and so is `meta`, the record's metadata the run writes first (issue 33: one
    write of the record instead of two). Without `revalidate`, a record changed since the plan refuses the hold.

    A write of the block that removes the hold (`released`, with the change finished) leaves the hold's end nothing
    to write; so does the record's deletion."""
    holder = holder_id()
    app = await _take(cluster, app, holder, labels or {}, revalidate, meta)
    app = replace(app, holder=holder)
    renewing = asyncio.create_task(_renew(cluster, app, holder))
    try:
        yield app
    finally:
        renewing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewing
        task = asyncio.current_task()
        if task is not None and task.cancelling():  # interrupted (Ctrl-C, SIGTERM): release if it can be done soon
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(INTERRUPTED_GRACE):
                    await _release(cluster, app, holder)
        else:
            await _release(cluster, app, holder)


def changed_since_planned(app: App) -> ConcurrencyError:
    return ConcurrencyError(
        f"{app.describe()} changed since this deploy was planned (another deploy or delete ran in between); "
        "nothing was applied (run again to see the current diff)"
    )


async def _revalidated(cluster: Cluster, app: App, holder: str, now: datetime, revalidate: Revalidate) -> AppMeta:
    """The app's metadata as recorded now, once `revalidate` accepted it if it changed since the plan. The record
    of an app deployed anew (another label) is refused at once: the plan's resources carry the old label."""
    cm = await cluster.get(CONFIGMAPS, app.namespace, app.configmap_name)
    if cm is None:
        raise AppNotFoundError(f"{app.describe()} does not exist")
    remember_written(cluster, cm)  # the hold's write starts from this read: one round trip less (issue 33)
    other = held_by_other(cm, holder, now)
    if other is not None:
        raise ConcurrencyError(f"{app.describe()} is being deployed or deleted by {other}; nothing was applied")
    current = AppMeta.from_json((cm.get("data") or {}).get("spec", "{}"))
    if current != app.meta:
        if (current.label_key, current.label_value) != (app.meta.label_key, app.meta.label_value):
            raise changed_since_planned(app)
        await revalidate(current)
    return current


async def _take(
    cluster: Cluster,
    app: App,
    holder: str,
    labels: Mapping[str, str],
    revalidate: Revalidate | None,
    meta: AppMeta | None = None,
) -> App:
    now = datetime.now(UTC)
    held = app if meta is None else replace(app, meta=meta)  # the app as the hold's write records it
    if not app.stored:
        try:
            created = await cluster.create(
                CONFIGMAPS, new_record(held, labels, {objects.DEPLOY_LOCK: _value(holder, now)})
            )
        except ClusterError as e:
            if e.conflict:
                raise ConcurrencyError(
                    f"{app.describe()} was created by another deploy while this one was planned; nothing was "
                    "applied (run again to see the diff against it)"
                ) from e
            raise
        remember_written(cluster, created)
        return replace(held, stored=True)
    accepted = [app.meta]

    def take(cm: Obj) -> None:
        other = held_by_other(cm, holder, now)
        if other is not None:
            raise ConcurrencyError(f"{app.describe()} is being deployed or deleted by {other}; nothing was applied")
        current = AppMeta.from_json((cm.get("data") or {}).get("spec", "{}"))
        if current not in accepted:
            raise changed_since_planned(app)
        merge_labels(cm, labels)
        cm["metadata"].setdefault("annotations", {})[objects.DEPLOY_LOCK] = _value(holder, now)
        if meta is not None:
            cm.setdefault("data", {})["spec"] = meta.to_json().decode()

    if revalidate is not None:
        if last_written(cluster, app):  # as the plan read it: taken in one write if unchanged since (issue 33)
            with contextlib.suppress(ConcurrencyError):  # changed (or held): read, and checked again, as below
                await update_record(cluster, app, take)
                return held
        accepted.append(await _revalidated(cluster, app, holder, now, revalidate))
    await update_record(cluster, app, take)
    return held


async def _renew(cluster: Cluster, app: App, holder: str) -> None:
    while True:
        await asyncio.sleep(RENEW)

        def renew(cm: Obj) -> None:
            cm["metadata"].setdefault("annotations", {})[objects.DEPLOY_LOCK] = _value(holder, datetime.now(UTC))

        try:
            await update_record(cluster, app, renew)
        except KapplyError as e:  # the run itself will meet the same trouble and report it
            _log.warning("renewing the hold on %s: %s", app.describe(), e)


def released(app: App) -> Callable[[Obj], None]:
    """The change of the record that removes the hold `app` carries (as `hold` yielded it): a run's last write of
    the record makes it too (the change finished), and the hold's end then has nothing to write (issue 33)."""

    def release(cm: Obj) -> None:
        annotations = cm["metadata"].get("annotations") or {}
        if held_by_other(cm, app.holder, datetime.now(UTC)) is None:
            annotations.pop(objects.DEPLOY_LOCK, None)

    return release


def _holds(cm: Obj | None, holder: str) -> bool:
    """Whether the record, as this process last wrote it (None: not known, `{}`: deleted here), may still carry the
    hold: only this process writes its holder's name, so a write of its own without it means it is gone."""
    if cm is None:
        return True
    raw = objects.annotations(cm).get(objects.DEPLOY_LOCK) if cm else None
    if not raw:
        return False
    try:
        return bool(orjson.loads(raw)["holder"] == holder)
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return True  # not a hold kapply wrote: the release's write removes it, as before


async def _release(cluster: Cluster, app: App, holder: str) -> None:
    """Remove the hold, unless the run's last write of the record did (see `released`) or it deleted the record. A
    run that failed because the API server went away (a restart) releases the hold when the server is back within
    RELEASE_GRACE seconds, so that the user's rerun is not refused for TTL by a holder that has exited; after that,
    or on any other refusal, the hold lapses after TTL."""
    if not _holds(last_written(cluster, app), holder):
        return
    release = released(replace(app, holder=holder))
    try:
        await once_answered(lambda: update_record(cluster, app, release), RELEASE_GRACE, RELEASE_RETRY)
    except KapplyError as e:  # a deleted app has no record left; anything else lapses after TTL
        if not isinstance(e, ClusterError | AppNotFoundError):
            raise
