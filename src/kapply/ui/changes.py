"""Showing changes as kapp does: `@@ op resource @@` line diffs and the Changes table."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from kapply.apply.loop import ClusterChange
from kapply.apply.strategies import create_strategy, delete_strategy, label, update_strategy
from kapply.apply.waiters import wait_state
from kapply.config.config import Config
from kapply.config.rules import MaskCounter, mask
from kapply.diff.change import Change, Op
from kapply.diff.text_diff import diff_lines, render
from kapply.diff.yaml_text import to_yaml
from kapply.ui.table import Table


def summary(changes: Sequence[ClusterChange]) -> tuple[str, str]:
    """kapp's two note lines."""
    ops = [c.apply_op for c in changes]
    waits = [c.wait.value for c in changes]
    return (f"Op:      {ops.count('create')} create, {ops.count('delete')} delete, {ops.count('update')} update, "
            f"{ops.count('noop')} noop, {ops.count('exists')} exists",
            f"Wait to: {waits.count('reconcile')} reconcile, {waits.count('delete')} delete, "
            f"{waits.count('noop')} noop")


def description(changes: Sequence[ClusterChange]) -> str:
    op_line, wait_line = summary(changes)
    return "update: " + op_line.replace("Op:      ", "Op: ") + " / " + wait_line


def age(obj: dict | None, now: datetime | None = None) -> str:
    """Kubernetes' short age (`45s`, `12m`, `5h`, `3d`) of an object, or empty for one not yet created."""
    created = ((obj or {}).get("metadata") or {}).get("creationTimestamp")
    if not created:
        return ""
    seconds = int(((now or datetime.now(UTC)) - datetime.fromisoformat(created.replace("Z", "+00:00")))
                  .total_seconds())
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
        rows.append((c.key.namespace or "(cluster)", c.key.name, c.key.kind, age(c.existing), cc.apply_op,
                     op_strategy(c, default_update_strategy), cc.wait.value, *reconcile_state(c)))
    return Table("Changes", ("Namespace", "Name", "Kind", "Age", "Op", "Op st.", "Wait to", "Rs", "Ri"),
                 tuple(rows), notes=summary(changes),
                 json_keys=("namespace", "name", "kind", "age", "op", "op_strategy", "wait_to", "reconcile_state",
                            "reconcile_info"))


def line_diff(change: Change, config: Config, counter: MaskCounter | None, *, context: int = 2,
              line_numbers: bool = True) -> str:
    """`@@ op desc @@` and the line diff of one change; values under diffMaskRules masked unless counter is None."""
    left, right = change.left, change.right
    if counter is not None:
        left = mask(left, config.diff_mask_rules, counter) if left is not None else None
        right = mask(right, config.diff_mask_rules, counter) if right is not None else None
    old = to_yaml(left).split("\n") if left is not None else []
    new = to_yaml(right).split("\n") if right is not None else []
    body = render(diff_lines(old, new), context=context, line_numbers=line_numbers)
    return f"@@ {change.op.apply_op} {change.describe()} @@\n{body}"


def all_line_diffs(changes: Sequence[ClusterChange], config: Config, counter: MaskCounter | None, *,
                   context: int = 2, line_numbers: bool = True) -> str:
    """The line diffs of the changes that apply something."""
    return "".join(line_diff(cc.change, config, counter, context=context, line_numbers=line_numbers)
                   for cc in changes if cc.apply_op != "noop")
