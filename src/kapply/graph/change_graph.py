"""Ordering changes by their groups and rules, as kapp's diffgraph does.

Nodes are referred to by their index in the input. Required rules are added first and must not
form a cycle; optional rules (`ignoreIfCyclical`) are then added heaviest first, each edge only
if it closes no cycle. See `_Edges` for what keeps thousands of changes (and a million edges,
as the default rules give when thousands of workloads each wait for every ConfigMap) fast.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import chain

from kapply.config.config import Config
from kapply.errors import GraphError
from kapply.graph.change import GraphOp, Node
from kapply.graph.change_group import groups_of
from kapply.graph.change_rule import ChangeRule, RuleOrder, rules_of
from kapply.graph.matching import MatchFunction, SharedMatching

_REQUIRED = "Change graph: Calculating required deps"
_OPTIONAL = "Change graph: Calculating optional deps"

_Key = tuple[str, GraphOp]  # a group, and which of its changes: the upserts or the deletes

# Depth-first search states of a node.
_NEW, _ON_PATH, _DONE = 0, 1, 2


@dataclass(frozen=True, slots=True)
class ChangeGraph:
    """The changes each change waits for.

    `waiting_for[i]` lists, without repeats and in the order kapp adds them, the nodes that node i
    waits for; `order` has every node after all it waits for."""

    waiting_for: tuple[tuple[int, ...], ...]
    descriptions: tuple[str, ...]
    order: tuple[int, ...]

    def ready(self, done: AbstractSet[int]) -> list[int]:
        """Nodes not in `done` that wait for nothing outside it, in node order."""
        return [
            node
            for node, dependencies in enumerate(self.waiting_for)
            if node not in done and all(map(done.__contains__, dependencies))
        ]

    def blocked(self, done: AbstractSet[int]) -> list[int]:
        """Nodes that still wait for something not in `done`, in node order."""
        return [
            node for node, dependencies in enumerate(self.waiting_for) if not all(map(done.__contains__, dependencies))
        ]

    def why_blocked(self, done: AbstractSet[int]) -> str:
        """kapp's listing of blocked changes: each one, then `  [blocked] <desc>` for what it still waits for."""
        lines = []
        for node in self.blocked(done):
            lines.append(f"{self.descriptions[node]}\n")
            lines.extend(
                f"  [blocked] {self.descriptions[dependency]}\n"
                for dependency in self.waiting_for[node]
                if dependency not in done
            )
        return "".join(lines)


def build_graph(nodes: Sequence[Node], config: Config) -> ChangeGraph:
    """Order `nodes` by the change groups and rules of their resources and of `config`.

    Raises GraphError for a malformed group or rule, or for required rules that form a cycle."""
    descriptions = tuple(node.description for node in nodes)
    matches = SharedMatching()
    try:
        rules = _applicable_rules(nodes, config, matches)
    except GraphError as err:
        raise GraphError(f"{_REQUIRED}: {err}") from None
    if not rules:  # like kapp, groups are only worked out (and so only fail) once some rule needs them
        return ChangeGraph(waiting_for=((),) * len(nodes), descriptions=descriptions, order=tuple(range(len(nodes))))
    required = [(node, rule) for node, rule in rules if not rule.ignore_if_cyclical]
    optional = [(node, rule) for node, rule in rules if rule.ignore_if_cyclical]
    edges = _Edges(_membership(nodes, config, matches, _REQUIRED if required else _OPTIONAL))
    for node, rule in required:
        edges.add_required(node, rule)
    order = _order_or_cycle(edges, descriptions)
    if optional:
        edges.set_levels(order)
        for node, rule in optional:
            edges.add_optional(node, rule)
        order = edges.order()
    return ChangeGraph(waiting_for=edges.waiting_for(), descriptions=descriptions, order=tuple(order))


def _applicable_rules(nodes: Sequence[Node], config: Config, matches: MatchFunction) -> list[tuple[int, ChangeRule]]:
    """(node, rule) for each rule whose action is its node's op, heaviest first, otherwise in node order.

    Every node's rules are parsed, noop ones included, so a malformed rule is reported whatever its change."""
    rules = [
        (index, rule)
        for index, node in enumerate(nodes)
        for rule in rules_of(node.resource, node.description, config.change_rule_bindings, matches)
        if rule.action == node.op
    ]
    rules.sort(key=lambda pair: -pair[1].weight)
    return rules


@dataclass(frozen=True, slots=True)
class _Membership:
    members: dict[_Key, tuple[int, ...]]  # the upserted, and the deleted, nodes of each group, in node order
    keys_of: tuple[tuple[_Key, ...], ...]  # for each node, the keys it is a member under


def _membership(nodes: Sequence[Node], config: Config, matches: MatchFunction, phase: str) -> _Membership:
    members: dict[_Key, list[int]] = defaultdict(list)
    keys_of = []
    for index, node in enumerate(nodes):
        try:
            groups = groups_of(node.resource, config.change_group_bindings, matches)
        except GraphError as err:
            raise GraphError(f"{phase}: {err}") from None
        keys = () if node.op == GraphOp.NOOP else tuple((group, node.op) for group in dict.fromkeys(groups))
        for key in keys:
            members[key].append(index)
        keys_of.append(keys)
    return _Membership({key: tuple(indices) for key, indices in members.items()}, tuple(keys_of))


class _Edges:
    """The graph while it is built.

    A rule that makes a node wait for a whole group shares the group's member tuple instead of
    copying it (a Deployment waits for every ConfigMap, Secret and ServiceAccount of the app), so
    a node's dependencies are a list of segments, with repeats dropped only at the end. A repeat is
    harmless meanwhile: kapp skips an edge that is already there, which changes nothing else.

    For optional rules each node also has a level, above the level of everything it waits for. A
    node can only come to wait, transitively, for nodes below it, so an edge to a node at or below
    the waiter's level cannot close a cycle, and a search for one never goes down to the waiter's
    level. Whether one edge of a rule closes a cycle does not depend on the rule's other edges (a
    path that closes one would pass through the rule's node twice)."""

    __slots__ = ("_membership", "_segments", "_waiters", "_group_waiters", "_levels", "_tops")

    def __init__(self, membership: _Membership) -> None:
        size = len(membership.keys_of)
        self._membership = membership
        self._segments: list[list[Sequence[int]]] = [[] for _ in range(size)]
        self._waiters: list[list[int]] = [[] for _ in range(size)]  # edge by edge
        self._group_waiters: dict[_Key, list[int]] = defaultdict(list)  # waiting for every member of a group
        self._levels = [0] * size
        self._tops: dict[_Key, int] = {}

    def dependencies(self, node: int) -> Iterator[int]:
        return chain.from_iterable(self._segments[node])

    def waiting_for(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(dict.fromkeys(self.dependencies(node))) for node in range(len(self._segments)))

    def add_required(self, node: int, rule: ChangeRule) -> None:
        key = (rule.target_group, rule.target_op)
        targets = self._membership.members.get(key, ())
        if rule.order is RuleOrder.AFTER:
            self._wait_for_group(node, key, targets)
        else:
            for target in targets:
                self._wait_for_each(target, (node,))

    def add_optional(self, node: int, rule: ChangeRule) -> None:
        """Like add_required, leaving out self-edges and edges that would close a cycle."""
        key = (rule.target_group, rule.target_op)
        targets = self._membership.members.get(key, ())
        levels, level = self._levels, self._levels[node]
        if rule.order is RuleOrder.AFTER:
            top = self._top_level(key, targets)
            if top <= level and key not in self._membership.keys_of[node]:  # usual: every target sits below `node`
                self._wait_for_group(node, key, targets)
            else:
                kept = [
                    target
                    for target in targets
                    if target != node and (levels[target] <= level or not self._waits_for(target, node))
                ]
                self._wait_for_each(node, kept)
                top = max(map(levels.__getitem__, kept), default=-1)
            if level <= top:
                self._raise_level(node, top + 1)
        else:
            for target in targets:
                if target != node and (level <= levels[target] or not self._waits_for(node, target)):
                    self._wait_for_each(target, (node,))
                    if levels[target] <= level:
                        self._raise_level(target, level + 1)

    def _top_level(self, key: _Key, members: tuple[int, ...]) -> int:
        """The highest level in a group, remembered until one of its members rises."""
        top = self._tops.get(key)
        if top is None:
            top = self._tops[key] = max(map(self._levels.__getitem__, members), default=-1)
        return top

    def set_levels(self, order: list[int]) -> None:
        """Levels from an order that has every node after all it waits for."""
        levels = self._levels
        for node in order:
            levels[node] = 1 + max(map(levels.__getitem__, self.dependencies(node)), default=-1)

    def order(self) -> list[int]:
        return sorted(range(len(self._levels)), key=self._levels.__getitem__)

    def _wait_for_group(self, waiter: int, key: _Key, members: tuple[int, ...]) -> None:
        self._segments[waiter].append(members)
        self._group_waiters[key].append(waiter)

    def _wait_for_each(self, waiter: int, dependencies: Sequence[int]) -> None:
        self._segments[waiter].append(dependencies)
        for dependency in dependencies:
            self._waiters[dependency].append(waiter)

    def _waiters_of(self, node: int) -> Iterator[int]:
        group_waiters = self._group_waiters
        return chain(
            self._waiters[node], *(group_waiters[key] for key in self._membership.keys_of[node] if key in group_waiters)
        )

    def _waits_for(self, start: int, target: int) -> bool:
        """Whether `start` waits, directly or not, for `target`."""
        levels, floor = self._levels, self._levels[target]
        seen, stack = {start}, [start]
        while stack:
            for dependency in self.dependencies(stack.pop()):
                if dependency == target:
                    return True
                if levels[dependency] > floor and dependency not in seen:
                    seen.add(dependency)
                    stack.append(dependency)
        return False

    def _raise_level(self, node: int, level: int) -> None:
        """Put `node` at `level`, and what waits for it above it."""
        levels, tops, keys_of = self._levels, self._tops, self._membership.keys_of
        levels[node] = level
        stack = [node]
        while stack:
            lower = stack.pop()
            for key in keys_of[lower]:
                tops.pop(key, None)
            for waiter in self._waiters_of(lower):
                if levels[waiter] <= levels[lower]:
                    levels[waiter] = levels[lower] + 1
                    stack.append(waiter)


def _order_or_cycle(edges: _Edges, descriptions: tuple[str, ...]) -> list[int]:
    """Every node after all it waits for (depth-first, in node order), or GraphError naming a cycle as kapp does."""
    state = [_NEW] * len(descriptions)
    order: list[int] = []
    for root in range(len(descriptions)):
        if state[root] != _NEW:
            continue
        state[root] = _ON_PATH
        path, pending = [root], [edges.dependencies(root)]
        while path:
            for dependency in pending[-1]:
                if state[dependency] == _ON_PATH:
                    raise GraphError(_cycle_message(path, dependency, descriptions))
                if state[dependency] == _NEW:
                    state[dependency] = _ON_PATH
                    path.append(dependency)
                    pending.append(edges.dependencies(dependency))
                    break
            else:
                node = path.pop()
                pending.pop()
                state[node] = _DONE
                order.append(node)
    return order


def _cycle_message(path: list[int], repeated: int, descriptions: tuple[str, ...]) -> str:
    steps = " -> ".join(f"[{descriptions[node]}]" for node in [*path, repeated])
    return f"Detected cycle while ordering changes: {steps} (found repeated: {descriptions[repeated]})"
