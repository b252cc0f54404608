"""A plan as text, as kapp prints it before applying: `--diff-changes-yaml` (what each change sends) and
`--diff-changes` (the line diff of each change), in the order of the plan's changes.

Both share one numbering of masked values, as kapp's process-wide one: a value shows the same `#N` in the YAML and
in the diffs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kapply.apply.planning import ClusterChange
from kapply.apply.strategies import create_strategy, delete_strategy, update_strategy
from kapply.config.config import Config
from kapply.config.rules import MaskCounter
from kapply.diff.change import ApplyOp
from kapply.diff.render import DiffFormat, Hunk, applied_yaml, hunk

UNKNOWN_STRATEGY = "unknown"  # kapp's `tools diff`: no strategy without a cluster


@dataclass(frozen=True, slots=True)
class ChangeSetText:
    yaml: tuple[str, ...]  # `---\n# <op>: <resource>[ (strategy: <s>)]\n<yaml>\n` per change that applies something
    hunks: tuple[Hunk, ...]  # one per change, noops included (kapp shows `@@ noop ... @@` and no lines)


def strategy(cc: ClusterChange, default_update_strategy: str = "") -> str:
    """The strategy a change applies with, as its annotation names it (`fallback-on-replace`), or ""."""
    res = cc.change.resource
    match cc.apply_op:
        case ApplyOp.CREATE:
            return create_strategy(res).value
        case ApplyOp.UPDATE:
            return update_strategy(res, default_update_strategy).value
        case ApplyOp.DELETE:
            return delete_strategy(res).value
    return ""


def yaml_block(
    cc: ClusterChange, config: Config, counter: MaskCounter, default_update_strategy: str = "", *, known: bool = True
) -> str:
    """One change of kapp's `--diff-changes-yaml`: a header, and for a create or an update what is sent (rebased
    onto the live object, with masked values). `known=False`: the strategy cannot be told (no cluster)."""
    header = f"# {cc.apply_op}: {cc.describe()}"
    how = strategy(cc, default_update_strategy) if known else UNKNOWN_STRATEGY
    if how:
        header += f" (strategy: {how})"
    body = ""
    if cc.apply_op in (ApplyOp.CREATE, ApplyOp.UPDATE):
        sent = cc.change.to_apply if cc.change.to_apply is not None else cc.change.resource
        body = applied_yaml(sent, config, counter)
    return f"---\n{header}\n{body}\n"


def change_set_text(
    planned: Sequence[ClusterChange],
    config: Config,
    fmt: DiffFormat = DiffFormat(),
    *,
    yaml: bool = False,
    diffs: bool = True,
    default_update_strategy: str = "",
    known_strategies: bool = True,
    counter: MaskCounter | None = None,
) -> ChangeSetText:
    """The YAML blocks (when `yaml`) and the line diffs (when `diffs`) of the planned changes. The YAML is masked
    whatever `fmt.mask` says, as kapp's. Masked values are numbered by `counter` (a new one when None)."""
    counter = MaskCounter() if counter is None else counter
    blocks = tuple(
        yaml_block(cc, config, counter, default_update_strategy, known=known_strategies)
        for cc in planned
        if yaml and cc.apply_op is not ApplyOp.NOOP
    )
    diff_counter = counter if fmt.mask else None
    hunks = tuple(hunk(cc.change, config, diff_counter, fmt, cc.apply_op) for cc in planned if diffs)
    return ChangeSetText(blocks, hunks)
