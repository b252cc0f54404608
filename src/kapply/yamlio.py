"""YAML text to JSON values, read as kapp reads it: the one place kapply parses YAML.

kapp reads manifests (and its Configs) with sigs.k8s.io/yaml: go-yaml v2 decodes each document with YAML 1.1 types,
and the result is converted to JSON. kapply builds the same JSON values in one pass over libyaml's events (PyYAML's
C parser, or its pure-Python twin when PyYAML was built without libyaml):

- plain scalars resolve as go-yaml v2 resolves them: `y`, `yes`, `on` are true; `017` and `0o17` are 15; `1e3` is
  a float; timestamps, `12:30` and anything else YAML 1.1 would give a type of its own (`=`) stay strings. Quoted and
  block scalars are strings; explicit tags (`!!int "1"`) are honoured as go-yaml does, unknown ones ignored;
- map keys become JSON strings as sigs.k8s.io/yaml makes them, so `true:` ("true") and `1:` ("1") are two keys, not
  one: a float key is printed as Go prints a float32; a null, map or list key is an error;
- a merge key (`<<`) merges in place, as go-yaml v2 does: a key after it wins over a merged one, a merged one over a
  key before it;
- JSON has no infinities or NaN, so an `.inf` or `.nan` value is an error (kapp fails converting the document).

Nothing here recurses, and limits keep every input cheap, whatever it holds:

- MAX_DEPTH: maps and lists nest at most 100 levels (counted through aliases). kapp allows 10,000, but kapply's
  later stages are recursive: orjson refuses to encode more than 255 levels (every object kapply sends or records
  as last-applied goes through it), and at the default recursion limit of 1,000 frames the YAML emitter of text
  diffs fails at about 330 levels, less what the caller's stack already uses. Real manifests stay below 30 (a CRD
  whose schema holds a whole PodTemplateSpec is 29 deep), so 100 leaves room on both sides.
- aliases: go-yaml v2's rule against "billion laughs" documents, applied as go-yaml applies it. Every node decoded
  counts once, and an alias counts as itself plus everything its anchor expands to. Once more than 100 of more than
  1,000 counted nodes come from aliases, their share may not exceed 99% up to 400,000 nodes, falling linearly to
  10% at 4,000,000 ("document contains excessive aliasing"). Aliased values are shared, never copied, so building
  a document costs memory in proportion to its text; the rule bounds what the stages that walk it (diffs, JSON)
  expand it to. The rule holds per document, so a stream of many documents could still multiply its size by a
  hundred: MAX_ALIASED caps what aliases add to one stream at 1,000,000 nodes (about 4 s and 400 MB to diff and
  print), far beyond any manifest not built to expand.
"""

from __future__ import annotations

import base64
import math
import re
import struct
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from yaml.reader import ReaderError

__all__ = ["MAX_ALIASED", "MAX_DEPTH", "Error", "kind_of", "load", "load_all", "load_mapping", "too_deep"]

MAX_DEPTH = 100
MAX_ALIASED = 1_000_000

Error = Callable[[str], Exception]
"""What the caller raises, given the message (a kapply.errors type: this module sits beside kapply.errors, not above
it)."""

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# go-yaml v2's alias rule (decode.go: allowedAliasRatio).
_ALIAS_RATIO_LOW, _ALIAS_RATIO_HIGH = 400_000, 4_000_000

# Plain scalars that go-yaml v2 resolves by table (resolve.go: resolveMap).
_WORDS: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), ("bool", True)),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), ("bool", False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), ("null", None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), ("float", math.nan)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), ("float", math.inf)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), ("float", -math.inf)),
}
_SIGN_OR_DIGIT = frozenset("+-0123456789")
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1
# strconv.ParseInt(s, 0, 64) syntax, once go-yaml has removed underscores.
_GO_INT = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)")
_GO_INT_BASES = {"x": 16, "X": 16, "b": 2, "B": 2, "o": 8, "O": 8}
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9](_?[0-9])*([eE][-+]?[0-9](_?[0-9])*)?")  # strconv.ParseFloat of ".5", "._" not
_SIGNED_BINARY = re.compile(r"0b[+-][01]+")  # go-yaml reads "0b" then strconv.ParseInt(rest, 2), which takes a sign
# time.Parse with go-yaml's layouts: "2006-1-2T15:4:5.999999999Z07:00" (also "t"), "2006-1-2 15:4:5.999999999", and
# "2006-1-2".
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9][0-9]?)-([0-9][0-9]?)"
    r"(?:[Tt]([0-9][0-9]?):([0-9][0-9]?):([0-9][0-9]?)(?:[.,][0-9]+)?(?:Z|[+-]([0-9]{2}):([0-9]{2}))"
    r"| ([0-9][0-9]?):([0-9][0-9]?):([0-9][0-9]?)(?:[.,][0-9]+)?)?"
)

_TAG_PREFIX = "tag:yaml.org,2002:"
_RESOLVED_TAGS = frozenset({"bool", "int", "float", "null", "timestamp"})
_MERGE_TAG = _TAG_PREFIX + "merge"


class _Failure(Exception):
    """A problem in one document; the caller names the source and the document."""


def load_all(data: str | bytes, source: str, error: Error) -> list[Any]:
    """Every document of a YAML stream as JSON values (None for an empty one), in order.

    `source` names the input in messages (`file 'x.yml'`, `stdin`); errors are `error`s reading
    `Parsing <source> doc <N>: <problem>`, or `Parsing <source>: <problem> at line L, column C` when the text is not
    YAML at all."""
    return list(_documents(data, source, error))


def load(data: str | bytes, source: str, error: Error) -> Any:
    """The only document of a YAML stream (None when there is none)."""
    docs = load_all(data, source, error)
    if len(docs) > 1:
        raise error(f"Parsing {source}: expected a single document, but found {len(docs)}")
    return docs[0] if docs else None


def load_mapping(data: str | bytes, source: str, error: Error) -> dict[str, Any]:
    """The only document of a YAML stream, which must be a map ({} when the stream is empty or null)."""
    doc = load(data, source, error)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise error(f"Parsing {source}: expected a YAML mapping, but found {_kind(doc)}")
    return doc


def too_deep(value: Any) -> bool:
    """Whether dicts and lists in a value nest deeper than MAX_DEPTH (what documents read from YAML may not do).

    Cycles count as too deep."""
    pending = [(value, 1)] if isinstance(value, dict | list) else []
    while pending:
        node, depth = pending.pop()
        if depth > MAX_DEPTH:
            return True
        children = node.values() if isinstance(node, dict) else node
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _documents(data: str | bytes, source: str, error: Error) -> Iterator[Any]:
    if isinstance(data, str):
        try:
            data = data.encode("utf-8")
        except UnicodeEncodeError as e:
            raise error(f"Parsing {source}: not valid UTF-8 (character {e.start} is a lone surrogate)") from None
    events = yaml.parse(data, Loader=_Loader)
    index = aliased = 0
    try:
        for event in events:
            if type(event) is DocumentStartEvent:
                index += 1
                document = _Document(events, MAX_ALIASED - aliased)
                try:
                    yield document.build()
                    aliased += document.aliased
                except _Failure as e:
                    raise error(f"Parsing {source} doc {index}: {e}") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        context = f" ({e.context})" if e.context else ""
        raise error(f"Parsing {source}: {e.problem}{where}{context}") from None
    except ReaderError as e:
        raise error(f"Parsing {source}: {e.reason} at byte {e.position}") from None
    except yaml.YAMLError as e:
        raise error(f"Parsing {source}: {e}") from None


_NEXT_IS_KEY = object()
_MERGE = object()


class _Collection:
    """A map or list being built, and what is known about it so far."""

    __slots__ = ("value", "key", "anchor", "start", "height")

    def __init__(self, value: dict[str, Any] | list[Any], anchor: str | None, start: int) -> None:
        self.value = value
        self.key: Any = _NEXT_IS_KEY if isinstance(value, dict) else None  # maps: the next value's key, or _MERGE
        self.anchor = anchor
        self.start = start  # nodes counted before this one, for the size of its anchor
        self.height = 0  # levels of collections below it, aliases expanded


class _Anchored:
    """An anchored node, for its aliases: its value, how many levels of collections it is, and how many nodes
    decoding it counts."""

    __slots__ = ("value", "height", "size")

    def __init__(self, value: Any, height: int, size: int) -> None:
        self.value = value
        self.height = height
        self.size = size


class _Document:
    """One document, built from its events; aliases share their anchor's value."""

    def __init__(self, events: Iterator[Event], alias_budget: int) -> None:
        self.events = events
        self.alias_budget = alias_budget  # what aliases may add, what the stream's earlier documents left of it
        self.stack: list[_Collection] = []
        self.anchors: dict[str, _Anchored] = {}
        self.open_anchors: set[str] = set()
        self.root: Any = None
        self.decoded = 1  # go-yaml counts the document node too
        self.aliased = 0

    def build(self) -> Any:
        for event in self.events:
            if isinstance(event, ScalarEvent):
                self.scalar(event)
            elif isinstance(event, MappingStartEvent):
                self.start(event, {})
            elif isinstance(event, SequenceStartEvent):
                self.start(event, [])
            elif isinstance(event, MappingEndEvent | SequenceEndEvent):
                self.end(event)
            elif isinstance(event, AliasEvent):
                self.alias(event)
            elif isinstance(event, DocumentEndEvent):
                return self.root
        raise _Failure("unexpected end of the stream")  # the parser reports a truncated stream before this

    def count(self, aliased: int = 0) -> None:
        self.decoded += 1 + aliased
        self.aliased += aliased
        if (
            self.aliased > 100
            and self.decoded > 1000
            and self.aliased / self.decoded > _allowed_alias_ratio(self.decoded)
        ):
            raise _Failure("document contains excessive aliasing")
        if self.aliased > self.alias_budget:
            raise _Failure(f"aliases expand the stream by more than {MAX_ALIASED:,} nodes")

    def expects_key(self) -> bool:
        return bool(self.stack) and self.stack[-1].key is _NEXT_IS_KEY

    def scalar(self, event: ScalarEvent) -> None:
        if self.expects_key():
            top = self.stack[-1]
            if event.value == "<<" and (event.implicit[0] or event.tag == _MERGE_TAG):
                top.key = _MERGE  # go-yaml does not count a merge key as a node
                return
            self.count()
            value = _scalar(event)
            top.key = _json_key(value, event)
        else:
            self.count()
            value = _scalar(event)
            if isinstance(value, float) and not math.isfinite(value):
                raise _Failure(f"value {event.value} {_at(event)} is not a JSON number (JSON has no infinities or NaN)")
            self.add(value, 0, event)
        if event.anchor is not None:
            self.anchors[event.anchor] = _Anchored(value, 0, 1)

    def start(self, event: MappingStartEvent | SequenceStartEvent, value: dict[str, Any] | list[Any]) -> None:
        if self.expects_key():
            raise _Failure(f"a {_kind(value)} cannot be a map key ({_at(event)})")
        if len(self.stack) >= MAX_DEPTH:
            raise _Failure(f"nesting deeper than {MAX_DEPTH} levels ({_at(event)})")
        start = self.decoded
        if not (self.stack and self.stack[-1].key is _MERGE and isinstance(value, list)):
            self.count()  # go-yaml decodes the maps of a merged list, not the list itself
        if event.anchor is not None:
            self.open_anchors.add(event.anchor)
        self.stack.append(_Collection(value, event.anchor, start))

    def end(self, event: MappingEndEvent | SequenceEndEvent) -> None:
        done = self.stack.pop()
        if done.anchor is not None:
            self.anchors[done.anchor] = _Anchored(done.value, done.height + 1, self.decoded - done.start)
            self.open_anchors.discard(done.anchor)
        self.add(done.value, done.height + 1, event)

    def alias(self, event: AliasEvent) -> None:
        name = event.anchor or ""
        anchored = self.anchors.get(name)
        if anchored is None:
            problem = "value contains itself" if name in self.open_anchors else "is not defined"
            raise _Failure(f"anchor '{name}' {problem} ({_at(event)})")
        self.count(anchored.size)
        if len(self.stack) + anchored.height > MAX_DEPTH:
            raise _Failure(f"nesting deeper than {MAX_DEPTH} levels through alias '*{name}' ({_at(event)})")
        if self.expects_key():
            if isinstance(anchored.value, dict | list):
                raise _Failure(f"a {_kind(anchored.value)} cannot be a map key ({_at(event)})")
            self.stack[-1].key = _json_key(anchored.value, event)
            return
        if self.stack and self.stack[-1].key is _MERGE and not isinstance(anchored.value, dict):
            raise _Failure(f"map merge requires map or sequence of maps as the value ({_at(event)})")
        if isinstance(anchored.value, float) and not math.isfinite(anchored.value):  # anchored as a key
            raise _Failure(f"alias '*{name}' {_at(event)} is not a JSON number (JSON has no infinities or NaN)")
        self.add(anchored.value, anchored.height, event)

    def add(self, value: Any, height: int, event: Event) -> None:
        """A finished value: the document, or the next item of the collection being built."""
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        if height > top.height:
            top.height = height
        if isinstance(top.value, list):
            top.value.append(value)
            return
        if top.key is _MERGE:
            _merge(top.value, value, event)
        else:
            top.value[top.key] = value
        top.key = _NEXT_IS_KEY


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= _ALIAS_RATIO_LOW:
        return 0.99
    if decoded >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW)


def _merge(target: dict[str, Any], value: Any, event: Event) -> None:
    """go-yaml v2's merge, in place: a map's entries, or each map of a list with earlier maps winning."""
    if isinstance(value, dict):
        target.update(value)
    elif isinstance(value, list) and all(isinstance(item, dict) for item in value):
        for item in reversed(value):
            target.update(item)
    else:
        raise _Failure(f"map merge requires map or sequence of maps as the value ({_at(event)})")


def _scalar(event: ScalarEvent) -> Any:
    """The value go-yaml v2 decodes a scalar to (timestamps and binary data as strings)."""
    tag, text = event.tag, event.value
    if tag is None:
        return _resolve(text)[1] if event.implicit[0] else text
    short = tag.removeprefix(_TAG_PREFIX) if tag.startswith(_TAG_PREFIX) else ""
    if short == "binary":
        try:
            data = base64.b64decode(text.replace("\n", "").replace("\r", ""), validate=True)
        except ValueError:  # binascii.Error, or a character that is not ASCII
            raise _Failure(f"!!binary value contains invalid base64 data ({_at(event)})") from None
        return data.decode("utf-8", errors="replace")
    if short not in _RESOLVED_TAGS:
        return text  # !!str, the non-specific "!", and tags go-yaml does not resolve
    if short == "timestamp":
        if is_timestamp(text):
            return text
        resolved_tag, value = _resolve(text)
    else:
        resolved_tag, value = _resolve(text)
        if resolved_tag == "int" and short == "float":
            return float(value)
    if resolved_tag != short:
        shown = text if len(text) <= 10 else text[:7] + "..."
        raise _Failure(f"cannot decode !!{resolved_tag} `{shown}` as a !!{short} ({_at(event)})")
    return value


def _resolve(text: str) -> tuple[str, Any]:
    """go-yaml v2's resolve() of a plain scalar: (short tag, value)."""
    word = _WORDS.get(text)
    if word is not None:
        return word
    first = text[0]
    if first == ".":
        if _DOT_FLOAT.fullmatch(text):
            number = float(text.replace("_", ""))
            if not math.isinf(number):  # strconv.ParseFloat reports overflow as an error
                return "float", number
        return "str", text
    if first not in _SIGN_OR_DIGIT:
        return "str", text
    plain = text.replace("_", "")
    match = _GO_INT.fullmatch(plain)
    if match:
        sign, digits = match.groups()
        value = _go_int_value(digits)
        if value is not None:
            value = -value if sign == "-" else value
            if _INT64_MIN <= value <= _INT64_MAX or (not sign and value <= _UINT64_MAX):
                return "int", value
    if _YAML_STYLE_FLOAT.fullmatch(plain):
        number = float(plain)
        if not math.isinf(number):
            return "float", number
    if _SIGNED_BINARY.fullmatch(plain):
        value = int(plain[2:], 2)
        if _INT64_MIN <= value <= _INT64_MAX:
            return "int", value
    return "str", text


def _go_int_value(digits: str) -> int | None:
    """The value of an unsigned Go integer literal; None for a decimal too long for 64 bits (Python refuses to convert
    decimals of more than 4,300 digits, and no such number fits anyway)."""
    if len(digits) > 1 and digits[0] == "0":
        base = _GO_INT_BASES.get(digits[1])
        return int(digits[2:], base) if base else int(digits[1:], 8)
    return int(digits) if len(digits) <= 20 else None


def is_timestamp(text: str) -> bool:
    """Whether go-yaml v2 reads ``text`` as a timestamp: one of its layouts, with a real date and time (the YAML
    reader here and the YAML writer of `kapply.diff.yaml_text`, which quotes such strings, share this one test)."""
    match = _TIMESTAMP.fullmatch(text)
    if not match:
        return False
    year, month, day, hour, minute, second, zone_hour, zone_minute, s_hour, s_minute, s_second = (
        None if group is None else int(group) for group in match.groups()
    )
    assert year is not None and month is not None and day is not None  # the date part is not optional
    try:
        date(year or 400, month, day)  # Go's year 0 is a leap year, as 400 is
    except ValueError:
        return False
    if hour is None:
        hour, minute, second = s_hour, s_minute, s_second
    if hour is not None and not (hour < 24 and (minute or 0) < 60 and (second or 0) < 60):
        return False
    return zone_hour is None or (zone_hour <= 24 and (zone_minute or 0) <= 60)


def _json_key(value: Any, event: Event) -> str:
    """A scalar map key as sigs.k8s.io/yaml writes it in JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float32_text(value)
    raise _Failure(f"map key null is not a string, number or boolean ({_at(event)})")


def _float32_text(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32) with go-yaml's spellings of infinities and NaN."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    sign = "-" if math.copysign(1.0, single) < 0 else ""
    magnitude = abs(single)
    if magnitude == 0:
        return sign + "0"
    for precision in range(1, 10):  # the shortest digits that read back as the same float32
        text = f"{magnitude:.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == magnitude:
            break
    mantissa, _, exponent_text = text.partition("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    exponent = int(exponent_text)
    if exponent < -4 or exponent >= 6:
        fraction = "." + digits[1:] if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{fraction}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    whole, fraction = digits[: exponent + 1].ljust(exponent + 1, "0"), digits[exponent + 1 :]
    return f"{sign}{whole}.{fraction}" if fraction else sign + whole


# a bool is an int too: it comes first
_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (type(None), "null"),
    (dict, "map"),
    (list, "list"),
    (str, "string"),
    (bool, "boolean"),
    ((int, float), "number"),
)


def kind_of(value: Any) -> str | None:
    """A loaded YAML or JSON value's kind: null, map, list, string, boolean or number; None for any other Python
    value. Messages about a value of the wrong kind name it from this, each in its own words."""
    return next((kind for of, kind in _KINDS if isinstance(value, of)), None)


def _kind(value: Any) -> str:
    return kind_of(value) or "number"


def _at(event: Event) -> str:
    mark = event.start_mark
    return f"at line {mark.line + 1}, column {mark.column + 1}" if mark else "at an unknown position"
