"""The Changes table, as kapp shows a plan."""

from __future__ import annotations

from collections.abc import Sequence

from kapply.apply.planning import ClusterChange, WaitOp, summary
from kapply.apply.strategies import create_strategy, delete_strategy, label, update_strategy
from kapply.apply.view import ChangeSetText
from kapply.apply.waiters import wait_state
from kapply.config.config import Config
from kapply.diff.attribution import OutsideField
from kapply.diff.change import ApplyOp, Change, Op
from kapply.diff.drift import DriftPolicy
from kapply.diff.ghost import describe_field
from kapply.diff.render import Hunk
from kapply.ui.age import age
from kapply.ui.output import Output
from kapply.ui.table import Column, Table


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


def changes_table(
    changes: Sequence[ClusterChange], default_update_strategy: str = "", *, offline: bool = False
) -> Table:
    """kapp's Changes table; `offline` (`tools diff`: no cluster) shows kapp's `???` as every op strategy."""
    rows = []
    for cc in sorted(changes, key=lambda cc: (cc.change.key.namespace, cc.change.key.name, cc.change.key.kind)):
        c = cc.change
        apply_op = "" if cc.apply_op is ApplyOp.NOOP else cc.apply_op.value
        wait_to = "" if cc.wait is WaitOp.NOOP else cc.wait.value
        rows.append(
            (
                c.key.namespace or "(cluster)",
                c.key.name,
                c.key.kind,
                age(c.existing),
                apply_op,
                "???" if offline else op_strategy(c, default_update_strategy),
                wait_to,
                *reconcile_state(c),
            )
        )
    return Table("Changes", CHANGES_COLUMNS, tuple(rows), notes=summary(changes))


CHANGES_COLUMNS = (
    Column("Namespace"),
    Column("Name"),
    Column("Kind"),
    Column("Age"),
    Column("Op"),
    Column("Op st.", "op_strategy"),
    Column("Wait to"),
    Column("Rs", "reconcile_state"),
    Column("Ri", "reconcile_info"),
)


def show_hunks(out: Output, hunks: Sequence[Hunk]) -> None:
    """Each diff as kapp prints it: the `@@` line, then the lines of the diff."""
    for hunk in hunks:
        out.begin_line(hunk.header)
        out.block(hunk.body)


def show_changes(out: Output, text: ChangeSetText) -> None:
    """kapp's `--diff-changes-yaml` blocks, then its `--diff-changes` diffs (either may be empty)."""
    for block in text.yaml:
        out.block(block)
    show_hunks(out, text.hunks)


_POLICY_OUTCOME = {
    DriftPolicy.ENFORCE: "set back to the desired value",
    DriftPolicy.PRESERVE: "kept (drift policy preserve)",
    DriftPolicy.WARN: "left as is (drift policy warn)",
}


def show_outside_changes(out: Output, found: Sequence[OutsideField], config: Config, policy: DriftPolicy) -> None:
    """kapply's note after the Changes table: the fields of the plan that someone else last wrote on the cluster,
    and who wrote them (nothing when there are none)."""
    if not found:
        return
    lines: list[str] = []
    for item in found:
        header = f"  {item.change.describe()}"
        if header not in lines:
            lines.append(header)
        lines.append(f"    {describe_field(item.change.resource, item.field, config, item.written_by)}")
    out.begin_line(f"Fields changed on the cluster by others: {_POLICY_OUTCOME[policy]}\n")
    out.block("\n".join(lines) + "\n")
