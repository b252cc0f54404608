"""The table of an app's resources (`inspect`), flat or as a tree of owners."""

from __future__ import annotations

from collections.abc import Sequence

from kapply import objects
from kapply.app.record import App
from kapply.objects import Obj
from kapply.resources.labeled import is_transient
from kapply.ui.changes import age
from kapply.ui.table import Table


def _row(obj: Obj, prefix: str = "") -> tuple[str, ...]:
    meta = obj["metadata"]
    return (
        meta.get("namespace") or "(cluster)",
        prefix + meta["name"],
        obj["kind"],
        "cluster" if is_transient(obj) else "kapp",
        "",
        "",
        age(obj),
    )


def _sort_key(obj: Obj) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return meta.get("namespace") or "", meta["name"], obj["kind"]


def resources_table(app: App, resources: Sequence[Obj], *, tree: bool = False) -> Table:
    ordered = sorted(resources, key=_sort_key)
    if not tree:
        rows = [_row(obj) for obj in ordered]
    else:
        by_uid = {objects.uid(obj): obj for obj in ordered}
        children: dict[str, list[Obj]] = {}
        roots = []
        for obj in ordered:
            owners = [o["uid"] for o in objects.metadata(obj).get("ownerReferences") or [] if o.get("uid") in by_uid]
            if owners:
                children.setdefault(owners[0], []).append(obj)
            else:
                roots.append(obj)
        rows = []

        def walk(obj: Obj, depth: int) -> None:
            rows.append(_row(obj, "" if depth == 0 else " L" + ".." * (depth - 1) + " "))
            for child in children.get(objects.uid(obj), []):
                walk(child, depth + 1)

        for root in roots:
            walk(root, 0)
    return Table(
        f"Resources in app '{app.name}'",
        ("Namespace", "Name", "Kind", "Owner", "Rs", "Ri", "Age"),
        tuple(rows),
        notes=("Rs: Reconcile state", "Ri: Reconcile information"),
        content="resources",
    )


def _status_summary(status: object) -> str:
    """`.status` in one cell: scalars as key=value, conditions as Type=Status."""
    if not isinstance(status, dict):
        return ""
    parts = []
    for key in sorted(status):
        value = status[key]
        if key == "conditions" and isinstance(value, list):
            parts += [f"{c.get('type')}={c.get('status')}" for c in value if isinstance(c, dict)]
        elif not isinstance(value, dict | list):
            parts.append(f"{key}={value}")
    return " ".join(parts)


def status_table(app: App, resources: Sequence[Obj]) -> Table:
    rows = tuple(
        (
            objects.namespace(obj) or "(cluster)",
            obj["metadata"]["name"],
            obj["kind"],
            _status_summary(obj.get("status")),
        )
        for obj in sorted(resources, key=_sort_key)
    )
    return Table(
        f"Resources in app '{app.name}' status", ("Namespace", "Name", "Kind", "Status"), rows, content="resources"
    )
