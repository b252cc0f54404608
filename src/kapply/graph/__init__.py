"""Ordering changes: which change waits for which, from change groups and change rules (kapp's diffgraph)."""

from kapply.errors import GraphError
from kapply.graph.change import GraphOp, Node
from kapply.graph.change_graph import ChangeGraph, build_graph
from kapply.graph.change_group import groups_of
from kapply.graph.change_rule import ChangeRule, RuleOrder, parse_rule, rules_of

__all__ = [
    "ChangeGraph",
    "ChangeRule",
    "GraphError",
    "GraphOp",
    "Node",
    "RuleOrder",
    "build_graph",
    "groups_of",
    "parse_rule",
    "rules_of",
]
