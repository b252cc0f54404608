"""kapp's last-applied fingerprint (`kapp.k14s.io/original-diff-md5`), bit for bit.

After every create or update kapp records the copy it applied, and the MD5 of how the object the server stored
differed from it (defaults, admission mutations). On the next deploy the same fingerprint is recomputed against the
live object; if it still matches, nobody else changed the object and the recorded copy is a faithful base for the
diff. kapp and kapply read each other's annotations, so the fingerprint must be kapp's exactly:

    md5hex(yaml.v2.Marshal(patch.NewOpDefinitionsFromOps(patch.Diff{Left: left, Right: right}.Calculate())))

with go-patch (cppforlife/go-patch 2024-01) and gopkg.in/yaml.v2 2.4.0. `ops_diff` is go-patch's diff:

- maps: keys sorted (byte order); a key only on the left gives `test {path, value}` + `remove {path}`; a key only
  on the right gives `test {path, absent: true}` + `replace {path + "?", value}`; common keys recurse;
- lists, by index: extra left items each give `test` + `remove` at the first index past the right list's end (the
  index does not advance, as each removal shifts the rest); extra right items give `test {path/i, absent: true}` +
  `replace {path/-, value}`;
- anything else (scalars, or a map/list against a different type) gives `test {path, left}` + `replace {path,
  right}` unless equal, numbers comparing by value (go-patch maps int64 and whole float64 to int first);
- path tokens escape `~`, `/` and `:` as `~0`, `~1` and `~7`; list indexes are plain numbers.

`minimal_string` is yaml.v2's rendering of the op definitions (struct fields in order: type, path, value, absent).
Values keep the Go types kapp holds: the left side is an object read from the API server, whose integers client-go
decodes as int64, and the right side is the applied copy, parsed from YAML or from the `original` annotation
through encoding/json, so all its numbers are float64. Both only matter in printed values: test ops print left
values, replace ops right values, and a float64 prints in Go's shortest `%g` (1000000 as `1e+06`).
"""

from __future__ import annotations

import hashlib
import io
import re
from functools import lru_cache
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kapply.diff.yaml_text import _GoYAMLEmitter, _sorted_keys, _string_style

__all__ = ["Op", "fingerprint", "minimal_string", "ops_diff"]

TEST = "test"
ABSENT = "absent"  # a test op with `absent: true`
REMOVE = "remove"
REPLACE = "replace"

Op = tuple[str, str, Any]
"""(kind, path, value): kind is one of TEST, ABSENT, REMOVE, REPLACE; the value is None for ABSENT and REMOVE."""

_NUMBERS = (int, float)  # bool is a type of its own here: type(True) is bool
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_EXACT_FLOAT_INT = 2**53  # every int up to this magnitude is exactly a float64
_ESCAPES = str.maketrans({"~": "~0", "/": "~1", ":": "~7"})


def fingerprint(left: Any, right: Any) -> str:
    """kapp's `original-diff-md5` of the change from `left` (stored object) to `right` (applied copy, rebased)."""
    return hashlib.md5(minimal_string(ops_diff(left, right)).encode()).hexdigest()


def ops_diff(left: Any, right: Any) -> list[Op]:
    """go-patch's ops that turn `left` into `right`, in go-patch's order."""
    out: list[Op] = []
    _diff(left, right, "", out)
    return out


def _token(key: str) -> str:
    return key.translate(_ESCAPES) if ("~" in key or "/" in key or ":" in key) else key


def _diff(left: Any, right: Any, path: str, out: list[Op]) -> None:
    if left is right:  # rebasing shares subtrees (all of metadata) with the live object
        return
    left_type, right_type = type(left), type(right)
    if left_type is dict and right_type is dict:
        keys = sorted(left) if left.keys() == right.keys() else sorted(left.keys() | right.keys())
        for key in keys:
            sub = f"{path}/{_token(key)}"
            if key not in left:
                out.append((ABSENT, sub, None))
                out.append((REPLACE, sub + "?", right[key]))
            elif key not in right:
                out.append((TEST, sub, left[key]))
                out.append((REMOVE, sub, None))
            else:
                _diff(left[key], right[key], sub, out)
    elif left_type is list and right_type is list:
        common = min(len(left), len(right))
        for i in range(common):
            _diff(left[i], right[i], f"{path}/{i}", out)
        removed_at = f"{path}/{common}"
        for item in left[common:]:
            out.append((TEST, removed_at, item))
            out.append((REMOVE, removed_at, None))
        for i in range(common, len(right)):
            out.append((ABSENT, f"{path}/{i}", None))
            out.append((REPLACE, f"{path}/-", right[i]))
    elif (
        left_type is dict
        or left_type is list
        or right_type is dict
        or right_type is list
        or not _same_scalar(left, right)
    ):
        out.append((TEST, path, left))
        out.append((REPLACE, path, right))


def _same_scalar(left: Any, right: Any) -> bool:
    """reflect.DeepEqual after go-patch's number normalisation: numbers compare by value, other types must match.

    Right-side integers are float64 in kapp, so beyond 2**53 they are first rounded as Go's JSON decoder rounds
    them; left-side integers are int64 unless they overflow it (then client-go decodes a float64).
    """
    left_type, right_type = type(left), type(right)
    if left_type not in _NUMBERS or right_type not in _NUMBERS:
        return left_type is right_type and bool(left == right)
    if right_type is int and not -_EXACT_FLOAT_INT <= right <= _EXACT_FLOAT_INT:
        right = float(right)
    if left_type is int and not _INT64_MIN <= left <= _INT64_MAX:
        left = float(left)
    return bool(left == right)


# --- MinimalString: gopkg.in/yaml.v2 of []patch.OpDefinition ---------------------------------------------------------

_EMPTY = "[]\n"
# Strings written plain or in plain double quotes with no analysis needed: no spaces (so never folded at 80 columns),
# no character that is an indicator, needs escaping or changes libyaml's choice of style, and not ending in ":".
_SIMPLE_STRING = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./=+,@~?;%:-]*").fullmatch
_MAX_SIMPLE_KEY = 128  # longer keys are written as "? key" complex keys


class _NotSimple(Exception):
    """A value the direct writer does not lay out itself; the document goes through the YAML emitter."""


def minimal_string(ops: list[Op]) -> str:
    """go-patch's OpsDiff.MinimalString(): the op definitions as gopkg.in/yaml.v2 writes them."""
    if not ops:
        return _EMPTY
    try:
        return _write_ops(ops)
    except _NotSimple:
        return _emit_ops(ops)


def _write_ops(ops: list[Op]) -> str:
    """The document written directly; raises _NotSimple for anything that needs the emitter's analysis."""
    out: list[str] = []
    for kind, path, value in ops:
        out.append(f"- type: {TEST if kind == ABSENT else kind}\n  path: {_simple_string(path)}\n")
        if kind == ABSENT:
            out.append("  absent: true\n")
        elif kind != REMOVE:
            out.append("  value:")
            _write_value(value, 2, kind == REPLACE, out)
    return "".join(out)


def _write_value(value: Any, indent: int, floats: bool, out: list[str]) -> None:
    """A value after "key:" at column `indent`: nested maps are indented, lists are not (libyaml's layout)."""
    value_type = type(value)
    if value_type is dict and value:
        out.append("\n")
        _write_map(value, indent + 2, False, floats, out)
    elif value_type is list and value:
        out.append("\n")
        _write_list(value, indent, False, floats, out)
    else:
        out.append(" ")
        out.append(_simple_scalar(value, floats))
        out.append("\n")


def _write_map(value: dict[str, Any], indent: int, inline: bool, floats: bool, out: list[str]) -> None:
    """A block map at column `indent`; `inline` when its first key follows a "- " already written."""
    pad = " " * indent
    for key in _sorted_keys(value):
        if len(key) > _MAX_SIMPLE_KEY or (key[:1] == _BOM and len(key.encode()) > _MAX_SIMPLE_KEY):
            raise _NotSimple
        if inline:
            inline = False
        else:
            out.append(pad)
        out.append(_simple_string(key))
        out.append(":")
        _write_value(value[key], indent, floats, out)


def _write_list(value: list[Any], indent: int, inline: bool, floats: bool, out: list[str]) -> None:
    """A block list whose dashes are at column `indent`."""
    pad = " " * indent
    for item in value:
        if inline:
            inline = False
        else:
            out.append(pad)
        out.append("- ")
        item_type = type(item)
        if item_type is dict and item:
            _write_map(item, indent + 2, True, floats, out)
        elif item_type is list and item:
            _write_list(item, indent + 2, True, floats, out)
        else:
            out.append(_simple_scalar(item, floats))
            out.append("\n")


def _simple_scalar(value: Any, floats: bool) -> str:
    if type(value) is str:
        return _simple_string(value)
    if type(value) is dict:
        return "{}"
    if type(value) is list:
        return "[]"
    return _number_or_word(value, floats)


@lru_cache(maxsize=8192)
def _simple_string(text: str) -> str:
    if not text:
        return '""'
    if not _SIMPLE_STRING(text) or text[-1] == ":":
        if text[0] == _BOM:
            return _bom_quoted(text)
        raise _NotSimple
    return text if _string_style(text) is None else f'"{text}"'


_BOM = "\ufeff"
_NAMED_ESCAPES = {
    0x00: "0",
    0x07: "a",
    0x08: "b",
    0x09: "t",
    0x0A: "n",
    0x0B: "v",
    0x0C: "f",
    0x0D: "r",
    0x1B: "e",
    0x22: '"',
    0x5C: "\\",
    0x85: "N",
    0xA0: "_",
    0x2028: "L",
    0x2029: "P",
}


def _bom_quoted(text: str) -> str:
    """A string starting with U+FEFF as go-yaml v2 writes it: its double-quoted writer tests for a byte order mark
    at the start of the string instead of at each character, so every character is escaped."""
    escaped = []
    for char in text:
        code = ord(char)
        named = _NAMED_ESCAPES.get(code)
        if named is not None:
            escaped.append("\\" + named)
        elif code <= 0xFF:
            escaped.append(f"\\x{code:02X}")
        elif code <= 0xFFFF:
            escaped.append(f"\\u{code:04X}")
        else:
            escaped.append(f"\\U{code:08X}")
    return '"' + "".join(escaped) + '"'


def _number_or_word(value: Any, floats: bool) -> str:
    """How yaml.v2 writes a bool, nil, int64 or float64; `floats` when integers are float64 on this side."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int and not floats and _INT64_MIN <= value <= _INT64_MAX:
        return str(value)
    return _go_float(float(value))


def _go_float(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 64), as yaml.v2 writes a float64 (with YAML's infinities).

    Shortest round-trip digits, in exponent form when the decimal exponent is below -4 or at least 6 (Go's
    shortest %g uses 6 where Python's repr uses 16).
    """
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    sign = "-" if text[0] == "-" else ""
    mantissa, _, exponent = text.lstrip("-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    point = len(whole) + int(exponent or 0) - (len(whole + fraction) - len(digits))
    digits = digits.rstrip("0")
    if not digits:
        return sign + "0"
    decimal_exponent = point - 1
    if -4 <= decimal_exponent < 6:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return sign + digits + "0" * (point - len(digits))
        return f"{sign}{digits[:point]}.{digits[point:]}"
    tail = f".{digits[1:]}" if len(digits) > 1 else ""
    return f"{sign}{digits[0]}{tail}e{'-' if decimal_exponent < 0 else '+'}{abs(decimal_exponent):02d}"


# The general path: the same document through libyaml's emitter (go-yaml v2's emitter is a port of it), for strings
# that need its analysis (spaces and folding at 80 columns, quoting, block scalars, non-ASCII, long keys).

_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"


def _emit_ops(ops: list[Op]) -> str:
    boms: list[str] = []
    items = []
    for kind, path, value in ops:
        fields: list[tuple[Node, Node]] = [
            (_scalar("type"), _scalar(TEST if kind == ABSENT else kind)),
            (_scalar("path"), _string(path, boms)),
        ]
        if kind == ABSENT:
            fields.append((_scalar("absent"), _scalar("true")))
        elif kind != REMOVE:
            fields.append((_scalar("value"), _node(value, kind == REPLACE, boms)))
        items.append(MappingNode(_MAP_TAG, fields, flow_style=False))
    out = io.StringIO()
    emitter = _GoYAMLEmitter(out, allow_unicode=True)
    emitter.open()
    emitter.serialize(SequenceNode(_SEQ_TAG, items, flow_style=False))
    emitter.close()
    text = out.getvalue()
    if boms:
        replacements = iter(boms)
        text = _BOM_PLACEHOLDER.sub(lambda _: next(replacements), text)
    # libyaml ends a document whose last scalar keeps trailing newlines ("|+") with "..."; go-yaml does not.
    return text[:-4] if text.endswith("\n...\n") else text


def _node(value: Any, floats: bool, boms: list[str]) -> Node:
    value_type = type(value)
    if value_type is dict:
        pairs = [(_string(key, boms), _node(value[key], floats, boms)) for key in _sorted_keys(value)]
        return MappingNode(_MAP_TAG, pairs, flow_style=False)
    if value_type is list:
        return SequenceNode(_SEQ_TAG, [_node(item, floats, boms) for item in value], flow_style=False)
    if value_type is str:
        return _string(value, boms)
    return _scalar(_number_or_word(value, floats))


# Stands in for a string starting with U+FEFF (see _bom_quoted), which libyaml would write correctly; replaced in
# document order. Always double quoted and never folded, it takes the same columns as the escaped text (where the
# next scalar starts), and is over 128 bytes, libyaml's limit for a simple key, exactly when the string is. It cannot
# stand in for a map key of at most 128 bytes whose escaped text exceeds 126 characters (U+FEFF and 31 ASCII
# characters): in a document that needs the emitter, such a key comes out as a "? key" where go-yaml writes "key:".
_BOM_PLACEHOLDER = re.compile('"\ue000[\ue000x]*"')


def _string(text: str, boms: list[str]) -> ScalarNode:
    if text[:1] == _BOM:
        quoted = _bom_quoted(text)
        boms.append(quoted)
        width = len(quoted) - 2
        filler = "\ue000" if len(text.encode()) > _MAX_SIMPLE_KEY else "x"
        return ScalarNode(_STR_TAG, "\ue000" + filler * (width - 1), style='"')
    return ScalarNode(_STR_TAG, text, style=_string_style(text))


def _scalar(text: str) -> ScalarNode:
    return ScalarNode(_STR_TAG, text)
