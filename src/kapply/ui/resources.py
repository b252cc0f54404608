"""Resources as `inspect` and `tools inspect` show them: kapp's table (flat or as a tree), its status view, and the
raw YAML of `--raw`."""

from __future__ import annotations

from collections.abc import Sequence

from kapply import objects
from kapply.apply.waiters import wait_state
from kapply.diff.yaml_text import to_yaml
from kapply.objects import Obj
from kapply.resources.labeled import is_transient
from kapply.ui.age import age
from kapply.ui.table import Column, Table

STATUS_COLUMNS = (Column("Namespace"), Column("Name"), Column("Kind"), Column("Status"))
RESOURCE_COLUMNS = (
    Column("Namespace"),
    Column("Name"),
    Column("Kind"),
    Column("Owner"),
    Column("Rs", "reconcile_state"),
    Column("Ri", "reconcile_info"),
    Column("Age"),
)
NOTES = ("Rs: Reconcile state", "Ri: Reconcile information")


def _namespace(obj: Obj) -> str:
    return objects.namespace(obj) or "(cluster)"


def _name(obj: Obj) -> str:
    """The name as kapp's tables show it (empty, then `-`, for one the server is still to name)."""
    value = objects.metadata(obj).get("name")
    return value if isinstance(value, str) else ""


def _row(obj: Obj, prefix: str = "", *, listed: bool = True) -> tuple[str, ...]:
    """kapp's Rs and Ri: the resource's own converged state, without wait rules or children. A resource that was
    never created (no creation time, as one read from a file) has no owner, state or age; one read from a file is
    never controller-made."""
    where = (_namespace(obj), prefix + _name(obj), objects.kind(obj))
    if not objects.metadata(obj).get("creationTimestamp"):
        return (*where, "", "", "", "")
    state = wait_state(obj)
    owner = "cluster" if listed and is_transient(obj) else "kapp"
    return (*where, owner, state.word.value, state.message, age(obj))


def _sort_key(obj: Obj) -> tuple[str, str, str, str]:
    return _namespace(obj), _name(obj), objects.kind(obj), objects.api_version(obj)


def _identifier(obj: Obj) -> str:
    return f"{objects.namespace(obj)}${objects.group_of(obj)}${objects.kind(obj)}${_name(obj)}"


def _tree_position(obj: Obj, by_uid: dict[str, Obj]) -> tuple[str, int]:
    """kapp's tree sorting value and depth. A resource with the association label sorts with the resource that
    label names (`lbl-<value>-1` for kapp's own, `-2/child` for what controllers copied it to); then by its chain of
    first owners among the listed resources (`ref-<owner>/<resource>`). The depth is the most `/`s of the two."""
    values = []
    association = objects.labels(obj).get(objects.ASSOCIATION_LABEL, "")
    if association:
        values.append(f"lbl-{association}-2/child" if is_transient(obj) else f"lbl-{association}-1")
    chain, current, seen = [_identifier(obj)], obj, {objects.uid(obj)}
    while True:
        refs = objects.metadata(current).get("ownerReferences") or []
        owner = next((by_uid[r["uid"]] for r in refs if isinstance(r, dict) and r.get("uid") in by_uid), None)
        if owner is None or objects.uid(owner) in seen:  # a cycle of owners ends the chain (kapp would loop)
            break
        chain.insert(0, _identifier(owner))
        current = owner
        seen.add(objects.uid(owner))
    values.append("ref-" + "/".join(chain))
    return "@".join(values), max(v.count("/") for v in values)


def resources_table(
    source: str, resources: Sequence[Obj], *, tree: bool = False, sort: bool = True, listed: bool = True
) -> Table:
    """`Resources in <source>` (`app 'web'`, `file 'x.yml'`): sorted by namespace, name and kind, in the given order
    when not `sort`, or as kapp's tree, children under what owns them with ` L ` (` L.. ` deeper). `listed`: the
    resources were listed from the cluster (not read from files)."""
    if not tree:
        ordered = sorted(resources, key=_sort_key) if sort else list(resources)
        rows = tuple(_row(obj, listed=listed) for obj in ordered)
    else:
        by_uid = {objects.uid(obj): obj for obj in resources if objects.uid(obj)}
        placed = []
        for obj in resources:
            value, depth = _tree_position(obj, by_uid)
            prefix = " L" + ".." * (depth - 1) + " " if depth else ""
            row = _row(obj, prefix)
            placed.append(((value, row[3], row[0]), row))
        rows = tuple(row for _, row in sorted(placed, key=lambda p: p[0]))
    return Table(f"Resources in {source}", RESOURCE_COLUMNS, rows, notes=NOTES, content="resources")


def _status_yaml(status: object) -> str:
    """`.status` as the YAML kapp prints in a cell (empty when there is none)."""
    if not status:
        return ""
    return to_yaml(status).rstrip("\n")


def status_table(source: str, resources: Sequence[Obj]) -> Table:
    """kapp's `inspect --status`: one block per resource, its status as YAML."""
    rows = tuple(
        (_namespace(obj), objects.name(obj), objects.kind(obj), _status_yaml(obj.get("status")))
        for obj in sorted(resources, key=_sort_key)
    )
    return Table(f"Resources in {source}", STATUS_COLUMNS, rows, content="resources", transpose=True)


def document(obj: Obj) -> str:
    """`---` and the resource's YAML, as kapp prints a resource (`tools inspect --raw`)."""
    return "---\n" + to_yaml(obj)


def as_listed(obj: Obj) -> Obj:
    """The object as kapp's listing hands it on: without the identity annotation when it is kapp's own (a copy that
    a controller made names another resource, and stays)."""
    if is_transient(obj) or objects.IDENTITY not in objects.annotations(obj):
        return obj
    annotations = {k: v for k, v in objects.annotations(obj).items() if k != objects.IDENTITY}
    return objects.with_metadata(obj, annotations=annotations)


def raw(obj: Obj, *, managed_fields: bool = False) -> str:
    """`---` and the resource's YAML, as `inspect --raw` prints it: as listed, without kapp's record of what it
    applied, and without managedFields unless asked for. An annotations map left empty stays, as in kapp."""
    listed = as_listed(obj)
    meta = dict(objects.metadata(listed))
    if "annotations" in meta:
        meta["annotations"] = {
            k: v for k, v in objects.annotations(listed).items() if k not in objects.HISTORY_ANNOTATIONS
        }
    if not managed_fields:
        meta.pop("managedFields", None)
    return document({**listed, "metadata": meta})


def raw_order(resources: Sequence[Obj]) -> list[Obj]:
    """The order `--raw` prints resources in: the table's (kapp's follows the order its concurrent listing
    happens to finish in, which varies from run to run)."""
    return sorted(resources, key=_sort_key)
