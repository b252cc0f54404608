"""`tools list-labels`: how many resources carry each label (or annotation, or owner), as kapp counts them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from kapply import objects
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.ui.resources import as_listed
from kapply.ui.table import Column, Table


def _owners(obj: Obj) -> dict[str, str]:
    """`<namespace>/<apiVersion>/<kind>/<name>` of each owner, as kapp keys them."""
    refs = objects.metadata(obj).get("ownerReferences") or []
    ns = objects.namespace(obj)
    return {f"{ns}/{r.get('apiVersion', '')}/{r.get('kind', '')}/{r.get('name', '')}": "" for r in refs}


ACCESSORS: Mapping[str, Callable[[Obj], Mapping[str, str]]] = {
    "labels": objects.labels,
    "annotations": lambda obj: objects.annotations(as_listed(obj)),
    "ownerrefs": _owners,
}


def labels_table(resources: Sequence[Obj], accessor: str, *, values: bool) -> Table:
    """A row per key with the number of resources that have it (per key and value with `values`). Resources with
    none show as a key `-` counted 0, as in kapp."""
    read = ACCESSORS.get(accessor)
    if read is None:
        raise KapplyError("Unknown resource accessor")
    counts: dict[str, Counter[str]] = {}
    for obj in resources:
        pairs = read(obj)
        for key, value in pairs.items():
            counts.setdefault(key, Counter())[value] += 1
        if not pairs:
            counts[""] = Counter()
    rows: list[tuple[str, ...]]
    columns: tuple[Column, ...]
    if values:
        rows = [(key, value, str(n)) for key, found in counts.items() for value, n in found.items()]
        columns = (Column("Name"), Column("Value"), Column("Resources"))
    else:
        rows = [(key, str(sum(found.values()))) for key, found in counts.items()]
        columns = (Column("Name"), Column("Resources"))
    return Table("Labels", columns, tuple(sorted(rows, key=lambda r: r[:-1])), content="labels")
