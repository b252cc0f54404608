import copy

import pytest

from kapply.config.decode import Decoder
from kapply.config.paths import (
    AllIndexes,
    Index,
    KeyRegex,
    append_string_map,
    copy_from_sources,
    format_path,
    parse_path,
    remove_at,
    replace_maps_at,
)
from kapply.errors import ConfigError


def path(*parts, allow_regex=False):
    return parse_path(list(parts), Decoder("test"), "path", allow_regex=allow_regex)


def test_path_parts_are_keys_all_indexes_indexes_and_regexes():
    parsed = path("spec", {"allIndexes": True}, {"index": 2}, {"regex": "^a"}, allow_regex=True)
    assert parsed[:3] == ("spec", AllIndexes(), Index(2))
    assert isinstance(parsed[3], KeyRegex)
    assert format_path(parsed[:3]) == "spec,(all),2"


@pytest.mark.parametrize(
    ("part", "message"),
    [
        ({"allIndexes": True, "index": 1}, "expected a string"),
        ({"foo": 1}, "unknown field 'foo'"),
        ({"index": -1}, "non-negative"),
        ({"regex": "^a"}, "only supported by rebase rules and diff field exclusion rules"),
        (3, "expected a map"),
    ],
)
def test_malformed_path_parts_are_config_errors(part, message):
    with pytest.raises(ConfigError, match=message):
        path("spec", part)


def test_copy_takes_the_first_source_that_has_the_value():
    target = {"spec": {}}
    first = {"spec": {}}
    second = {"spec": {"clusterIP": "10.0.0.1"}}
    result = copy_from_sources(target, path("spec", "clusterIP"), [first, second])
    assert result == {"spec": {"clusterIP": "10.0.0.1"}}


def test_copy_without_any_source_value_leaves_target_alone_and_creates_nothing():
    target = {"kind": "Service"}
    result = copy_from_sources(target, path("spec", "clusterIP"), [{}, {"spec": {}}])
    assert result is target


def test_copy_creates_missing_maps_when_path_has_no_list_parts():
    result = copy_from_sources({}, path("metadata", "annotations", "a"), [{"metadata": {"annotations": {"a": "1"}}}])
    assert result == {"metadata": {"annotations": {"a": "1"}}}


def test_copy_does_not_create_lists_or_maps_under_list_parts():
    p = path("webhooks", {"allIndexes": True}, "clientConfig", "caBundle")
    existing = {"webhooks": [{"clientConfig": {"caBundle": "CA0"}}, {"clientConfig": {"caBundle": "CA1"}}]}
    new = {"webhooks": [{"clientConfig": {}}, {"name": "no-client-config"}]}
    assert copy_from_sources(new, p, [new, existing]) == {
        "webhooks": [{"clientConfig": {"caBundle": "CA0"}}, {"name": "no-client-config"}]
    }
    assert copy_from_sources({}, p, [existing]) == {}


def test_copy_keeps_a_null_value_found_in_a_source():
    result = copy_from_sources({"a": {"b": 1}}, path("a", "b"), [{"a": {"b": None}}])
    assert result == {"a": {"b": None}}


def test_copy_with_regex_takes_matching_keys_of_every_source():
    p = path("metadata", "annotations", {"regex": "^example.com/"}, allow_regex=True)
    new = {"metadata": {"annotations": {"example.com/a": "new"}}}
    existing = {"metadata": {"annotations": {"example.com/a": "old", "example.com/b": "old", "other": "x"}}}
    result = copy_from_sources(new, p, [new, existing])
    assert result == {"metadata": {"annotations": {"example.com/a": "new", "example.com/b": "old"}}}


def test_remove_deletes_in_every_list_element():
    obj = {"items": [{"a": 1, "b": 2}, {"b": 3}]}
    assert remove_at(obj, path("items", {"allIndexes": True}, "a")) == {"items": [{"b": 2}, {"b": 3}]}


def test_remove_of_a_missing_path_is_a_no_op():
    obj = {"spec": {}}
    assert remove_at(obj, path("status", "x")) is obj


def test_path_ending_in_a_list_part_cannot_be_removed():
    with pytest.raises(ConfigError, match="last part of the path to be map key"):
        remove_at({"items": [1]}, path("items", {"allIndexes": True}))


def test_append_string_map_creates_maps_unless_told_not_to():
    p = path("spec", "selector")
    assert append_string_map({}, p, {"k": "v"}, create_missing=True) == {"spec": {"selector": {"k": "v"}}}
    assert append_string_map({}, p, {"k": "v"}, create_missing=False) == {}
    assert append_string_map({"spec": {"selector": {"a": "b"}}}, p, {"k": "v"}, create_missing=False) == {
        "spec": {"selector": {"a": "b", "k": "v"}}
    }


def test_append_string_map_never_creates_maps_under_list_parts():
    p = path("spec", "volumeClaimTemplates", {"allIndexes": True}, "metadata", "labels")
    obj = {"spec": {"volumeClaimTemplates": [{"metadata": {"labels": {}}}, {"metadata": {}}]}}
    assert append_string_map(obj, p, {"k": "v"}, create_missing=True) == {
        "spec": {"volumeClaimTemplates": [{"metadata": {"labels": {"k": "v"}}}, {"metadata": {}}]}
    }


def test_non_map_on_the_way_is_a_config_error():
    with pytest.raises(ConfigError, match="Unexpected non-map found"):
        append_string_map({"spec": "text"}, path("spec", "selector"), {"k": "v"}, create_missing=True)


def test_replace_maps_at_replaces_only_existing_maps():
    obj = {"data": {"a": "1"}}
    assert replace_maps_at(obj, path("data"), lambda m: {k: "*" for k in m}) == {"data": {"a": "*"}}
    assert replace_maps_at(obj, path("stringData"), lambda m: {}) is obj


def test_operations_never_mutate_their_inputs():
    obj = {"metadata": {"labels": {"a": "1"}}, "spec": {"items": [{"x": 1}]}}
    source = {"spec": {"items": [{"x": 2}]}, "metadata": {"labels": {"b": "2"}}}
    before = copy.deepcopy((obj, source))
    append_string_map(obj, path("metadata", "labels"), {"k": "v"}, create_missing=True)
    remove_at(obj, path("spec", "items", {"allIndexes": True}, "x"))
    copy_from_sources(obj, path("metadata", "labels", "b"), [source])
    replace_maps_at(obj, path("metadata", "labels"), lambda m: {})
    assert (obj, source) == before


def test_results_share_untouched_subtrees():
    obj = {"metadata": {"labels": {"a": "1"}}, "spec": {"big": {"tree": [1, 2, 3]}}}
    result = append_string_map(obj, path("metadata", "labels"), {"k": "v"}, create_missing=True)
    assert result["spec"] is obj["spec"]
    assert result["metadata"] is not obj["metadata"]


@pytest.mark.parametrize(
    "operation", [lambda obj, p: remove_at(obj, p), lambda obj, p: replace_maps_at(obj, p, lambda m: {})]
)
def test_remove_and_replace_maps_go_on_only_through_keys_that_are_there(operation):
    p = path("spec", "template", "x")
    for unchanged in ({"spec": None}, {"spec": {"other": 1}}, {"spec": {"template": None}}):
        assert operation(unchanged, p) is unchanged


def test_replace_maps_through_a_non_map_is_a_config_error():
    with pytest.raises(ConfigError, match="Unexpected non-map found"):
        replace_maps_at({"spec": "text"}, path("spec", "template", "x"), lambda m: {})


def test_remove_through_a_non_map_removes_nothing_as_kapp():
    p = path("spec", "template", "x")
    for unchanged in ({"spec": "text"}, {"spec": [{"template": {"x": 1}}]}, {"spec": {"template": 3}}):
        assert remove_at(unchanged, p) is unchanged
    with pytest.raises(ConfigError, match="Unexpected non-array found"):
        remove_at({"spec": {"template": {}}}, path("spec", "template", {"allIndexes": True}, "x"))


def regex_path(*parts):
    return path(*parts, allow_regex=True)


def test_remove_with_a_regex_part_removes_under_every_matching_key():
    obj = {
        "metadata": {
            "labels": {"foo-l": "1", "keep": "1"},
            "annotations": {"foo-a": "1", "xfoo-b": "1", "bar": "1"},
            "name": "n",
        }
    }
    result = remove_at(obj, regex_path("metadata", {"regex": "^(labels|annotations)$"}, {"regex": "foo-"}))
    assert result == {"metadata": {"labels": {"keep": "1"}, "annotations": {"bar": "1"}, "name": "n"}}
    assert remove_at(obj, regex_path({"regex": "^meta"})) == {}


def test_remove_with_a_regex_part_in_lists_and_over_non_maps():
    items = [{"foo-a": 1, "bar": 1, "nested": {"foo-n": 1, "keep": 1}}, {"foo-b": 1}, "scalar", None]
    obj = {
        "spec": {"items": items, "maps": {"m1": {"foo-x": 1, "keep": 1}, "m2": [{"keep": 1}], "m3": "s", "m4": None}}
    }
    result = remove_at(obj, regex_path("spec", "items", {"allIndexes": True}, {"regex": "^foo-"}))
    assert result["spec"]["items"] == [{"bar": 1, "nested": {"foo-n": 1, "keep": 1}}, {}, "scalar", None]
    result = remove_at(obj, regex_path("spec", {"regex": "^items$"}, {"index": 0}, "nested", {"regex": "foo"}))
    assert result["spec"]["items"][0]["nested"] == {"keep": 1}
    result = remove_at(obj, regex_path("spec", "maps", {"regex": "^m"}, "keep"))
    assert result["spec"]["maps"] == {"m1": {"foo-x": 1}, "m2": [{"keep": 1}], "m3": "s", "m4": None}
    assert remove_at(obj, regex_path("spec", "items", {"regex": "."})) is obj  # a regex part over a list: nothing
    assert remove_at(obj, regex_path("spec", "maps", {"regex": "^zzz"})) is obj
    with pytest.raises(ConfigError, match="Unexpected non-array found"):
        remove_at(obj, regex_path("spec", "maps", {"regex": "^m1$"}, {"allIndexes": True}, "x"))
