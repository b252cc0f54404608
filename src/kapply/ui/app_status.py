"""`kapply app status`: an App's reconcile state with kapply's reports, its ghost diffs and drift, as tables."""

from __future__ import annotations

from typing import Any

from kapply.objects import Obj
from kapply.ui.age import age
from kapply.ui.output import Output
from kapply.ui.table import Column, Table

_FIELD_COLUMNS = (Column("Resource"), Column("Field"), Column("Desired"), Column("Live"), Column("Written by"))


def _rows(fields: list[dict[str, Any]], *extra: str) -> tuple[tuple[str, ...], ...]:
    keys = ("resource", "path", "desired", "live", "writtenBy", *extra)
    return tuple(tuple(str(f.get(k, "")) for k in keys) for f in fields)


def _ghost_rows(diffs: list[dict[str, Any]]) -> tuple[tuple[str, ...], ...]:
    """Each ghost diff with the syncs that set it back and how long ago it was first and last seen."""
    return tuple(
        (*row[:3], ghost_live(d), *row[4:], _ago(str(d.get("firstSeen") or "")), _ago(str(d.get("lastSeen") or "")))
        for row, d in zip(_rows(diffs, "recurrences"), diffs, strict=True)
    )


def ghost_live(diff: Obj) -> str:
    """A ghost diff's live value; a resolved one (no longer set back: the status keeps no live value) says since
    when it was not seen."""
    return str(diff["live"]) if "live" in diff else f"not seen since {diff.get('lastSeen') or '(unknown)'}"


def _ago(timestamp: str) -> str:
    return age({"metadata": {"creationTimestamp": timestamp}}) if timestamp else ""


def show_app_status(out: Output, app: Obj) -> None:
    meta, spec, status = app.get("metadata") or {}, app.get("spec") or {}, app.get("status") or {}
    # An App that sets none has the controller's --default-drift-policy, which its drift report names when it has one.
    policy = spec.get("driftPolicy") or (status.get("drift") or {}).get("policy") or "the controller's default"
    out.line(
        f"App '{meta.get('name')}' (namespace: {meta.get('namespace')}): "
        f"{status.get('friendlyDescription') or 'not reconciled yet'} (drift policy: {policy})"
    )
    if status.get("usefulErrorMessage"):
        out.line(str(status["usefulErrorMessage"]))
    ghosts = status.get("ghostDiffs") or {}
    diffs = ghosts.get("diffs") or []
    out.table(
        Table(
            "Ghost diffs",
            (*_FIELD_COLUMNS, Column("Syncs"), Column("First seen"), Column("Last seen")),
            _ghost_rows(diffs),
            notes=(
                "Fields set back although the desired state did not change: something on the cluster keeps "
                "changing them (ages are how long ago). One not seen at the last sync is resolved: listed until "
                "several syncs in a row pass without it, or until the first after a change of the desired state",
            )
            if diffs
            else (),
            content="ghost diffs",
        )
    )
    if ghosts.get("suggestedConfig"):
        out.begin_line("Rebase rules that end them (add this kapp Config to the App's manifests):\n")
        out.block(str(ghosts["suggestedConfig"]))
    drift = status.get("drift") or {}
    fields = drift.get("fields") or []
    out.table(
        Table(
            "Drift",
            _FIELD_COLUMNS,
            _rows(fields),
            notes=(f"Fields changed on the cluster, left as they are (drift policy {drift.get('policy')})",)
            if fields
            else (),
            content="drifted fields",
        )
    )
    show_owned(out, status.get("fieldOwners") or {})


def show_owned(out: Output, owned: Obj, where: str = "the App's manifests") -> None:
    """`status.fieldOwners` (controller/owners.py): the fields a controller on the cluster owns, kept at the cluster's
    value, as a table (shown only when there are some) with the rules that make the holds part of the manifests
    (`where` says where those rules go)."""
    known, held = owned.get("knownOwners") or [], owned.get("held") or []
    if not known and not held:
        return
    rows = [tuple(str(k.get(key, "")) for key in ("resource", "path", "owner")) + ("known owner", "") for k in known]
    rows += [
        (*(str(h.get(key, "")) for key in ("resource", "path", "writtenBy")), "held", _ago(str(h.get("since") or "")))
        for h in held
    ]
    columns = (Column("Resource"), Column("Field"), Column("Owner"), Column("Rule"), Column("Since"))
    out.table(
        Table(
            "Owned fields",
            columns,
            tuple(rows),
            notes=(
                "Kept at the cluster's value: a known owner's field by default, a held one because its writer set it "
                "again after it was set back (held until the App's desired state changes)",
            ),
            content="owned fields",
        )
    )
    if owned.get("suggestedConfig"):
        out.begin_line(f"Rebase rules that keep the held fields for good (add this kapp Config to {where}):\n")
        out.block(str(owned["suggestedConfig"]))
