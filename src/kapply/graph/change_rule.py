"""Change rules: `(upsert|delete) (before|after) (upserting|deleting) <group>`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any

from kapply import objects
from kapply.config.config import ChangeRuleBinding
from kapply.config.matchers import matches_any
from kapply.errors import GraphError
from kapply.graph.change import GraphOp, annotation_values
from kapply.graph.change_group import checked_group_name, expand_placeholders
from kapply.graph.matching import MatchFunction

# Binding rules weigh more than annotation rules (0), and later bindings more than earlier ones.
_BINDING_BASE_WEIGHT = 100

_ACTIONS = {"upsert": GraphOp.UPSERT, "delete": GraphOp.DELETE}
_TARGET_ACTIONS = {"upserting": GraphOp.UPSERT, "deleting": GraphOp.DELETE}


class RuleOrder(StrEnum):
    BEFORE = "before"
    AFTER = "after"


@dataclass(frozen=True, slots=True)
class ChangeRule:
    """A rule of one change: when its op is `action`, it goes before or after every `target_op` change in the group."""

    action: GraphOp
    order: RuleOrder
    target_op: GraphOp
    target_group: str
    ignore_if_cyclical: bool = False  # optional: an edge that would close a cycle is left out
    weight: int = 0  # optional rules are added heaviest first


@lru_cache(maxsize=4096)
def parse_rule(text: str, *, ignore_if_cyclical: bool = False, weight: int = 0) -> ChangeRule:
    pieces = text.split(" ")
    if len(pieces) != 4:
        raise GraphError(
            "Expected change rule annotation value to have format "
            f"'(upsert|delete) (before|after) (upserting|deleting) (change-group)', but was '{text}'"
        )
    action, order, target_action, group = pieces
    checked_group_name(group)
    if action not in _ACTIONS:
        raise GraphError("Unknown change rule Action")
    if order not in tuple(RuleOrder):
        raise GraphError("Unknown change rule Order")
    if target_action not in _TARGET_ACTIONS:
        raise GraphError("Unknown change rule TargetAction")
    return ChangeRule(
        action=_ACTIONS[action],
        order=RuleOrder(order),
        target_op=_TARGET_ACTIONS[target_action],
        target_group=group,
        ignore_if_cyclical=ignore_if_cyclical,
        weight=weight,
    )


def rules_of(
    resource: dict[str, Any],
    description: str,
    bindings: Sequence[ChangeRuleBinding],
    matches: MatchFunction = matches_any,
) -> list[ChangeRule]:
    """The rules of a resource whatever its op: its change-rule annotations (required), then binding rules."""
    rules = [_parse_for(resource, description, value) for value in annotation_values(resource, objects.CHANGE_RULE)]
    for index, binding in enumerate(bindings):
        if matches(binding.resource_matchers, resource):
            rules.extend(
                _parse_for(
                    resource,
                    description,
                    text,
                    ignore_if_cyclical=binding.ignore_if_cyclical,
                    weight=_BINDING_BASE_WEIGHT + index,
                )
                for text in binding.rules
            )
    return rules


def _parse_for(
    resource: dict[str, Any], description: str, text: str, *, ignore_if_cyclical: bool = False, weight: int = 0
) -> ChangeRule:
    expanded = expand_placeholders(text, resource)
    try:
        return parse_rule(expanded, ignore_if_cyclical=ignore_if_cyclical, weight=weight)
    except GraphError as err:
        raise GraphError(f"Resource {description}: {err}") from None
