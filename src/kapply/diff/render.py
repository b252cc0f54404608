"""A change as text: kapp's `@@ op resource @@` line diff, with masked values, and the op summary lines.

These are data, not presentation: the app-change history stores the same text the CLI prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kapply import objects
from kapply.config.config import Config
from kapply.config.matchers import matches_any
from kapply.config.rules import MaskCounter, mask
from kapply.diff.change import ApplyOp, Change
from kapply.diff.yaml_text import to_yaml
from kapply.objects import Obj


@dataclass(frozen=True, slots=True)
class DiffFormat:
    """How line diffs are made and shown: kapp's `--diff-context`, `--diff-line-numbers`, `--diff-mask` and
    `--diff-anchored` (an anchored diff for resources over 500 lines)."""

    context: int = 2
    line_numbers: bool = True
    mask: bool = True
    anchored: bool = False


# Annotations that hold a copy of the whole object: where a masked value hides again if left alone.
OBJECT_COPIES = ("kubectl.kubernetes.io/last-applied-configuration", objects.ORIGINAL)


def masked(obj: Obj, config: Config, counter: MaskCounter) -> Obj:
    """obj with the values under diffMaskRules masked (`<-- value not shown (#N)`), and, when any rule covers it (a
    Secret, say), also every copy of it the object carries (kubectl's last-applied annotation, kapp's original): a
    value masked in `data` must not show up in full a few lines above. (managedFields name fields, never values.)"""
    if not any(matches_any(rule.resource_matchers, obj) for rule in config.diff_mask_rules):
        return obj
    obj = mask(obj, config.diff_mask_rules, counter)
    copies = {k: v for k, v in objects.annotations(obj).items() if k in OBJECT_COPIES}
    if copies:
        obj = objects.with_annotations(obj, counter.mask_map(copies))
    return obj


def _yaml_lines(obj: Obj | None, config: Config, counter: MaskCounter | None) -> list[str]:
    if obj is None:
        return []
    if counter is not None:
        obj = masked(obj, config, counter)
    return to_yaml(obj).split("\n")


@dataclass(frozen=True, slots=True)
class Hunk:
    """One change as text: kapp's `@@ op resource @@` header line and the diff's lines."""

    header: str
    body: str

    def __str__(self) -> str:
        return self.header + self.body


def hunk(
    change: Change,
    config: Config,
    counter: MaskCounter | None,
    fmt: DiffFormat = DiffFormat(),
    op: ApplyOp | None = None,
) -> Hunk:
    """The line diff of one change; values under diffMaskRules masked unless counter is None. `op` is the one the
    header names (default: the change's); an ignored change has no diff (kapp compares the object with itself)."""
    from kapply.diff.text_diff import diff_lines, render  # here: a deploy with nothing to change shows no diff

    right = change.left if change.ignored else change.right
    records = diff_lines(
        _yaml_lines(change.left, config, counter), _yaml_lines(right, config, counter), anchored=fmt.anchored
    )
    body = render(records, context=fmt.context, line_numbers=fmt.line_numbers)
    return Hunk(f"@@ {op or change.op.apply_op} {change.describe()} @@\n", body)


def applied_yaml(obj: Obj, config: Config, counter: MaskCounter) -> str:
    """kapp's `--diff-changes-yaml` text of what a create or update sends: without managedFields, values under
    diffMaskRules masked (whatever `--diff-mask` says, as kapp)."""
    meta = {k: v for k, v in objects.metadata(obj).items() if k != "managedFields"}
    return to_yaml(masked({**obj, "metadata": meta} if "metadata" in obj else obj, config, counter))


def hunks(changes: Iterable[Change], config: Config, fmt: DiffFormat = DiffFormat()) -> list[Hunk]:
    """The diffs of the changes that apply something, numbering masked values across all of them."""
    counter = MaskCounter() if fmt.mask else None
    return [hunk(c, config, counter, fmt) for c in changes if c.op.apply_op is not ApplyOp.NOOP]


def line_diffs(changes: Iterable[Change], config: Config, fmt: DiffFormat = DiffFormat()) -> str:
    """All the hunks as one text (kapp's `--diff-changes` output; what app-change history stores)."""
    return "".join(str(h) for h in hunks(changes, config, fmt))


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
