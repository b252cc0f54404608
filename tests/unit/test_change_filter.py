"""kapp's change filter (`--diff-filter`): what it keeps, and how it refuses bad JSON (Go's wording)."""

from __future__ import annotations

import pytest

from kapply.config.default import default_config
from kapply.diff.change import Op, calculate
from kapply.diff.filter import ChangeFilter, FilterError, parse_change_filter


def configmap(name: str, data: str = "a", **labels: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "data": {"k": data},
    }


def live(obj: dict) -> dict:
    return {**obj, "metadata": {**obj["metadata"], "uid": "u", "resourceVersion": "1"}}


CONFIG = default_config()
ADD = calculate(configmap("new", tier="web"), None, CONFIG)
UPDATE = calculate(configmap("changed", "b", tier="db"), live(configmap("changed", tier="db")), CONFIG)
KEEP = calculate(configmap("same"), live(configmap("same")), CONFIG)
DELETE = calculate(None, live(configmap("gone", tier="web")), CONFIG)
EXISTS = calculate(
    {**configmap("ext"), "metadata": {"name": "ext", "annotations": {"kapp.k14s.io/exists": ""}}}, None, CONFIG
)
ALL = [ADD, UPDATE, KEEP, DELETE, EXISTS]


def kept(text: str) -> list[str]:
    found = parse_change_filter(text)
    assert found is not None
    return [c.key.name for c in found.apply(ALL)]


def test_the_ops_are_kapps_diff_ops():
    assert [c.op for c in ALL] == [Op.ADD, Op.UPDATE, Op.KEEP, Op.DELETE, Op.EXISTS]
    assert kept('{"ops":["add"]}') == ["new"]
    assert kept('{"ops":["create"]}') == []  # `add`, not `create`
    assert kept('{"ops":["keep"]}') == ["same"]


def test_every_listed_op_must_be_the_changes_so_two_ops_match_nothing():
    assert kept('{"ops":["add","update"]}') == []
    assert kept('{"ops":["update","update"]}') == ["changed"]


def test_an_empty_filter_keeps_everything_and_no_flag_is_no_filter():
    assert kept("{}") == kept("null") == kept('{"and":[],"or":[]}') == [c.key.name for c in ALL]
    assert parse_change_filter("") is None


def test_the_first_key_set_decides_in_kapps_order():
    # `and` wins over `ops`; `newResource` over `existingResource`
    assert kept('{"ops":["delete"],"and":[{"ops":["add"]}]}') == ["new"]
    assert kept('{"existingResource":{"names":["gone"]},"newResource":{"names":["new"]}}') == ["new"]


def test_a_side_filter_needs_that_side():
    assert kept('{"newResource":{}}') == ["new", "changed", "same", "ext"]
    assert kept('{"existingResource":{}}') == ["changed", "same", "gone"]
    assert kept('{"not":{"existingResource":{}}}') == ["new", "ext"]


def test_side_filters_match_kinds_names_labels_and_keys():
    assert kept('{"newResource":{"labels":["tier=web"]}}') == ["new"]
    assert kept('{"existingResource":{"labels":["tier"]}}') == ["changed", "gone"]
    assert kept('{"or":[{"existingResource":{"names":["g%"]}},{"newResource":{"kindNames":["ConfigMap/same"]}}]}') == [
        "same",
        "gone",
    ]
    assert kept('{"and":[{"ops":["update"]},{"existingResource":{"kinds":["Config%"]}}]}') == ["changed"]
    assert kept('{"newResource":{"kindNsNames":["ConfigMap/ns/new"]}}') == ["new"]


def test_keys_are_matched_without_regard_to_case():
    assert kept('{"OPS":["delete"]}') == kept('{"Ops":["delete"]}') == ["gone"]
    assert kept('{"NewResource":{"NAMES":["new"]}}') == ["new"]


GO = "json: cannot unmarshal "


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{", "unexpected end of JSON input"),
        ('{"a":1}x', "invalid character 'x' after top-level value"),
        ("[]", GO + "array into Go value of type diff.ChangeSetFilterRoot"),
        (
            '{"ops":"update"}',
            GO + "string into Go struct field ChangeSetFilterRoot.Ops of type diff.OpsFilter",
        ),
        (
            '{"ops":[1]}',
            GO + "number into Go struct field ChangeSetFilterRoot.Ops of type diff.ChangeOp",
        ),
        (
            '{"and":{}}',
            GO + "object into Go struct field ChangeSetFilterRoot.And of type []diff.ChangeSetFilterRoot",
        ),
        (
            '{"and":[5]}',
            GO + "number into Go struct field ChangeSetFilterRoot.And of type diff.ChangeSetFilterRoot",
        ),
        (
            '{"not":[]}',
            GO + "array into Go struct field ChangeSetFilterRoot.Not of type diff.ChangeSetFilterRoot",
        ),
        (
            '{"newResource":"x"}',
            GO + "string into Go struct field ChangeSetFilterRoot.NewResource of type resources.ResourceFilter",
        ),
        (
            '{"and":[{"newResource":{"kinds":5}}]}',
            GO + "number into Go struct field ResourceFilter.And.NewResource.Kinds of type []string",
        ),
        (
            '{"not":{"existingResource":{"kinds":["a",3]}}}',
            GO + "number into Go struct field ResourceFilter.Not.ExistingResource.Kinds of type string",
        ),
    ],
)
def test_bad_json_is_refused_in_gos_words(text: str, error: str):
    with pytest.raises(FilterError) as refused:
        parse_change_filter(text)
    assert str(refused.value) == error


def test_a_filter_built_in_python():
    only_updates = ChangeFilter(ops=("update",))
    assert [c.key.name for c in only_updates.apply(ALL)] == ["changed"]
    assert ChangeFilter().matches(DELETE)
