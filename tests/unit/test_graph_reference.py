"""The graph builder against a plain, edge-by-edge rendering of kapp's algorithm on random changes."""

import random

import pytest

from kapply.config import parse_config
from kapply.graph import GraphError, GraphOp, Node, RuleOrder, build_graph, groups_of, rules_of

GROUPS = [f"example.com/g{k}" for k in range(5)]
OPS = [GraphOp.UPSERT, GraphOp.UPSERT, GraphOp.DELETE, GraphOp.NOOP]


def kapp_edges(nodes, config):
    """kapp's NewChangeGraph, one edge at a time; None when the required rules form a cycle."""
    rules = [
        (index, rule)
        for index, node in enumerate(nodes)
        for rule in rules_of(node.resource, node.description, config.change_rule_bindings)
        if rule.action == node.op
    ]
    rules.sort(key=lambda pair: -pair[1].weight)
    groups = [groups_of(node.resource, config.change_group_bindings) for node in nodes]
    waiting = [[] for _ in nodes]

    def reaches(start, target):
        seen, stack = set(), [start]
        while stack:
            for dependency in waiting[stack.pop()]:
                if dependency == target:
                    return True
                if dependency not in seen:
                    seen.add(dependency)
                    stack.append(dependency)
        return False

    for optional in (False, True):
        for index, rule in rules:
            if rule.ignore_if_cyclical != optional:
                continue
            for other, node in enumerate(nodes):
                for _ in range(groups[other].count(rule.target_group) if node.op == rule.target_op else 0):
                    waiter, dependency = (index, other) if rule.order is RuleOrder.AFTER else (other, index)
                    if not optional or (
                        waiter != dependency and dependency not in waiting[waiter] and not reaches(dependency, waiter)
                    ):
                        waiting[waiter].append(dependency)
        if not optional and any(reaches(node, node) for node in range(len(nodes))):
            return None
    return tuple(tuple(dict.fromkeys(dependencies)) for dependencies in waiting)


def random_rule(rng):
    return " ".join(
        [
            rng.choice(["upsert", "delete"]),
            rng.choice(["before", "after"]),
            rng.choice(["upserting", "deleting"]),
            rng.choice(GROUPS),
        ]
    )


def random_case(rng):
    nodes = []
    for index in range(rng.randint(1, 25)):
        annotations = {f"kapp.k14s.io/change-group.{k}": rng.choice(GROUPS) for k in range(rng.randint(0, 2))}
        if rng.random() < 0.15:
            annotations["kapp.k14s.io/change-rule"] = random_rule(rng)
        annotations.update({f"tag-{tag}": "" for tag in range(4) if rng.random() < 0.4})
        resource = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"c{index}", "annotations": annotations},
        }
        nodes.append(Node(rng.choice(OPS), resource, f"configmap/c{index} (v1) cluster"))

    def tagged():
        return [{"hasAnnotationMatcher": {"keys": [f"tag-{rng.randrange(4)}"]}}]

    config = {
        "apiVersion": "kapp.k14s.io/v1alpha1",
        "kind": "Config",
        "changeGroupBindings": [
            {"name": rng.choice(GROUPS), "resourceMatchers": tagged()} for _ in range(rng.randint(0, 3))
        ],
        "changeRuleBindings": [
            {
                "rules": [random_rule(rng) for _ in range(rng.randint(1, 2))],
                "ignoreIfCyclical": rng.random() < 0.85,
                "resourceMatchers": tagged(),
            }
            for _ in range(rng.randint(0, 6))
        ],
    }
    return nodes, parse_config(config, "test")


@pytest.mark.parametrize("seed", range(5))
def test_graph_matches_kapps_edge_by_edge_algorithm(seed):
    rng = random.Random(seed)
    for _ in range(100):
        nodes, config = random_case(rng)
        expected = kapp_edges(nodes, config)
        if expected is None:
            with pytest.raises(GraphError, match="^Detected cycle while ordering changes: "):
                build_graph(nodes, config)
        else:
            assert build_graph(nodes, config).waiting_for == expected
