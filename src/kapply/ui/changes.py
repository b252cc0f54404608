"""The Changes table, as kapp shows a plan."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from kapply import objects
from kapply.apply.planning import ClusterChange, summary
from kapply.apply.strategies import create_strategy, delete_strategy, label, update_strategy
from kapply.apply.waiters import wait_state
from kapply.diff.change import Change, Op
from kapply.objects import Obj
from kapply.ui.table import Table


def age(obj: Obj | None, now: datetime | None = None) -> str:
    """Kubernetes' short age (`45s`, `12m`, `5h`, `3d`) of an object, or empty for one not yet created."""
    created = objects.metadata(obj or {}).get("creationTimestamp")
    if not created:
        return ""
    seconds = int(((now or datetime.now(UTC)) - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit != "d" else 1):
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def op_strategy(change: Change, default_update_strategy: str = "") -> str:
    if change.op is Op.ADD:
        return label(create_strategy(change.resource))
    if change.op is Op.UPDATE:
        return label(update_strategy(change.resource, default_update_strategy))
    if change.op is Op.DELETE:
        return label(delete_strategy(change.resource))
    return ""


def reconcile_state(change: Change) -> tuple[str, str]:
    """Rs and Ri: how the live object stands now (kapp leaves out wait rules and children here)."""
    if change.existing is None:
        return "", ""
    state = wait_state(change.existing)
    return state.word.value, state.message


def changes_table(changes: Sequence[ClusterChange], default_update_strategy: str = "") -> Table:
    rows = []
    for cc in sorted(changes, key=lambda cc: (cc.change.key.namespace, cc.change.key.name, cc.change.key.kind)):
        c = cc.change
        rows.append(
            (
                c.key.namespace or "(cluster)",
                c.key.name,
                c.key.kind,
                age(c.existing),
                cc.apply_op,
                op_strategy(c, default_update_strategy),
                cc.wait.value,
                *reconcile_state(c),
            )
        )
    return Table(
        "Changes",
        ("Namespace", "Name", "Kind", "Age", "Op", "Op st.", "Wait to", "Rs", "Ri"),
        tuple(rows),
        notes=summary(changes),
        json_keys=(
            "namespace",
            "name",
            "kind",
            "age",
            "op",
            "op_strategy",
            "wait_to",
            "reconcile_state",
            "reconcile_info",
        ),
    )
