"""Schemas from OpenAPI v3 documents: what the matcher reads from them, and the shipped built-in one."""

from __future__ import annotations

import copy

import orjson
import pytest

from kapply.matcher import BUILTIN_KINDS, Mode, PatchType, Schema, annotate, calculate

REF = "#/components/schemas/"


def gvk(group: str, version: str, kind: str) -> list[dict]:
    return [{"group": group, "version": version, "kind": kind}]


# A made-up built-in kind with one field of each shape, as `GET /openapi/v3/apis/demo.k8s.io/v1` would serve it.
BUILTIN_DOC = {
    "components": {
        "schemas": {
            "io.k8s.api.demo.v1.Gadget": {
                "type": "object",
                "x-kubernetes-group-version-kind": gvk("demo.k8s.io", "v1", "Gadget"),
                "properties": {
                    "metadata": {"allOf": [{"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
                    "spec": {"allOf": [{"$ref": REF + "io.k8s.api.demo.v1.GadgetSpec"}]},
                },
            },
            "io.k8s.api.demo.v1.GadgetSpec": {
                "type": "object",
                "properties": {
                    "merged": {
                        "type": "array",
                        "items": {"$ref": REF + "io.k8s.api.demo.v1.Part"},
                        "x-kubernetes-patch-merge-key": "name",
                        "x-kubernetes-patch-strategy": "merge",
                    },
                    "mapped": {
                        "type": "array",
                        "items": {"$ref": REF + "io.k8s.api.demo.v1.Part"},
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                    },
                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                    "ordered": {"type": "array", "items": {"type": "string"}},
                    "limits": {
                        "type": "object",
                        "additionalProperties": {"$ref": REF + "io.k8s.apimachinery.pkg.api.resource.Quantity"},
                    },
                    "port": {"$ref": REF + "io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
                    "mode": {
                        "allOf": [{"$ref": REF + "io.k8s.api.demo.v1.Mode"}],
                        "x-kubernetes-patch-strategy": "retainKeys",
                    },
                    "nested": {"$ref": REF + "io.k8s.api.demo.v1.Nested"},
                    "note": {"type": "string"},
                    "selector": {
                        "type": "object",
                        "properties": {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}},
                        "x-kubernetes-patch-strategy": "replace",
                    },
                },
            },
            "io.k8s.api.demo.v1.Part": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "size": {"type": "integer"}},
            },
            "io.k8s.api.demo.v1.Mode": {
                "type": "object",
                "properties": {
                    "type": {"type": "string"},
                    "fast": {"type": "object", "properties": {"limit": {"x-kubernetes-int-or-string": True}}},
                },
            },
            "io.k8s.api.demo.v1.Nested": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": REF + "io.k8s.api.demo.v1.Nested"}}},
            },
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
                "type": "object",
                "properties": {
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "finalizers": {
                        "type": "array",
                        "items": {"type": "string"},
                        "x-kubernetes-patch-strategy": "merge",
                    },
                },
            },
        }
    }
}

# A custom resource, as the API server publishes a CRD's schema.
CRD_DOC = {
    "components": {
        "schemas": {
            "com.example.v1.Widget": {
                "type": "object",
                "x-kubernetes-group-version-kind": gvk("example.com", "v1", "Widget"),
                "properties": {
                    "metadata": {"allOf": [{"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
                    "spec": {
                        "type": "object",
                        "properties": {
                            "parts": {
                                "type": "array",
                                "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["name"],
                                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                            },
                            "port": {"x-kubernetes-int-or-string": True},
                            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    },
                },
            },
        }
    }
}


def gadget(**spec: object) -> dict:
    return {
        "apiVersion": "demo.k8s.io/v1",
        "kind": "Gadget",
        "metadata": {"name": "g", "labels": {"a": "1"}},
        "spec": spec,
    }


def live(desired: dict, **spec: object) -> dict:
    obj = copy.deepcopy(annotate(desired))
    obj["spec"].update(spec)
    return obj


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema.from_openapi([BUILTIN_DOC, CRD_DOC])


def test_kinds_come_from_group_version_kind_extensions(schema: Schema) -> None:
    assert schema.kinds() == [("demo.k8s.io/v1", "Gadget"), ("example.com/v1", "Widget")]


def test_list_with_patch_merge_key_is_merged_item_by_item(schema: Schema) -> None:
    desired = gadget(merged=[{"name": "a", "size": 1}, {"name": "b", "size": 2}])
    current = live(desired, merged=[{"name": "b", "size": 2}, {"name": "a", "size": 5}, {"name": "x"}])
    result = calculate(current, desired, schema=schema)
    assert result.patch_type is PatchType.STRATEGIC
    assert result.patch == {"spec": {"merged": [{"name": "a", "size": 1}]}}


def test_map_list_without_patch_strategy_is_matched_by_key_but_patched_whole(schema: Schema) -> None:
    desired = gadget(mapped=[{"name": "a", "size": 1}, {"name": "b"}])
    assert calculate(live(desired, mapped=[{"name": "b"}, {"name": "a", "size": 1}]), desired, schema=schema).is_empty
    result = calculate(live(desired, mapped=[{"name": "b"}, {"name": "a", "size": 3}]), desired, schema=schema)
    assert result.patch == {"spec": {"mapped": [{"name": "b"}, {"name": "a", "size": 1}]}}


def test_set_ignores_order_and_atomic_list_does_not(schema: Schema) -> None:
    desired = gadget(tags=["x", "y"], ordered=["x", "y"])
    assert calculate(live(desired, tags=["y", "x"]), desired, schema=schema).is_empty
    assert calculate(live(desired, ordered=["y", "x"]), desired, schema=schema).patch == {
        "spec": {"ordered": ["x", "y"]}
    }


def test_quantity_and_int_or_string_fields_compare_by_meaning(schema: Schema) -> None:
    desired = gadget(limits={"cpu": "500m"}, port="80", mode={"fast": {"limit": "10"}})
    assert calculate(
        live(desired, limits={"cpu": "0.5"}, port=80, mode={"fast": {"limit": 10}}), desired, schema=schema
    ).is_empty
    assert not calculate(live(desired, note="500m"), gadget(note="0.5"), schema=schema).is_empty


def test_retain_keys_strategy_lists_the_kept_keys(schema: Schema) -> None:
    desired = gadget(mode={"type": "slow"})
    result = calculate(live(desired, mode={"type": "fast", "fast": {"limit": 3}}), desired, schema=schema)
    assert result.patch == {"spec": {"mode": {"type": "slow", "$retainKeys": ["type"]}}}


def test_replace_strategy_sends_the_whole_struct_when_any_of_it_differs(schema: Schema) -> None:
    desired = gadget(selector={"matchLabels": {"a": "1", "b": "2"}})
    current = live(desired, selector={"matchLabels": {"a": "1", "b": "3"}})
    assert calculate(current, desired, schema=schema).patch == {
        "spec": {"selector": {"matchLabels": {"a": "1", "b": "2"}}}
    }
    assert calculate(live(desired), desired, schema=schema).is_empty


def test_self_referencing_schemas_are_followed(schema: Schema) -> None:
    desired = gadget(nested={"children": [{"children": [{}]}]})
    assert calculate(live(desired), desired, schema=schema).is_empty


def test_custom_resource_gets_merge_patch_and_its_schemas_list_keys(schema: Schema) -> None:
    desired = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"parts": [{"name": "a"}, {"name": "b"}], "port": 80, "extra": {"x": ""}},
    }
    current = live(desired, parts=[{"name": "b"}, {"name": "a"}], port="80")
    result = calculate(current, desired, schema=schema)
    assert result.is_empty
    assert result.patch_type is PatchType.MERGE
    assert calculate(live(desired, extra={"x": "set"}), desired, schema=schema).patch == {"spec": {"extra": {"x": ""}}}


def test_pruned_schema_is_smaller_and_compares_the_same(schema: Schema) -> None:
    pruned = Schema.from_json(schema.to_json())
    assert len(schema.to_json()) < len(str(BUILTIN_DOC) + str(CRD_DOC))
    desired = gadget(
        merged=[{"name": "a"}],
        mapped=[{"name": "a"}],
        tags=["x"],
        limits={"cpu": "1"},
        port=1,
        mode={"type": "t"},
        note="n",
        selector={"matchLabels": {"a": "1", "b": "2"}},
    )
    current = live(
        desired,
        merged=[{"name": "b"}],
        mapped=[{"name": "b"}],
        tags=["y"],
        limits={"cpu": "2"},
        port=2,
        mode={"type": "u"},
        note="m",
        selector={"matchLabels": {"a": "1", "b": "3"}},
    )
    for mode in Mode:
        assert calculate(current, desired, schema=pruned, mode=mode) == calculate(
            current, desired, schema=schema, mode=mode
        )


def test_pruned_schema_keeps_only_the_kinds_asked_for(schema: Schema) -> None:
    assert Schema.from_json(schema.to_json([("example.com/v1", "Widget")])).kinds() == [("example.com/v1", "Widget")]


def test_builtin_schema_covers_common_kinds_with_strategic_merge_patch() -> None:
    builtin = Schema.builtin()
    assert set(BUILTIN_KINDS) <= set(builtin.kinds())
    for api_version, kind in BUILTIN_KINDS:
        assert builtin.root(api_version, kind)[1] is PatchType.STRATEGIC


def test_unknown_kind_is_compared_as_json_with_standard_metadata() -> None:
    root, patch_type = Schema.builtin().root("example.com/v1", "Unknown")
    assert patch_type is PatchType.MERGE
    assert root.fields["metadata"] is Schema.builtin().root("v1", "ConfigMap")[0].fields["metadata"]


def test_a_kind_whose_schema_prunes_to_nothing_still_compares_as_any_json() -> None:
    """A cached (pruned) schema can reduce a kind with no known fields to a bare root; diffs must still work."""
    doc = {
        "components": {
            "schemas": {
                "com.example.v1.Thing": {
                    "type": "object",
                    "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Thing"}],
                }
            }
        }
    }
    pruned = Schema.from_json(Schema.from_openapi([doc]).to_json())
    current = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "a"}, "spec": {"x": 1}}
    desired = {**current, "spec": {"x": 2}, "extra": [1]}
    assert calculate(current, desired, schema=pruned).patch == {"spec": {"x": 2}, "extra": [1]}


def as_openapi_v2(*documents: dict) -> dict:
    """The documents' schemas as `GET /openapi/v2` serves them: one document, `definitions`, direct `$ref`s."""
    definitions = {name: schema for doc in documents for name, schema in doc["components"]["schemas"].items()}
    text = orjson.dumps(definitions).decode().replace("#/components/schemas/", "#/definitions/")
    return {"swagger": "2.0", "definitions": orjson.loads(text)}


def test_openapi_v2_document_compares_as_its_v3_documents(schema: Schema) -> None:
    v2 = Schema.from_openapi([as_openapi_v2(BUILTIN_DOC, CRD_DOC)])
    assert v2.kinds() == schema.kinds()
    desired = gadget(merged=[{"name": "a"}], tags=["x"], limits={"cpu": "1"}, port=1, selector={"matchLabels": {}})
    current = live(desired, merged=[{"name": "b"}], tags=["y"], limits={"cpu": "1000m"}, port="2", selector={})
    for mode in Mode:
        assert calculate(current, desired, schema=v2, mode=mode) == calculate(
            current, desired, schema=schema, mode=mode
        )
    widget = widget_with_parts("a", "b")
    reordered = calculate(live(widget, parts=[{"name": "b"}, {"name": "a"}]), widget, schema=v2)
    assert reordered.is_empty and reordered.patch_type is PatchType.MERGE


def widget_with_parts(*names: str) -> dict:
    parts = [{"name": name} for name in names]
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"parts": parts}}


def test_update_adds_the_kinds_of_more_documents() -> None:
    grown = Schema.from_openapi([BUILTIN_DOC])
    desired = widget_with_parts("a", "b")
    reordered = live(desired, parts=[{"name": "b"}, {"name": "a"}])
    assert not calculate(reordered, desired, schema=grown).is_empty  # unknown: the list compares by position
    grown.update([CRD_DOC])
    assert ("example.com/v1", "Widget") in grown.kinds()
    assert calculate(reordered, desired, schema=grown).is_empty


def test_refresh_is_asked_for_each_kind_the_schema_does_not_know_until_it_does() -> None:
    asked: list[int] = []

    def refresh(schema: Schema) -> None:
        asked.append(1)
        if len(asked) == 2:
            schema.update([CRD_DOC])

    refreshing = Schema.from_openapi([BUILTIN_DOC], refresh=refresh)
    refreshing.root("demo.k8s.io/v1", "Gadget")
    assert asked == []
    assert list(refreshing.root("example.com/v1", "Widget")[0].fields) == ["metadata"]  # still unknown: JSON
    assert refreshing.root("example.com/v1", "Widget")[0].fields["spec"].fields["parts"].keys == ("name",)
    refreshing.root("example.com/v1", "Widget")
    assert len(asked) == 2
