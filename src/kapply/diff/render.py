"""A change as text: kapp's `@@ op resource @@` line diff, with masked values, and the op summary lines.

These are data, not presentation: the app-change history stores the same text the CLI prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kapply.config.config import Config
from kapply.config.rules import MaskCounter, mask
from kapply.diff.change import ApplyOp, Change
from kapply.diff.text_diff import diff_lines, render
from kapply.diff.yaml_text import to_yaml
from kapply.objects import Obj


@dataclass(frozen=True, slots=True)
class DiffFormat:
    """How line diffs are shown: kapp's `--diff-context`, `--diff-line-numbers` and `--diff-mask`."""

    context: int = 2
    line_numbers: bool = True
    mask: bool = True


def _yaml_lines(obj: Obj | None, config: Config, counter: MaskCounter | None) -> list[str]:
    if obj is None:
        return []
    if counter is not None:
        obj = mask(obj, config.diff_mask_rules, counter)
    return to_yaml(obj).split("\n")


def line_diff(change: Change, config: Config, counter: MaskCounter | None, fmt: DiffFormat = DiffFormat()) -> str:
    """`@@ op desc @@` and the line diff of one change; values under diffMaskRules masked unless counter is None."""
    records = diff_lines(_yaml_lines(change.left, config, counter), _yaml_lines(change.right, config, counter))
    body = render(records, context=fmt.context, line_numbers=fmt.line_numbers)
    return f"@@ {change.op.apply_op} {change.describe()} @@\n{body}"


def line_diffs(changes: Iterable[Change], config: Config, fmt: DiffFormat = DiffFormat()) -> str:
    """The line diffs of the changes that apply something, numbering masked values across all of them."""
    counter = MaskCounter() if fmt.mask else None
    return "".join(line_diff(c, config, counter, fmt) for c in changes if c.op.apply_op is not ApplyOp.NOOP)


def summary_lines(apply_ops: Sequence[str], wait_ops: Sequence[str]) -> tuple[str, str]:
    """kapp's two summary lines (the notes of the Changes table)."""
    return (
        f"Op:      {apply_ops.count('create')} create, {apply_ops.count('delete')} delete, "
        f"{apply_ops.count('update')} update, {apply_ops.count('noop')} noop, {apply_ops.count('exists')} exists",
        f"Wait to: {wait_ops.count('reconcile')} reconcile, {wait_ops.count('delete')} delete, "
        f"{wait_ops.count('noop')} noop",
    )


def change_description(apply_ops: Sequence[str], wait_ops: Sequence[str]) -> str:
    """The description kapp stores in an app-change: `update: Op: ... / Wait to: ...`."""
    op_line, wait_line = summary_lines(apply_ops, wait_ops)
    return "update: " + op_line.replace("Op:      ", "Op: ") + " / " + wait_line
