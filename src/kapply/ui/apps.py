"""Tables about apps and their history: `ls` and `app-change list`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from kapply.app.history import AppChange
from kapply.app.meta import ZERO_TIME, ChangeMeta
from kapply.app.record import App
from kapply.ui.age import age
from kapply.ui.table import Column, Table


def _successful(meta: ChangeMeta) -> str:
    return "" if meta.successful is None else str(meta.successful).lower()


def _instant(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def _seconds(timestamp: str) -> str:
    """A recorded time (kapp keeps nanoseconds) as kapp's tables show it: RFC 3339 to the second."""
    return _instant(timestamp).strftime("%Y-%m-%dT%H:%M:%SZ")


def _time_age(timestamp: str) -> str:
    return "" if not timestamp or timestamp == ZERO_TIME else age({"metadata": {"creationTimestamp": timestamp}})


def apps_table(apps: Sequence[App], title: str, *, show_namespace: bool) -> Table:
    columns: tuple[Column, ...] = (
        Column("Namespace"),
        Column("Name"),
        Column("Namespaces"),
        Column("Lcs", "last_change_successful"),
        Column("Lca", "last_change_age"),
    )
    rows = []
    for app in sorted(apps, key=lambda a: (a.namespace, a.name)):
        change = app.meta.last_change
        rows.append(
            (
                app.namespace,
                app.name,
                ",".join(change.namespaces),
                _successful(change),
                _time_age(change.finished_at if change.finished_at != ZERO_TIME else change.started_at),
            )
        )
    shown_rows: list[tuple[str, ...]] = list(rows)
    if not show_namespace:
        columns, shown_rows = columns[1:], [r[1:] for r in rows]
    return Table(
        title, columns, tuple(shown_rows), notes=("Lcs: Last Change Successful", "Lca: Last Change Age"), content="apps"
    )


def app_changes_table(app: App, changes: Sequence[AppChange], *, title: str = "App changes") -> Table:
    rows = [
        (
            c.name,
            _seconds(c.meta.started_at),
            _seconds(c.meta.finished_at) if c.meta.finished_at != ZERO_TIME else "",
            _successful(c.meta),
            c.meta.description,
        )
        for c in sorted(changes, key=lambda c: _instant(c.meta.started_at), reverse=True)
    ]
    return Table(
        title,
        (Column("Name"), Column("Started At"), Column("Finished At"), Column("Successful"), Column("Description")),
        tuple(rows),
        content="app changes",
    )
