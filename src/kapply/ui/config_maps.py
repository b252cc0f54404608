"""`config-map list`: the keys (and, with `--values`, the values) of an app's ConfigMaps, as kapp shows them."""

from __future__ import annotations

from collections.abc import Sequence

from kapply import objects
from kapply.objects import Obj
from kapply.ui.table import Column, Table


def config_maps_table(config_maps: Sequence[Obj], *, values: bool) -> Table:
    """A row per data key (binaryData is not shown), and one with no key for a ConfigMap without data."""
    rows: list[tuple[str, ...]] = []
    for cm in config_maps:
        where = (objects.namespace(cm) or "(cluster)", objects.name(cm))
        data = cm.get("data") or {}
        rows += [(*where, key, str(value)) for key, value in data.items()] or [(*where, "", "")]
    columns: tuple[Column, ...] = (Column("Namespace"), Column("Name"), Column("Key"), Column("Value"))
    if not values:
        columns, rows = columns[:3], [row[:3] for row in rows]
    return Table("Config map items", columns, tuple(sorted(rows)), content="config map items")
