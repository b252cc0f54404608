"""A Package's values schema (`spec.valuesSchema.openAPIv3`) as kctrl shows it: one row per leaf property (a property
without `properties`, or with empty ones), keyed by its dotted path, with its type, default and description; and the
default values file of `available get --default-values-file-output`: the defaults as YAML, every line commented
out, objects kept where some property inside them has a default or is required."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kapply.diff.yaml_text import to_yaml
from kapply.objects import Obj


@dataclass(frozen=True, slots=True)
class SchemaProperty:
    key: str  # dotted path: `deployment.replicas`
    type: str
    default: Any  # None when the schema gives none
    description: str


def _properties(schema: Obj) -> dict[str, Obj]:
    found = schema.get("properties")
    return {k: v for k, v in found.items() if isinstance(v, dict)} if isinstance(found, dict) else {}


def schema_properties(schema: Obj) -> list[SchemaProperty]:
    """The leaf properties of the schema, sorted by key."""
    found: list[SchemaProperty] = []

    def walk(node: Obj, path: tuple[str, ...]) -> None:
        children = _properties(node)
        if path and not children:
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
