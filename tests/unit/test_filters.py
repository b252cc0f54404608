"""kapp's resource filters (kapply.resources.filters): patterns, label selectors, ages, the JSON bool filter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kapply.resources.filters import (
    AGE_ERROR,
    FilterError,
    ResourceFilter,
    combined,
    from_flags,
    parse_age,
    parse_bool_filter,
    parse_selector,
    pattern_matches,
)

NOW = datetime(2026, 1, 10, 12, 0, 0, tzinfo=UTC)


def obj(kind: str = "ConfigMap", name: str = "web", namespace: str = "ns", created: str = "", **labels: str) -> dict:
    meta: dict = {"name": name, "labels": labels}
    if namespace:
        meta["namespace"] = namespace
    if created:
        meta["creationTimestamp"] = created
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("app", "app", True),
        ("app", "ap", False),
        ("app*", "app-extra", True),
        ("app%", "app", True),
        ("app%", "ap-extra", False),
        ("*app", "extra-app", True),
        ("%app", "extra-pp", False),
        ("*app*", "extra-app-extra", True),
        ("%app%", "extra-ap-extra", False),
        ("%a.p%", "xa.py", True),  # no regular expression: the dot is a dot
        ("%a.p%", "xabpy", False),
        ("%", "anything", True),  # kapp panics
        ("", "", True),
        ("", "x", False),
    ],
)
def test_patterns_glob_at_either_end(pattern: str, value: str, expected: bool):
    assert pattern_matches(pattern, value) is expected


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {}, True),
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a=b", {}, False),
        ("a!=b", {}, True),
        ("a!=b", {"a": "b"}, False),
        ("a", {"a": ""}, True),
        ("!a", {"a": ""}, False),
        ("!a", {}, True),
        ("a in (b, c)", {"a": "c"}, True),
        ("a notin (b,c)", {"a": "c"}, False),
        ("a notin (b,c)", {}, True),
        ("a=b,c=d", {"a": "b", "c": "d"}, True),
        ("a=b, c=d", {"a": "b"}, False),
        ("a=", {"a": ""}, True),
        ("n>3", {"n": "4"}, True),
        ("n<3", {"n": "4"}, False),
        ("n>3", {"n": "x"}, False),
        ("example.com/tier=web", {"example.com/tier": "web"}, True),
    ],
)
def test_label_selectors_match_as_kubernetes_does(selector: str, labels: dict, expected: bool):
    assert parse_selector(selector).matches(labels) is expected


@pytest.mark.parametrize("selector", ["a=b=c", "=b", "a in b", "a in (b", "a b", "!", "a>x", "-a=b", "a=-b"])
def test_invalid_label_selectors_are_refused(selector: str):
    with pytest.raises(FilterError, match="Parsing label selector"):
        parse_selector(selector)


def test_each_field_must_match_and_any_value_of_a_field_may():
    found = ResourceFilter(kinds=("Deployment", "Config%"), namespaces=("ns",))
    assert found.matches(obj("ConfigMap"))
    assert not found.matches(obj("Secret"))
    assert not found.matches(obj("ConfigMap", namespace="other"))
    assert found.apply([obj("Secret"), obj("ConfigMap")]) == [obj("ConfigMap")]


def test_kind_name_kind_namespace_and_kind_namespace_name_are_exact():
    assert ResourceFilter(kind_names=("ConfigMap/web",)).matches(obj())
    assert not ResourceFilter(kind_names=("ConfigMap/we%",)).matches(obj())
    assert ResourceFilter(kind_namespaces=("ConfigMap/ns",)).matches(obj())
    assert ResourceFilter(kind_namespaces=("ClusterRole/",)).matches(obj("ClusterRole", namespace=""))
    assert ResourceFilter(kind_ns_names=("ConfigMap/ns/web",)).matches(obj())
    assert not ResourceFilter(kind_ns_names=("ConfigMap/ns/other",)).matches(obj())


def test_label_filters_match_when_any_selector_does():
    found = from_flags(labels=["tier=db", "app=web"])
    assert found is not None
    assert found.matches(obj(app="web"))
    assert not found.matches(obj(app="api"))


def test_ages_keep_newer_or_older_resources():
    assert parse_age("5m-", NOW) == (None, NOW - timedelta(minutes=5))
    assert parse_age("500h+", NOW) == (NOW - timedelta(hours=500), None)
    newer = from_flags(age="10m-", now=NOW)
    older = from_flags(age="10m+", now=NOW)
    assert newer is not None and older is not None
    recent, old, unknown = obj(created="2026-01-10T11:55:00Z"), obj(created="2026-01-10T11:00:00Z"), obj()
    assert newer.matches(recent) and not newer.matches(old) and not newer.matches(unknown)
    assert older.matches(old) and not older.matches(recent) and older.matches(unknown)


@pytest.mark.parametrize("age", ["5m", "+", "x-", "5 m+", "5d+"])
def test_ages_without_a_direction_or_unit_are_refused_with_kapps_message(age: str):
    with pytest.raises(FilterError) as raised:
        parse_age(age, NOW)
    assert str(raised.value) == AGE_ERROR


def test_no_flag_no_filter():
    assert from_flags() is None
    found = from_flags(kinds=["Pod"])
    assert found is not None and found.kinds == ("Pod",)


def test_the_json_filter_replaces_every_other_flag():
    found = from_flags(filter_json='{"resource":{"kinds":["Secret"]}}', kinds=["ConfigMap"], age="1s-", now=NOW)
    assert found is not None
    assert found.matches(obj("Secret"))
    assert not found.matches(obj("ConfigMap"))


def test_json_filters_combine_with_and_or_not():
    found = parse_bool_filter(
        '{"and":[{"not":{"resource":{"kinds":["Config%"]}}},{"or":[{"resource":{"names":["a%"]}},'
        '{"resource":{"labelS":["x=y"]}}]}]}'
    )
    assert found.matches(obj("Secret", name="abc"))
    assert found.matches(obj("Secret", name="zzz", x="y"))
    assert not found.matches(obj("Secret", name="zzz"))
    assert not found.matches(obj("ConfigMap", name="abc"))


def test_json_filter_first_present_key_wins_and_an_empty_one_matches_nothing():
    assert parse_bool_filter('{"and":[{"resource":{}}],"not":{"resource":{}}}').matches(obj())
    assert not parse_bool_filter("{}").matches(obj())
    assert not parse_bool_filter('{"and":[]}').matches(obj())
    assert parse_bool_filter('{"Resource":{"KINDS":["ConfigMap"],"unknown":1}}').matches(obj())


def test_json_resource_filter_takes_creation_times():
    found = parse_bool_filter('{"resource":{"createdAtAfterTime":"2026-01-10T11:30:00Z"}}')
    assert found.matches(obj(created="2026-01-10T11:55:00Z"))
    assert not found.matches(obj(created="2026-01-10T11:00:00Z"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "^unexpected end of JSON input$"),
        ("{bad", "^invalid character 'b' looking for beginning of object key string$"),
        ('{"and":[1 2]}', "^invalid character '2' after array element$"),
        ('{"a":1 "b":2}', "^invalid character '\"' after object key:value pair$"),
        ("{}x", "^invalid character 'x' after top-level value$"),
        (
            '{"and":{}}',
            "cannot unmarshal object into Go struct field BoolFilter.And of type \\[\\]resources.BoolFilter",
        ),
        ('{"resource":{"kinds":"Pod"}}', "cannot unmarshal string into Go struct field ResourceFilter.Resource.Kinds"),
        ('{"and":[{"resource":{"kinds":[1]}}]}', "number into Go struct field ResourceFilter.And.Resource.Kinds of"),
        ("[]", "cannot unmarshal array into Go value of type resources.BoolFilter"),
        ('{"resource":{"labels":["a b"]}}', "Parsing label selector"),
    ],
)
def test_bad_json_filters_are_refused(text: str, message: str):
    with pytest.raises(FilterError, match=message):
        parse_bool_filter(text)


class _Is:
    def __init__(self, value: int) -> None:
        self.value = value

    def matches(self, subject: int) -> bool:
        return subject == self.value


@pytest.mark.parametrize(
    ("and_", "or_", "not_", "verdict"),
    [
        ((_Is(1), _Is(1)), (), None, True),
        ((_Is(1), _Is(2)), (_Is(1),), None, False),  # the first part set decides
        ((), (_Is(2), _Is(1)), None, True),
        ((), (_Is(2),), _Is(1), False),
        ((), (), _Is(2), True),
        ((), (), None, None),  # none set: the filter's own test decides
    ],
)
def test_combined_is_what_the_first_of_and_or_not_set_says(
    and_: Any, or_: Any, not_: Any, verdict: bool | None
) -> None:
    assert combined(and_, or_, not_, 1) is verdict
