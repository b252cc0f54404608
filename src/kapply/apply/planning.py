"""From changes to what the apply loop runs: what to wait for after each change, which changes take part at all,
and the order they run in (kapp's ClusterChange and its change graph)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from kapply import objects
from kapply.apply.strategies import DeleteStrategy, delete_strategy
from kapply.apply.waiters import wait_state
from kapply.config.config import Config
from kapply.diff.change import ApplyOp, Change, Op
from kapply.diff.render import change_description, summary_lines
from kapply.graph import ChangeGraph, GraphOp, Node, build_graph


class WaitOp(StrEnum):
    RECONCILE = "reconcile"
    DELETE = "delete"
    NOOP = "noop"


def wait_op(change: Change, config: Config, wait: bool = True, wait_ignored: bool = False) -> WaitOp:
    """kapp's wait op: nothing when waiting is off, for an ignored change unless `wait_ignored` (kapp's
    --wait-ignored), or disabled for the resource; else reconcile what is created or updated (and kept resources
    that have not converged), and see deleted ones gone."""
    if not wait or (change.ignored and not wait_ignored):
        return WaitOp.NOOP
    if objects.has_annotation(change.resource, objects.DISABLE_WAIT):
        return WaitOp.NOOP
    if change.op in (Op.ADD, Op.UPDATE, Op.EXISTS):
        return WaitOp.RECONCILE
    if change.op is Op.DELETE:
        return WaitOp.NOOP if delete_strategy(change.resource) is DeleteStrategy.ORPHAN else WaitOp.DELETE
    if (
        change.op is Op.KEEP
        and change.existing is not None
        and not wait_state(change.existing, config.wait_rules).successful
    ):
        return WaitOp.RECONCILE
    return WaitOp.NOOP


@dataclass(frozen=True, slots=True)
class ClusterChange:
    """A change as the apply loop sees it: what to apply and what to wait for (kapp's ClusterChange)."""

    change: Change
    wait: WaitOp
    skipped: bool = False  # an ignored change that is not applied (kapp's --apply-ignored not set): op noop

    @property
    def apply_op(self) -> ApplyOp:
        return ApplyOp.NOOP if self.skipped else self.change.op.apply_op

    def describe(self) -> str:
        return self.change.describe()


def cluster_changes(
    changes: Sequence[Change],
    config: Config,
    wait: bool = True,
    *,
    apply_ignored: bool = False,
    wait_ignored: bool = False,
) -> list[ClusterChange]:
    """The changes that apply or wait on something; the others are neither shown nor run. Ignored changes (deletes
    of transient objects) are applied only with `apply_ignored` and waited on only with `wait_ignored` (kapp's
    --apply-ignored and --wait-ignored)."""
    out = [
        ClusterChange(c, wait_op(c, config, wait, wait_ignored), skipped=c.ignored and not apply_ignored)
        for c in changes
    ]
    return [c for c in out if c.apply_op is not ApplyOp.NOOP or c.wait is not WaitOp.NOOP]


def offline_changes(changes: Sequence[Change]) -> list[ClusterChange]:
    """Every change, unchanged resources included, none waited on: what kapp's `tools diff` shows."""
    return [ClusterChange(c, WaitOp.NOOP) for c in changes]


def graph_op(op: ApplyOp) -> GraphOp:
    """A change's op in the graph, from what applying it does (an ignored delete that is not applied is a noop)."""
    if op is ApplyOp.DELETE:
        return GraphOp.DELETE
    if op in (ApplyOp.CREATE, ApplyOp.UPDATE, ApplyOp.EXISTS):
        return GraphOp.UPSERT
    return GraphOp.NOOP


def order(planned: Sequence[ClusterChange], config: Config) -> ChangeGraph:
    """The dependency graph of the changes; a cycle is an error (raised before anything is applied)."""
    return build_graph([Node(graph_op(c.apply_op), c.change.resource, c.describe()) for c in planned], config)


def summary(planned: Sequence[ClusterChange]) -> tuple[str, str]:
    """kapp's `Op: ...` and `Wait to: ...` lines."""
    return summary_lines([c.apply_op for c in planned], [c.wait for c in planned])


def description(planned: Sequence[ClusterChange]) -> str:
    """The app-change description of a deploy: `update: Op: ... / Wait to: ...`."""
    return change_description([c.apply_op for c in planned], [c.wait for c in planned])
