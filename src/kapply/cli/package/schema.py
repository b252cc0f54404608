"""A Package's values schema (`spec.valuesSchema.openAPIv3`) as kctrl shows it: one row per leaf property (a property
without `properties`, or with empty ones), keyed by its dotted path, with its type, default and description; and the
default values file of `available get --default-values-file-output`: the defaults as YAML, every line commented
out, objects kept where some property inside them has a default or is required. A schema without `properties` at its
root has no property to show: kctrl refuses it (`check_properties`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kapply.diff.yaml_text import to_yaml
from kapply.errors import KapplyError
from kapply.objects import Obj

# Go's name of a JSON value's type in encoding/json's "cannot unmarshal" error
_JSON_TYPES = {str: "string", bool: "bool", int: "number", float: "number", list: "array"}


@dataclass(frozen=True, slots=True)
class SchemaProperty:
    key: str  # dotted path: `deployment.replicas`
    type: str
    default: Any  # None when the schema gives none
    description: str


def _properties(schema: Obj) -> dict[str, Obj]:
    found = schema.get("properties")
    return {k: v for k, v in found.items() if isinstance(v, dict)} if isinstance(found, dict) else {}


def check_properties(schema: Any) -> None:
    """kctrl's refusal of a schema whose root has no `properties` object (its parser reads the schema as an OpenAPI
    document and the root's `properties` as an extension), with its hint; `properties: null` is no properties."""
    found = schema.get("properties") if isinstance(schema, dict) else None
    if found is None and not (isinstance(schema, dict) and "properties" in schema):
        raise KapplyError(
            "unable to parse the value schema, the value of key named 'properties' has unsupported type <nil>. "
            "Expected types are: [map[string]interface{}, json.RawMessage] (hint: the valuesSchema might not have any "
            "properties)"
        )
    if found is not None and not isinstance(found, dict):
        kind = _JSON_TYPES.get(type(found), "value")
        raise KapplyError(f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}")


def schema_properties(schema: Obj) -> list[SchemaProperty]:
    """The leaf properties of the schema, sorted by key; a root whose `properties` are empty is one property with
    neither key, type, default nor description (as kctrl lists it: it reads the root's fields as JSON documents, not
    as text). `check_properties` first."""
    found: list[SchemaProperty] = []

    def walk(node: Obj, path: tuple[str, ...]) -> None:
        children = _properties(node)
        if not path and "properties" in node and not node["properties"]:
            found.append(SchemaProperty("", "", None, ""))
        elif path and not children:
            found.append(
                SchemaProperty(
                    ".".join(path), str(node.get("type") or ""), node.get("default"), str(node.get("description") or "")
                )
            )
        for key, child in children.items():
            walk(child, (*path, key))

    walk(schema, ())
    return sorted(found, key=lambda p: p.key)


def _defaults(node: Obj) -> Any:
    """The default of a property: its own, else for an object the defaults inside it (None when it has none)."""
    if "default" in node:
        return node["default"]
    children = _properties(node)
    required = set(node.get("required") or ())
    values = {}
    for key, child in children.items():
        value = _defaults(child)
        if value is not None:
            values[key] = value
        elif key in required:
            values[key] = {}
    return values or None


def default_values(schema: Obj) -> str:
    """The default values file: the defaults as YAML (an object without defaults inside shown as `key:`), each line
    commented out with `# `, for the user to uncomment what they change."""
    values = _defaults({k: v for k, v in schema.items() if k != "default"}) or {}
    text = to_yaml(values)
    return "".join(f"# {line.replace(': {}', ':', 1)}\n" for line in text.rstrip("\n").split("\n"))
