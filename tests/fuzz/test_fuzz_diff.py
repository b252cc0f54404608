"""Fuzz: the stages between reading and applying, on any resources and Configs. Preparation, versioned names, the
diff engine (with any kapp annotation, last-applied records good and bad), the strategies and the change graph end
in a result or in one KapplyError: what `deploy --diff-run` and `tools diff` run, without a cluster."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import assume, example, given
from hypothesis import strategies as st

from kapply import objects
from kapply.apply import strategies
from kapply.apply.planning import cluster_changes, order
from kapply.config.config import Config, merge, parse_config
from kapply.config.default import default_config
from kapply.diff import versioned
from kapply.diff.change import Change, Op, calculate, last_applied_annotations
from kapply.diff.render import line_diffs
from kapply.errors import KapplyError, ManifestError
from kapply.graph import ChangeGraph, GraphOp, Node, build_graph
from kapply.objects import Document, key_of
from kapply.resources.cluster import Discovery
from kapply.resources.preparation import Placement, prepare
from tests.fuzz.profiles import fuzz_settings
from tests.fuzz.strategies import configs, graph_ops, live_resources, mostly, resources
from tests.unit.conftest import BUILTIN_TYPES

DISCOVERY = Discovery(BUILTIN_TYPES)
APP_LABELS = {objects.APP_LABEL: "1"}
placements = st.builds(
    Placement,
    st.sampled_from(["ns", ""]),
    st.sampled_from(["", "into"]),
    st.sampled_from([{}, {"ns": "mapped"}, {"into": "mapped", "ns": "mapped"}]),
)
user_configs = st.none() | configs


def _config(user: Any) -> Config:
    """kapp's default config, then the user's; a ConfigError for a bad one is the caller's to expect."""
    if not isinstance(user, dict):
        return default_config()
    return merge([default_config(), parse_config(user, "doc 1")])


def _cm(**annotations: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "annotations": annotations}}


def _recorded(live: dict[str, Any], new: dict[str, Any], config: Config) -> dict[str, Any]:
    """`live` as kapply leaves it after applying `new`: with a valid last-applied record."""
    recorded = last_applied_annotations(live, new, config) or {}
    return objects.with_annotations(live, recorded)


@fuzz_settings
@given(user_configs, resources() | st.none(), resources() | live_resources() | st.none(), st.booleans(), st.booleans())
@example(None, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": 5}, None, False, True)  # TypeError in diff_side
@example(None, _cm(), _cm(**{objects.ORIGINAL: 5, objects.ORIGINAL_DIFF_MD5: "x"}), False, True)  # orjson TypeError
@example(None, _cm(), _cm(**{objects.ORIGINAL: "[" * 900 + "]" * 900, objects.ORIGINAL_DIFF_MD5: "x"}), False, True)
@example(
    None,
    _cm(),
    _cm(**{objects.ORIGINAL: json.dumps(_cm()), objects.ORIGINAL_DIFF_MD5: hashlib.md5().hexdigest()}),
    False,
    True,
)
def test_any_change_is_calculated_and_shown_or_one_kapply_error(user, new, existing, record, against_last_applied):
    assume(new is not None or existing is not None)
    try:
        config = _config(user)
        if record and new is not None and existing is not None:
            existing = _recorded(existing, new, config)
        change = calculate(new, existing, config, against_last_applied=against_last_applied)
        text = line_diffs([change], config)
        for resource in (new, existing):
            if resource is not None:
                strategies.create_strategy(resource)
                strategies.update_strategy(resource)
                strategies.delete_strategy(resource)
    except KapplyError:
        return
    assert isinstance(change, Change) and isinstance(text, str)
    if change.op is Op.KEEP and not objects.has_annotation(change.resource, objects.EXISTS):
        assert change.left == change.right


@fuzz_settings
@given(user_configs, st.lists(resources(), max_size=5), placements, st.booleans())
@example(
    None,
    [
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "c"},
            "spec": [1],
        }
    ],
    Placement("ns"),
    True,
)  # AttributeError in _crd_scopes
@example(
    None,
    [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "annotations": {"x": 5}}}],
    Placement("ns"),
    True,
)
def test_preparation_gives_placed_labeled_resources_or_one_kapply_error(user, given_resources, placement, scoping):
    docs = [Document(resource, f"doc {i + 1}") for i, resource in enumerate(given_resources)]
    try:
        prepared = prepare(docs, DISCOVERY, _config(user), placement, APP_LABELS, default_label_scoping=scoping)
    except KapplyError:
        return
    for doc in prepared:
        assert objects.labels(doc.obj)[objects.APP_LABEL] == "1"
        assert all(isinstance(value, str) for value in objects.annotations(doc.obj).values())


def _plan(user: Any, given: list[dict[str, Any]], live: list[dict[str, Any]]) -> tuple[list[Change], ChangeGraph]:
    """What `deploy --diff-run` computes between reading and showing, with the cluster's answers given."""
    config = _config(user)
    docs = [Document(resource, f"doc {i + 1}") for i, resource in enumerate(given)]
    prepared = prepare(docs, DISCOVERY, config, Placement("ns"), APP_LABELS)
    resolved = versioned.resolve(prepared, live, config)
    existing = {key_of(obj): obj for obj in live}
    new = {key_of(doc.obj): doc.obj for doc in resolved.desired}
    changes = [calculate(obj, existing.get(key), config) for key, obj in new.items()]
    changes = [
        versioned.against_previous(c, resolved.previous[c.key], config) if c.key in resolved.previous else c
        for c in changes
    ]
    changes += [
        calculate(None, obj, config) for key, obj in existing.items() if key not in new and key not in resolved.keep
    ]
    planned = cluster_changes(changes, config)
    line_diffs([c.change for c in planned], config)
    return changes, order(planned, config)


versioned_live = live_resources().map(
    lambda r: objects.with_metadata(r, name="a-ver-1", annotations={**objects.annotations(r), objects.VERSIONED: ""})
)


@fuzz_settings
@given(user_configs, st.lists(resources(), max_size=5), st.lists(mostly(live_resources() | versioned_live), max_size=4))
@example(None, [_cm(**{objects.VERSIONED: "", objects.NUM_VERSIONS: "1" * 5000})], [])
@example(
    None,
    [
        _cm(**{objects.VERSIONED: ""}),
        _cm(**{objects.VERSIONED_EXPLICIT_REF: "name: 5"})
        | {
            "metadata": {
                "name": "b",
                "annotations": {objects.VERSIONED_EXPLICIT_REF: "apiVersion: v1\nkind: ConfigMap\nname: [a]"},
            }
        },
    ],
    [],
)
def test_a_whole_plan_is_made_or_fails_with_one_kapply_error(user, given, live):
    live = [obj for obj in live if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict)]
    live = [objects.with_metadata(obj, labels={**objects.labels(obj), **APP_LABELS}) for obj in live]
    try:
        changes, graph = _plan(user, given, live)
    except KapplyError:
        return
    assert len(graph.order) == len([c for c in cluster_changes(changes, _config(user))])


@fuzz_settings
@given(user_configs, st.lists(st.tuples(resources() | live_resources(), graph_ops), max_size=6))
@example(
    None,
    [
        (
            {"apiVersion": "v1", "kind": "A", "metadata": {"name": "a", "annotations": {objects.CHANGE_GROUP: 5}}},
            GraphOp.UPSERT,
        )
    ],
)
@example(
    None,
    [
        (
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "c"},
                "spec": True,
            },
            GraphOp.UPSERT,
        )
    ],
)  # AttributeError in _placeholder_values, found by this target
def test_changes_are_ordered_or_the_groups_and_rules_are_one_graph_error(user, nodes):
    try:
        graph = build_graph([Node(op, resource, f"r{i}") for i, (resource, op) in enumerate(nodes)], _config(user))
    except KapplyError:
        return
    position = {node: index for index, node in enumerate(graph.order)}
    for node, dependencies in enumerate(graph.waiting_for):
        assert all(position[dependency] < position[node] for dependency in dependencies)


@fuzz_settings
@given(resources() | live_resources())
def test_strategies_are_known_values_or_one_manifest_error(resource):
    for read in (strategies.create_strategy, strategies.update_strategy, strategies.delete_strategy):
        try:
            read(resource)
        except ManifestError as e:
            assert "strategy" in str(e)
