"""Tables about apps and their history: `ls` and `app-change list`."""

from __future__ import annotations

from collections.abc import Sequence

from kapply.app.history import AppChange
from kapply.app.meta import ZERO_TIME, ChangeMeta
from kapply.app.record import App
from kapply.ui.changes import age
from kapply.ui.table import Table


def _successful(meta: ChangeMeta) -> str:
    return "" if meta.successful is None else str(meta.successful).lower()


def _time_age(timestamp: str) -> str:
    return "" if not timestamp or timestamp == ZERO_TIME else age({"metadata": {"creationTimestamp": timestamp}})


def apps_table(apps: Sequence[App], title: str, *, show_namespace: bool) -> Table:
    header: tuple[str, ...] = ("Namespace", "Name", "Namespaces", "Lcs", "Lca")
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
        header, shown_rows = header[1:], [r[1:] for r in rows]
    return Table(
        title, header, tuple(shown_rows), notes=("Lcs: Last Change Successful", "Lca: Last Change Age"), content="apps"
    )


def app_changes_table(app: App, changes: Sequence[AppChange]) -> Table:
    rows = [
        (
            c.name,
            c.meta.started_at,
            c.meta.finished_at if c.meta.finished_at != ZERO_TIME else "",
            _successful(c.meta),
            c.meta.description,
        )
        for c in sorted(changes, key=lambda c: c.meta.started_at, reverse=True)
    ]
    return Table(
        f"App changes for app '{app.name}' (namespace: {app.namespace})",
        ("Name", "Started At", "Finished At", "Successful", "Description"),
        tuple(rows),
        content="app changes",
    )
