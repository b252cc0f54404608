"""kapp's resource filters: the `--filter-*` flags and the `--filter` JSON, as one pure value.

    from kapply.resources.filters import from_flags

    found = from_flags(kinds=["Deployment"], labels=["app=web"])  # None when no filter is set
    if found is not None:
        resources = found.apply(resources)

Semantics (kapp's `ResourceFilter` and `BoolFilter`):

- Every set field must match; within a field any one value may match. `kinds`, `namespaces` and `names` are
  patterns: `%` or `*` first matches any prefix, last any suffix, both any substring (`web%`, `%-config`, `%eb%`).
  `kindNames` (`Pod/web`), `kindNamespaces` (`Pod/ns`, `Pod/` for cluster-scoped) and `kindNsNames`
  (`Pod/ns/web`) are exact. `labels` are label selectors (`app=web,tier!=db`, `!x`, `k in (a,b)`).
- `--filter-age 5m-` keeps resources created within the last 5 minutes, `500h+` those created longer ago.
- `--filter` (`{"and":[...]}`, `{"or":[...]}`, `{"not":...}`, `{"resource":{...}}`, the first present key winning
  in that order; a filter with none of them matches nothing) replaces every other filter flag, `--filter-age`
  included. Keys are matched without regard to case, as Go decodes JSON; a resource filter in JSON also takes
  `createdAtAfterTime` and `createdAtBeforeTime` (RFC 3339).

Beyond kapp: an invalid label selector is an error when the flags are read (kapp panics when it first matches), and
a pattern of one `%` matches everything (kapp panics).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, Protocol, TypeVar

from kapply import objects
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.values import parse_duration
from kapply.yamlio import kind_of

_S = TypeVar("_S", contravariant=True)
_T = TypeVar("_T")

AGE_ERROR = (
    "Expected age filter to be either empty or parseable time.Duration "
    "(example: 5m+, 24h-; valid units: ns, us, ms, s, m, h)"
)


class FilterError(KapplyError):
    """A filter flag whose value kapp would not accept (the message is kapp's where it has one)."""


# ---------------------------------------------------------------------------------------------------- patterns


def pattern_matches(pattern: str, value: str) -> bool:
    """kapp's string matcher: `%` or `*` as the first or last character is a wildcard."""
    if not pattern:
        return value == ""
    prefix_glob, suffix_glob = pattern[0] in "%*", pattern[-1] in "%*"
    if prefix_glob and suffix_glob:
        return pattern[1:-1] in value
    if prefix_glob:
        return value.endswith(pattern[1:])
    if suffix_glob:
        return value.startswith(pattern[:-1])
    return value == pattern


# ---------------------------------------------------------------------------------------------------- selectors


class Operator(Enum):
    EQUALS = "="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = ">"
    LESS_THAN = "<"


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        match self.operator:
            case Operator.EQUALS | Operator.IN:
                return present and value in self.values
            case Operator.NOT_EQUALS | Operator.NOT_IN:
                return not present or value not in self.values
            case Operator.EXISTS:
                return present
            case Operator.DOES_NOT_EXIST:
                return not present
            case _:
                try:
                    number = int(value)
                except ValueError:
                    return False
                limit = int(self.values[0])
                return present and (number > limit if self.operator is Operator.GREATER_THAN else number < limit)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A Kubernetes label selector: every requirement must hold (the empty selector matches everything)."""

    text: str
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def canonical(self) -> str:
        """The selector as Kubernetes prints a parsed one: requirements sorted by key, `in`/`notin` values sorted
        (`app=web,tier in (a,b),!x`)."""
        return ",".join(_requirement_text(r) for r in sorted(self.requirements, key=lambda r: r.key))


def _requirement_text(r: Requirement) -> str:
    match r.operator:
        case Operator.EXISTS:
            return r.key
        case Operator.DOES_NOT_EXIST:
            return f"!{r.key}"
        case Operator.IN | Operator.NOT_IN:
            return f"{r.key} {r.operator.value} ({','.join(sorted(set(r.values)))})"
        case _:
            return f"{r.key}{r.operator.value}{r.values[0]}"


_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|<|>|[^\s!=,()<>]+)")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NAME_PART = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _check_key(key: str, text: str) -> None:
    prefix, slash, name = key.rpartition("/")
    valid = bool(_NAME_PART.match(name)) and len(name) <= 63
    if slash:
        valid = valid and bool(_DNS_SUBDOMAIN.match(prefix)) and len(prefix) <= 253
    if not valid:
        raise FilterError(f"Parsing label selector '{text}': invalid label key '{key}'")


def _check_value(value: str, text: str) -> None:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise FilterError(f"Parsing label selector '{text}': invalid label value '{value}'")


def parse_selector(text: str) -> LabelSelector:
    """A label selector in Kubernetes' syntax: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`,
    `k>1`, `k<1`, joined by commas."""
    tokens: list[str] = _TOKEN.findall(text)
    requirements: list[Requirement] = []
    position = 0

    def take() -> str:
        nonlocal position
        if position >= len(tokens):
            raise FilterError(f"Parsing label selector '{text}': unexpected end")
        position += 1
        return tokens[position - 1]

    while position < len(tokens):
        token = take()
        if token == "!":
            key = take()
            _check_key(key, text)
            requirements.append(Requirement(key, Operator.DOES_NOT_EXIST))
        else:
            key = token
            _check_key(key, text)
            following = tokens[position] if position < len(tokens) else ","
            if following == ",":
                requirements.append(Requirement(key, Operator.EXISTS))
            elif following in ("=", "==", "!="):
                take()
                value = tokens[position] if position < len(tokens) and tokens[position] != "," else ""
                if value:
                    take()
                _check_value(value, text)
                operator = Operator.NOT_EQUALS if following == "!=" else Operator.EQUALS
                requirements.append(Requirement(key, operator, (value,)))
            elif following in ("in", "notin"):
                take()
                if take() != "(":
                    raise FilterError(f"Parsing label selector '{text}': expected '(' after '{following}'")
                values: list[str] = []
                while (token := take()) != ")":
                    if token != ",":
                        _check_value(token, text)
                        values.append(token)
                operator = Operator.IN if following == "in" else Operator.NOT_IN
                requirements.append(Requirement(key, operator, tuple(values)))
            elif following in (">", "<"):
                take()
                value = take()
                if not re.fullmatch(r"-?[0-9]+", value):
                    raise FilterError(f"Parsing label selector '{text}': '{value}' is not an integer")
                operator = Operator.GREATER_THAN if following == ">" else Operator.LESS_THAN
                requirements.append(Requirement(key, operator, (value,)))
            else:
                raise FilterError(f"Parsing label selector '{text}': unexpected '{following}' after '{key}'")
        if position < len(tokens) and take() != ",":
            raise FilterError(f"Parsing label selector '{text}': expected ',' after a requirement")
    return LabelSelector(text, tuple(requirements))


# ---------------------------------------------------------------------------------------------------- filters


def _created_at(obj: Obj) -> datetime:
    """The creation time; Go's zero time for an object that has none (one read from a file)."""
    stamp = objects.metadata(obj).get("creationTimestamp")
    if isinstance(stamp, str) and stamp:
        try:
            return _parse_time(stamp)
        except ValueError:
            pass
    return datetime.min.replace(tzinfo=UTC)


def _parse_time(text: str) -> datetime:
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"no time zone in {text!r}")
    return parsed


def _any(values: Sequence[str], test: Callable[[str], bool]) -> bool:
    """A field's check: unset (no values), or one of its values passes."""
    return not values or any(test(v) for v in values)


def _raw_name(obj: Obj) -> str:
    value = objects.metadata(obj).get("name")
    return value if isinstance(value, str) else ""


@dataclass(frozen=True, slots=True)
class ResourceFilter:
    """kapp's ResourceFilter: every set field must match (see the module docs); `bool_filter`, when set, decides
    alone."""

    kinds: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    kind_names: tuple[str, ...] = ()
    kind_namespaces: tuple[str, ...] = ()
    kind_ns_names: tuple[str, ...] = ()
    labels: tuple[LabelSelector, ...] = ()
    created_before: datetime | None = None  # keep resources created at or before this time
    created_after: datetime | None = None  # keep resources created at or after this time
    bool_filter: BoolFilter | None = None

    def matches(self, obj: Obj) -> bool:
        if self.bool_filter is not None:
            return self.bool_filter.matches(obj)
        created = _created_at(obj)
        if self.created_before is not None and created > self.created_before:
            return False
        if self.created_after is not None and created < self.created_after:
            return False
        kind, namespace, name = objects.kind(obj), objects.namespace(obj), _raw_name(obj)
        labels = objects.labels(obj)
        return (
            _any(self.kinds, lambda p: pattern_matches(p, kind))
            and _any(self.namespaces, lambda p: pattern_matches(p, namespace))
            and _any(self.names, lambda p: pattern_matches(p, name))
            and (not self.labels or any(s.matches(labels) for s in self.labels))
            and _any(self.kind_names, lambda k: k == f"{kind}/{name}")
            and _any(self.kind_namespaces, lambda k: k == f"{kind}/{namespace}")
            and _any(self.kind_ns_names, lambda k: k == f"{kind}/{namespace}/{name}")
        )

    def apply(self, resources: Iterable[Obj]) -> list[Obj]:
        """The resources that match, in their order."""
        return [r for r in resources if self.matches(r)]


class Matcher(Protocol[_S]):
    """A filter of things of one kind (resources, changes)."""

    def matches(self, subject: _S, /) -> bool: ...


def combined(
    and_: Sequence[Matcher[_T]], or_: Sequence[Matcher[_T]], not_: Matcher[_T] | None, subject: _T
) -> bool | None:
    """What a filter's `and`, `or` and `not` say of `subject` (the first one set decides, as in kapp's BoolFilter and
    ChangeSetFilter); None when none is set, for the filter's own test to decide."""
    if and_:
        return all(f.matches(subject) for f in and_)
    if or_:
        return any(f.matches(subject) for f in or_)
    if not_ is not None:
        return not not_.matches(subject)
    return None


@dataclass(frozen=True, slots=True)
class BoolFilter:
    """kapp's BoolFilter: the first of `and`, `or`, `not`, `resource` that is set decides; none set matches
    nothing."""

    and_: tuple[BoolFilter, ...] = ()
    or_: tuple[BoolFilter, ...] = ()
    not_: BoolFilter | None = None
    resource: ResourceFilter | None = None

    def matches(self, obj: Obj) -> bool:
        if (verdict := combined(self.and_, self.or_, self.not_, obj)) is not None:
            return verdict
        if self.resource is not None:
            return self.resource.matches(obj)
        return False


# ---------------------------------------------------------------------------------------------------- JSON


# a JSON value's kind as Go's decoding errors name it (any other: "number")
_GO_TYPES = {"map": "object", "list": "array", "string": "string", "boolean": "bool"}


def json_type_error(value: Any, struct: str, path: Sequence[str], go_type: str) -> FilterError:
    """Go's error for a JSON value of the wrong type: the struct holding the field, and the field's path from the
    top (`ResourceFilter.And.Resource.Kinds`)."""
    where = f"struct field {struct}.{'.'.join(path)}" if path else "value"
    found = _GO_TYPES.get(kind_of(value) or "", "number")
    return FilterError(f"json: cannot unmarshal {found} into Go {where} of type {go_type}")


def json_fields(
    doc: Any, struct: str, names: Sequence[str], path: Sequence[str], parent: str, package: str = "resources"
) -> dict[str, Any]:
    """A JSON object's fields by Go field name, matched without regard to case (later keys win, unknown keys are
    ignored); null leaves a field unset. `doc` decodes into Go struct `package.struct`, a field of `parent`."""
    if doc is None:  # Go leaves the struct as it is
        return {}
    if not isinstance(doc, dict):
        raise json_type_error(doc, parent, path, f"{package}.{struct}")
    by_lower = {n.lower(): n for n in names}
    out: dict[str, Any] = {}
    for key, value in doc.items():
        name = by_lower.get(key.lower())
        if name is not None and value is not None:
            out[name] = value
    return out


def _strings(value: Any, path: Sequence[str]) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise json_type_error(value, "ResourceFilter", path, "[]string")
    for item in value:
        if not isinstance(item, str):
            raise json_type_error(item, "ResourceFilter", path, "string")
    return tuple(value)


def _time(value: Any, path: Sequence[str]) -> datetime:
    if not isinstance(value, str):
        raise json_type_error(value, "ResourceFilter", path, "time.Time")
    try:
        return _parse_time(value)
    except ValueError:
        raise FilterError(f"Parsing {path[-1]}: expected an RFC 3339 time, got {json.dumps(value)}") from None


_RESOURCE_LISTS = ("Kinds", "Namespaces", "Names", "KindNames", "KindNamespaces", "KindNsNames", "Labels")
_RESOURCE_TIMES = ("CreatedAtBeforeTime", "CreatedAtAfterTime")


def resource_filter_from_json(doc: Any, path: Sequence[str], parent: str = "BoolFilter") -> ResourceFilter:
    """A ResourceFilter decoded from JSON as Go decodes it (`path`: the field names from the top, for errors;
    `parent`: the Go struct holding it)."""
    fields = json_fields(doc, "ResourceFilter", (*_RESOURCE_TIMES, *_RESOURCE_LISTS), path, parent)
    lists = {name: _strings(value, [*path, name]) for name, value in fields.items() if name in _RESOURCE_LISTS}
    times = {name: _time(value, [*path, name]) for name, value in fields.items() if name in _RESOURCE_TIMES}
    return ResourceFilter(
        kinds=lists.get("Kinds", ()),
        namespaces=lists.get("Namespaces", ()),
        names=lists.get("Names", ()),
        kind_names=lists.get("KindNames", ()),
        kind_namespaces=lists.get("KindNamespaces", ()),
        kind_ns_names=lists.get("KindNsNames", ()),
        labels=tuple(parse_selector(s) for s in lists.get("Labels", ())),
        created_before=times.get("CreatedAtBeforeTime"),
        created_after=times.get("CreatedAtAfterTime"),
    )


def _bool_filter(doc: Any, path: Sequence[str] = ()) -> BoolFilter:
    fields = json_fields(doc, "BoolFilter", ("And", "Or", "Not", "Resource"), path, "BoolFilter")
    lists: dict[str, tuple[BoolFilter, ...]] = {}
    for name in ("And", "Or"):
        if name in fields:
            if not isinstance(fields[name], list):
                raise json_type_error(fields[name], "BoolFilter", [*path, name], "[]resources.BoolFilter")
            lists[name] = tuple(_bool_filter(f, [*path, name]) for f in fields[name])
    return BoolFilter(
        and_=lists.get("And", ()),
        or_=lists.get("Or", ()),
        not_=_bool_filter(fields["Not"], [*path, "Not"]) if "Not" in fields else None,
        resource=resource_filter_from_json(fields["Resource"], [*path, "Resource"]) if "Resource" in fields else None,
    )


_GO_SYNTAX_ERRORS = {  # Python's JSON syntax errors, as Go's encoding/json words them
    "Expecting value": "looking for beginning of value",
    "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
    "Expecting ':' delimiter": "after object key",
    "Extra data": "after top-level value",
}


def _go_char(char: str) -> str:
    """A character as Go's JSON errors quote it: `'x'`, `'\\n'`."""
    if char in "'\"":
        return f"'{char}'"
    return "'" + json.dumps(char)[1:-1] + "'"


def _go_json_error(error: json.JSONDecodeError) -> str:
    """The message Go's encoding/json gives for the same bad input (Python's own when there is no counterpart)."""
    if error.pos >= len(error.doc) or error.msg.startswith("Unterminated string"):
        return "unexpected end of JSON input"
    char = _go_char(error.doc[error.pos])
    if error.msg == "Expecting ',' delimiter":
        inside_object = error.doc.rfind("{", 0, error.pos) > error.doc.rfind("[", 0, error.pos)
        return f"invalid character {char} " + (
            "after object key:value pair" if inside_object else "after array element"
        )
    if error.msg in _GO_SYNTAX_ERRORS:
        return f"invalid character {char} {_GO_SYNTAX_ERRORS[error.msg]}"
    return error.msg


def decode_json(text: str) -> Any:
    """A JSON document; a syntax error worded as Go's encoding/json words it."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise FilterError(_go_json_error(e)) from None


def parse_bool_filter(text: str) -> BoolFilter:
    """`--filter`'s JSON (kapp's BoolFilter)."""
    return _bool_filter(decode_json(text))


# ---------------------------------------------------------------------------------------------------- flags


def parse_age(text: str, now: datetime) -> tuple[datetime | None, datetime | None]:
    """`--filter-age` as (created_before, created_after): `5m-` is (None, now-5m), `500h+` is (now-500h, None)."""
    if not text:
        return None, None
    older = text.endswith("+")
    amount = text[:-1] if text[-1] in "+-" else ""
    try:
        seconds = parse_duration(amount)
    except ValueError:
        raise FilterError(AGE_ERROR) from None
    moment = now - timedelta(seconds=seconds)
    return (moment, None) if older else (None, moment)


def from_flags(
    *,
    filter_json: str = "",
    age: str = "",
    kinds: Sequence[str] = (),
    namespaces: Sequence[str] = (),
    names: Sequence[str] = (),
    kind_names: Sequence[str] = (),
    kind_namespaces: Sequence[str] = (),
    kind_ns_names: Sequence[str] = (),
    labels: Sequence[str] = (),
    now: datetime | None = None,
) -> ResourceFilter | None:
    """The filter the flags describe, or None when none is set (nothing to filter). Raises FilterError for a value
    kapp refuses (a bad age, bad JSON) or cannot use (a bad label selector)."""
    if not any((filter_json, age, kinds, namespaces, names, kind_names, kind_namespaces, kind_ns_names, labels)):
        return None
    before, after = parse_age(age, now or datetime.now(UTC))
    return ResourceFilter(
        kinds=tuple(kinds),
        namespaces=tuple(namespaces),
        names=tuple(names),
        kind_names=tuple(kind_names),
        kind_namespaces=tuple(kind_namespaces),
        kind_ns_names=tuple(kind_ns_names),
        labels=tuple(parse_selector(s) for s in labels),
        created_before=before,
        created_after=after,
        bool_filter=parse_bool_filter(filter_json) if filter_json else None,
    )
