"""kctrl's values schema of a Helm chart (its HelmValuesSchemaGen): `package release` of a package whose first template
step is `helmTemplate` describes the chart's values.yaml as an OpenAPI v3 schema, each value's type and default taken
from the value as YAML 1.2 resolves it (go-yaml v3: `yes` is a string, `0.5` a float), and its description from the
comment right above its key.

- a map: `type: object` and its `properties`, or `default: {}` when it has none;
- a list: `type: array`, `default: []` and `items`: the schema of its first item (`{}` for an empty list);
- a scalar: its type (`boolean`, `integer`, `number` with `format: float`, `null` for a plain `null`, else
  `string`) and its value as default (a null's default is its text: `"null"`, `"~"` or `""`);
- a description: the comment lines directly above the key (no blank line between), joined, without the leading `#`
  (or `##`, or helm-docs' `# --`, or `# <key>`), trimmed.

No values.yaml, or an empty one: no schema (None).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from kapply.errors import KapplyError

_NULL = re.compile(r"~|null|Null|NULL|")
_BOOL = re.compile(r"true|True|TRUE|false|False|FALSE")
# what Go's strconv.ParseInt(text, 0, 64) takes: decimal, 0x, 0o, 0b and 0-prefixed octal (`_` after a prefix)
_INT = re.compile(r"[-+]?([0-9]+|0[xX][_0-9a-fA-F]+|0[oO]?[_0-7]+|0[bB][_01]+)")
_DECIMAL = re.compile(r"[-+]?[0-9]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_INF = re.compile(r"[-+]?\.(inf|Inf|INF)")
_NAN = re.compile(r"\.(nan|NaN|NAN)")


def values_schema(chart: str) -> dict[str, Any] | None:
    """The schema of `chart`'s values.yaml (`chart`: the helmTemplate step's path)."""
    directory = Path(chart)
    if not directory.is_dir():
        if not directory.exists():
            raise KapplyError(f"stat {chart}: no such file or directory")
        raise KapplyError(f"expected {chart} to be directory")
    try:
        text = (directory / "values.yaml").read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise KapplyError(f"Reading {directory / 'values.yaml'}: {e}") from None
    return schema_of_text(text)


def schema_of_text(text: str) -> dict[str, Any] | None:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        raise KapplyError(f"Reading values.yaml: {e}") from None
    if node is None:
        return None
    if not isinstance(node, yaml.MappingNode):
        raise KapplyError("values file must resolve to a map")
    return _schema(node, None, text.splitlines())


def _schema(node: yaml.Node, key: yaml.ScalarNode | None, lines: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    description = _description(key, lines) if key is not None else None
    if description is not None:
        found["description"] = description
    if isinstance(node, yaml.MappingNode):
        found["type"] = "object"
        properties = {str(k.value): _schema(v, k, lines) for k, v in node.value}
        if properties:
            found["properties"] = properties
        else:
            found["default"] = {}
    elif isinstance(node, yaml.SequenceNode):
        found["type"] = "array"
        found["default"] = []
        found["items"] = _schema(node.value[0], None, lines) if node.value else {}
    elif isinstance(node, yaml.ScalarNode):
        kind, default = _scalar(node)
        found["type"] = kind
        found["default"] = default
        if kind == "number":
            found["format"] = "float"
    return found


def _scalar(node: yaml.ScalarNode) -> tuple[str, Any]:
    """The OpenAPI type and default of a scalar, resolved as go-yaml v3 resolves it."""
    text = str(node.value)
    tag = _tag(node)
    if tag == "bool":
        return "boolean", text.lower() == "true"
    if tag == "int":
        if not _DECIMAL.fullmatch(text):  # kctrl reads the default with strconv.Atoi: decimal only
            raise KapplyError(f'strconv.Atoi: parsing "{text}": invalid syntax')
        return "integer", int(text)
    if tag == "float":
        return "number", _float(text)
    if tag == "null":
        return ("null" if text == "null" else "string"), text
    return "string", text


def _tag(node: yaml.ScalarNode) -> str:
    if node.style is not None:  # quoted, literal or folded
        return "str"
    text = str(node.value)
    if _NULL.fullmatch(text):
        return "null"
    if _BOOL.fullmatch(text):
        return "bool"
    if _INT.fullmatch(text):
        return "int"
    if _FLOAT.fullmatch(text) or _INF.fullmatch(text) or _NAN.fullmatch(text):
        return "float"
    return "str"


def _float(text: str) -> float:
    if _NAN.fullmatch(text):
        return math.nan
    if _INF.fullmatch(text):
        return -math.inf if text.startswith("-") else math.inf
    return float(text)


def _description(key: yaml.ScalarNode, lines: list[str]) -> str | None:
    """kctrl's description: go-yaml's head comment of the key (the comment lines right above it), its lines joined."""
    above: list[str] = []
    line = key.start_mark.line - 1
    while line >= 0 and lines[line].strip().startswith("#"):
        above.insert(0, lines[line].strip())
        line -= 1
    if not above:
        return None
    comment = "\n".join(above).replace("\n##", "").replace("\n#", "")
    name = str(key.value)
    for prefix in (f"# {name}", "# --", "##", "#"):
        if comment.startswith(prefix):
            return comment[len(prefix) :].strip()
    return None
