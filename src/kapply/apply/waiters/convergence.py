"""One poll of a waited resource: its own waiter's verdict, its children's, and the lines kapp prints for it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kapply import objects
from kapply.apply.waiters import registry
from kapply.apply.waiters.state import State, Word, failed, ok
from kapply.objects import describe, key_of

if TYPE_CHECKING:
    from kapply.config.config import WaitRule


@dataclass(frozen=True, slots=True)
class ChildState:
    resource: dict[str, Any]
    state: State


@dataclass(frozen=True, slots=True)
class Convergence:
    """One poll of a waited resource: the state of the change and what kapp shows about it."""

    resource: dict[str, Any]
    state: State  # of the change: decides whether the wait is over
    parent: State | None  # the resource's own waiter's verdict; None when no waiter applies
    children: tuple[ChildState, ...] = ()
    error: str = ""  # kapp fails the wait with `Errored: <error>` instead of looking at the state

    @property
    def word(self) -> Word:
        return Word.ERROR if self.error else self.state.word


def converge(
    resource: dict[str, Any],
    wait_rules: Sequence[WaitRule] = (),
    children: Sequence[dict[str, Any]] = (),
    *,
    ignore_failing_api_services: bool = False,
) -> Convergence:
    """The resource's state, given its children listed over `which_children` (in any order).

    A resource whose own waiter is not done still shows its children, but its state is the
    waiter's; only a resource with no waiter takes its state from the children."""
    children = _ordered_children(resource, children)
    waiter = registry.find(resource, wait_rules, children, ignore_failing_api_services)
    parent = waiter.check() if waiter else None
    if parent is not None and parent.done:
        return Convergence(resource, parent, parent)

    annotations = objects.annotations(resource)
    if objects.DISABLE_ASSOCIATED_RESOURCES_WAIT in annotations:
        if annotations[objects.DISABLE_ASSOCIATED_RESOURCES_WAIT] != "":
            error = (
                f"Expected annotation '{objects.DISABLE_ASSOCIATED_RESOURCES_WAIT}' on resource "
                f"'{describe(resource)}' to have value ''"
            )
            return Convergence(resource, failed(error), parent, error=error)
        return Convergence(resource, parent if parent is not None else ok(), parent)

    child_states = tuple(
        ChildState(child, _state(child, wait_rules, children, ignore_failing_api_services)) for child in children
    )
    if parent is not None:
        return Convergence(resource, parent, parent, child_states)
    states = [child.state for child in child_states]
    state = next((s for s in states if s.terminally_failed), None) or next((s for s in states if not s.done), ok())
    return Convergence(resource, state, parent, child_states)


def wait_state(
    resource: dict[str, Any],
    wait_rules: Sequence[WaitRule] = (),
    children: Sequence[dict[str, Any]] = (),
    *,
    ignore_failing_api_services: bool = False,
) -> State:
    """The state of waiting on the resource; see `converge`."""
    return converge(resource, wait_rules, children, ignore_failing_api_services=ignore_failing_api_services).state


def wait_lines(convergence: Convergence, wait_op: str = "reconcile") -> list[str]:
    """The lines kapp prints for one poll of a waited change, without time prefixes:

    ongoing: reconcile deployment/web (apps/v1) namespace: ns
     ^ Waiting for 1 unavailable replicas
     L ok: waiting on replicaset/web-abc (apps/v1) namespace: ns
     L ongoing: waiting on pod/web-abc-x (v1) namespace: ns
        ^ Pending: ContainerCreating
    """
    lines = [f"{convergence.word}: {wait_op} {describe(convergence.resource)}"]
    if convergence.parent is not None and convergence.parent.message:
        lines.append(f" ^ {convergence.parent.message}")
    for child in convergence.children:
        lines.append(f" L {child.state.word}: waiting on {describe(child.resource)}")
        if child.state.message:
            lines.append(f"    ^ {child.state.message}")
    return lines


def _state(
    resource: dict[str, Any],
    wait_rules: Sequence[WaitRule],
    associated: Sequence[dict[str, Any]],
    ignore_failing_api_services: bool,
) -> State:
    waiter = registry.find(resource, wait_rules, associated, ignore_failing_api_services)
    return waiter.check() if waiter else ok()


def _ordered_children(resource: dict[str, Any], children: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """By description, descending, as kapp shows them; without the parent itself if it was listed."""
    ordered = sorted(children, key=describe, reverse=True)
    parent_key = key_of(resource)
    for i, child in enumerate(ordered):
        if key_of(child) == parent_key:
            del ordered[i]
            break
    return ordered
