"""Kubernetes objects as YAML text, byte for byte as kapp prints them.

kapp renders objects with Go's ``sigs.k8s.io/yaml``: the object goes through JSON (so every number is an int64
or a float64) and is then written by go-yaml v2, an emitter ported from libyaml. PyYAML's C emitter is libyaml
itself, so it lays text out the same way (indentation, block scalars, folding at 80 columns, quoting when a plain
scalar is not allowed). What differs is everything above the emitter, which this module supplies:

- which strings must be double quoted: go-yaml quotes a string when, written plain, its own YAML 1.1 resolver
  would read it as something else (a bool such as ``y``/``off``, a number such as ``0x1F``/``1_000``/``1.``, a
  timestamp, a base 60 float). PyYAML's resolver differs and would pick single quotes;
- the order of map keys (go-yaml's "natural" order, where digit runs compare as numbers);
- how numbers are spelled after the JSON round trip (``1000.0`` is ``1000``; other floats like Go's ``%g``).

Not reproduced: Go's round trip turns U+0085 (NEL) in a string into a space and garbles escapes after U+FEFF.
"""

import io
import math
import re
from collections.abc import Callable
from functools import cmp_to_key, lru_cache
from itertools import pairwise
from typing import Any

from yaml._yaml import CEmitter
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import BaseResolver

from kapply.yamlio import is_timestamp

__all__ = ["to_yaml"]

_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_TAG_BY_KIND = {ScalarNode: _STR_TAG, MappingNode: _MAP_TAG, SequenceNode: _SEQ_TAG}

_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1
_EXACT_INT_FLOAT = 2.0**53  # below this a whole float64 prints exactly as the int it holds

# Plain words go-yaml v2 resolves to a bool, null or special float (its map also has "<<", but a string starting
# with "<" is never looked up there).
_NON_STRING_WORDS = frozenset(
    {
        *("y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO"),
        *("true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"),
        *("", "~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN"),
        *(".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"),
    }
)
_SIGN_OR_DIGIT = frozenset("+-0123456789")

# strconv.ParseInt(s, 0, 64) syntax (underscores are already removed by the caller).
_GO_INT = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)")
_GO_INT_BASES = {"x": 16, "X": 16, "b": 2, "B": 2, "o": 8, "O": 8}
# go-yaml's yamlStyleFloat, then strconv.ParseFloat on strings starting with "." (underscores between digits).
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9](_?[0-9])*([eE][-+]?[0-9](_?[0-9])*)?")
# go-yaml's sign-prefixed binary literal quirk: "0b" followed by a signed binary number is an int.
_SIGNED_BINARY = re.compile(r"0b[+-][01]+")
_BASE60_FLOAT = re.compile(r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?")

# Keys made only of ASCII letters and ASCII characters below "0" sort the same in go-yaml's order and in code point
# order (go-yaml puts every non-letter before every letter, and compares digit runs by value).
_KEY_ORDER_MAY_DIFFER = re.compile(r"[^A-Za-z\x00-\x2f]").search


def to_yaml(obj: Any) -> str:
    """Serialise a Kubernetes object (dicts with str keys, lists, str, int, float, bool, None) like kapp."""
    out = io.StringIO()
    emitter = _GoYAMLEmitter(out, allow_unicode=True)
    emitter.open()
    emitter.serialize(_node(obj))
    emitter.close()
    text = out.getvalue()
    # libyaml ends a document whose last scalar keeps trailing newlines ("|+") with "..."; go-yaml does not.
    return text[:-4] if text.endswith("\n...\n") else text


class _GoYAMLEmitter(CEmitter, BaseResolver):
    """libyaml's emitter fed with nodes whose scalar style is already decided.

    Every scalar is tagged !!str and resolves as !!str, so libyaml never adds a tag and writes a scalar plain
    unless its characters forbid it; the caller asks for double quotes or a block scalar where go-yaml does.
    """

    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        return _TAG_BY_KIND[kind]


def _node(obj: Any) -> Node:
    build = _BUILDERS.get(type(obj))
    if build is None:
        build = next((_BUILDERS[t] for t in type(obj).__mro__ if t in _BUILDERS), None)
        if build is None:
            raise TypeError(f"cannot render {type(obj).__name__} as YAML")
    return build(obj)


def _mapping_node(obj: dict[str, Any]) -> MappingNode:
    items = [(ScalarNode(_STR_TAG, key, style=_string_style(key)), _node(obj[key])) for key in _sorted_keys(obj)]
    return MappingNode(_MAP_TAG, items, flow_style=False)


def _sequence_node(obj: list[Any]) -> SequenceNode:
    return SequenceNode(_SEQ_TAG, [_node(item) for item in obj], flow_style=False)


def _string_node(obj: str) -> ScalarNode:
    return ScalarNode(_STR_TAG, obj, style=_string_style(obj))


def _plain_node(text: str) -> ScalarNode:
    return ScalarNode(_STR_TAG, text)


_BUILDERS: dict[type, Callable[[Any], Node]] = {
    dict: _mapping_node,
    list: _sequence_node,
    str: _string_node,
    bool: lambda obj: _plain_node("true" if obj else "false"),
    int: lambda obj: _plain_node(_int_text(obj)),
    float: lambda obj: _plain_node(_float_text(obj)),
    type(None): lambda obj: _plain_node("null"),
}


def _string_style(text: str) -> str | None:
    """The scalar style go-yaml v2 asks for; None lets the emitter choose plain, or quotes if plain is invalid."""
    if "\n" in text:
        return "|"
    if text in _NON_STRING_WORDS:
        return '"'
    first = text[0]
    if first in _SIGN_OR_DIGIT:
        return '"' if _number_or_time(text) else None
    if first == ".":
        return '"' if _is_dot_float(text) else None
    return None


@lru_cache(maxsize=4096)
def _number_or_time(text: str) -> bool:
    """Whether go-yaml reads ``text`` (starting with a sign or digit) as an int, float or timestamp."""
    if is_timestamp(text) or _BASE60_FLOAT.fullmatch(text):
        return True
    plain = text.replace("_", "")
    match = _GO_INT.fullmatch(plain)
    if match:
        sign, digits = match.groups()
        value = _go_int_value(digits)
        if sign == "-":
            value = -value
        if _INT64_MIN <= value <= _INT64_MAX or (not sign and value <= _UINT64_MAX):
            return True
    if _YAML_STYLE_FLOAT.fullmatch(plain):
        return not math.isinf(float(plain))  # ParseFloat reports a range error on overflow
    if _SIGNED_BINARY.fullmatch(plain):
        return _INT64_MIN <= int(plain[2:], 2) <= _INT64_MAX
    return False


def _go_int_value(digits: str) -> int:
    if len(digits) > 1 and digits[0] == "0":
        base = _GO_INT_BASES.get(digits[1])
        return int(digits[2:], base) if base else int(digits[1:], 8)
    # No decimal of more than 20 digits fits 64 bits, and Python refuses to convert more than 4,300.
    return int(digits) if len(digits) <= 20 else _UINT64_MAX + 1


def _is_dot_float(text: str) -> bool:
    return bool(_DOT_FLOAT.fullmatch(text)) and not math.isinf(float(text.replace("_", "")))


def _sorted_keys(mapping: dict[str, Any]) -> list[str]:
    """Keys in go-yaml v2's order; code point order is a cheap first guess that is usually right.

    On the odd key sets where go-yaml's comparison is not transitive (say "09z", "0b1", "1_") Go's own result
    depends on map iteration order, so any consistent order is as good as another.
    """
    keys = sorted(mapping)
    if (
        len(keys) > 1
        and _KEY_ORDER_MAY_DIFFER("".join(keys))
        and not all(_go_key_less(a, b) for a, b in pairwise(keys))
    ):
        keys.sort(key=_GO_KEY)
    return keys


def _go_key_less(a: str, b: str) -> bool:
    """go-yaml v2's keyList.Less for two string keys: letters after other characters, digit runs by value."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x == y:
            continue
        x_letter, y_letter = x.isalpha(), y.isalpha()
        if x_letter and y_letter:
            return x < y
        if x_letter or y_letter:
            return y_letter
        a_num = b_num = 0
        if x == "0" or y == "0":
            j = i - 1
            while j >= 0 and a[j].isdecimal():
                if a[j] != "0":
                    a_num = b_num = 1
                    break
                j -= 1
        a_end, a_num = _digit_run(a, i, a_num)
        b_end, b_num = _digit_run(b, i, b_num)
        if a_num != b_num:
            return a_num < b_num
        if a_end != b_end:
            return a_end < b_end
        return x < y
    return len(a) < len(b)


def _digit_run(text: str, start: int, value: int) -> tuple[int, int]:
    end = start
    while end < len(text) and text[end].isdecimal():
        value = value * 10 + ord(text[end]) - 48
        end += 1
    return end, (value - _INT64_MIN) % 2**64 + _INT64_MIN  # Go accumulates in a wrapping int64


def _go_key_compare(a: str, b: str) -> int:
    return -1 if _go_key_less(a, b) else int(_go_key_less(b, a))


_GO_KEY = cmp_to_key(_go_key_compare)


def _int_text(value: int) -> str:
    if _INT64_MIN <= value <= _INT64_MAX:
        return str(value)
    return _float_text(float(value))  # Kubernetes decodes JSON integers beyond int64 as float64


def _float_text(value: float) -> str:
    """A float64 as go-yaml writes it after the JSON round trip.

    JSON writes a whole float64 as an integer, which go-yaml reads back as an int when it fits int64 or uint64.
    Other floats are written with strconv.FormatFloat(f, 'g', -1, 64): shortest digits, in exponent form when
    the decimal exponent is below -4 or at least 6, else in fixed notation exactly as Python's repr.
    """
    magnitude = abs(value)
    if value.is_integer() and magnitude < _EXACT_INT_FLOAT:
        return str(int(value))
    if 1e-4 <= magnitude < 1e6:
        return repr(value)
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    sign = "-" if value < 0 else ""
    digits, point = _shortest_digits(magnitude)
    if value.is_integer() and magnitude < 1e21:  # JSON wrote it as digits, not in exponent form
        text = digits + "0" * (point - len(digits))
        if int(text) <= (-_INT64_MIN if sign else _UINT64_MAX):
            return sign + text
    exponent = point - 1  # outside [-4, 6) here
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def _shortest_digits(magnitude: float) -> tuple[str, int]:
    """Shortest round-trip significant digits of a positive float and the decimal point position."""
    mantissa, _, exponent = repr(magnitude).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + int(exponent or 0)
    significant = digits.lstrip("0")
    return significant.rstrip("0"), point - (len(digits) - len(significant))
