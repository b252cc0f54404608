"""Field paths: where two objects differ, and which field manager last wrote a field of a live object.

A path is a tuple of parts: a map key (`str`), a list position (`int`), or the element of a list of maps that
carries a `name` (`Named`: containers, env, ports, volumes...). Lists whose elements all have distinct names are
matched by name, so that reordering or inserting one element is not a change of every element after it; other
lists are matched by position.

Who wrote a field comes from `metadata.managedFields`, which the API server keeps for every object (Server-Side
Apply's field ownership, https://kubernetes.io/docs/reference/using-api/server-side-apply/). Each entry names a
manager (the `fieldManager` of the request, else the start of the client's user agent: `kubectl-edit`,
`kube-controller-manager`), the operation (`Apply` or `Update`), the subresource it went through (`scale`,
`status`) and the set of fields it owns, as FieldsV1. A write that changes a field's value takes the field from
its previous owners. What the live API server records (Kubernetes 1.34, checked on the local control plane; the
fixtures in tests/unit/data/managed_fields are its output):

- `kubectl scale` and an HPA write `spec.replicas` through the scale subresource: managers `kubectl` and
  `kube-controller-manager`, subresource `scale`, and no `time` at all (the server leaves it out there, as it does
  for an Apply that changed no value);
- `kubectl edit`, `label`, `annotate`, `patch` and `create` are `kubectl-edit`, `kubectl-label`, ...; client-side
  `kubectl apply` is `kubectl-client-side-apply` (all `Update`), `kubectl apply --server-side` is `kubectl` (`Apply`);
- a mutating admission webhook is never a manager: the server records a request's fields *before* mutating
  admission runs, so a field the webhook adds is owned by nobody, and a field of the request the webhook
  rewrites stays with the request's manager, whose value it no longer is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum, StrEnum
from typing import Any

import orjson

from kapply import objects
from kapply.objects import Obj


@dataclass(frozen=True, slots=True)
class Named:
    """The element of a list of maps whose `name` is this."""

    name: str


PathPart = str | int | Named

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_PLAIN_NAME = re.compile(r"[^\[\]\"=]+")


@dataclass(frozen=True, slots=True)
class FieldPath:
    """A field of an object, rendered like `spec.template.spec.containers[name=app].image`,
    `metadata.labels["app.kubernetes.io/name"]` or `spec.ports[0].port`."""

    parts: tuple[PathPart, ...]

    def __str__(self) -> str:
        text: list[str] = []
        for part in self.parts:
            match part:
                case str() if _PLAIN_KEY.fullmatch(part):
                    text.append(f".{part}" if text else part)
                case str():
                    text.append(f"[{_quoted(part)}]")
                case int():
                    text.append(f"[{part}]")
                case Named(name) if _PLAIN_NAME.fullmatch(name):
                    text.append(f"[name={name}]")
                case Named(name):
                    text.append(f"[name={_quoted(name)}]")
        return "".join(text)


def _quoted(text: str) -> str:
    return orjson.dumps(text).decode()


class Absent(Enum):
    """The value at a path that leads nowhere (distinct from a JSON null)."""

    ABSENT = "absent"

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = Absent.ABSENT


def value_at(obj: Any, path: FieldPath) -> Any:
    """The value at `path` in `obj`, or ABSENT."""
    for part in path.parts:
        match part:
            case str():
                if not isinstance(obj, dict) or part not in obj:
                    return ABSENT
                obj = obj[part]
            case int():
                if not isinstance(obj, list) or not 0 <= part < len(obj):
                    return ABSENT
                obj = obj[part]
            case Named(name):
                position = _position_of_name(obj, name)
                if position is None:
                    return ABSENT
                obj = obj[position]
    return obj


def with_value_at(obj: Any, path: FieldPath, value: Any) -> Any:
    """`obj` with `value` at `path`, or without that field when `value` is ABSENT (a list element removed from its
    list), copied along the path and never changed in place. A list element is found, never added: where the path's
    parent, or the element it names, is not in `obj`, `obj` is returned as it is."""
    return _with_value(obj, path.parts, value)


def _with_value(node: Any, parts: tuple[PathPart, ...], value: Any) -> Any:
    head, rest = parts[0], parts[1:]
    if isinstance(head, str):
        if not isinstance(node, dict) or (rest and head not in node):
            return node
        if rest:
            return {**node, head: _with_value(node[head], rest, value)}
        if value is ABSENT:
            return {k: v for k, v in node.items() if k != head}
        return {**node, head: value}
    position = head if isinstance(head, int) else _position_of_name(node, head.name)
    if not isinstance(node, list) or position is None or not 0 <= position < len(node):
        return node
    if rest:
        return [*node[:position], _with_value(node[position], rest, value), *node[position + 1 :]]
    return [*node[:position], *([] if value is ABSENT else [value]), *node[position + 1 :]]


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values, where (unlike Python's `==`) `true` is not `1`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(b, dict | list):
        return False
    return bool(a == b)


def changed_paths(before: Obj, after: Obj) -> list[FieldPath]:
    """The paths where `after` differs from `before`: added, removed and changed values, each at the deepest path
    where it differs (a key only one side has is one path, not one per leaf under it).

    Map keys come in sorted order (the order of kapp's YAML); named elements in `before`'s order, then the ones only
    `after` has; positions in order. A list of named maps whose elements are equal but reordered is one change, at
    the list: so the result is empty exactly when the objects are equal."""
    return [FieldPath(parts) for parts in _differences(before, after, ())]


def _differences(a: Any, b: Any, prefix: tuple[PathPart, ...]) -> Iterator[tuple[PathPart, ...]]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            if key in a and key in b:
                yield from _differences(a[key], b[key], (*prefix, key))
            else:
                yield (*prefix, key)
    elif isinstance(a, list) and isinstance(b, list):
        yield from _list_differences(a, b, prefix)
    elif not json_equal(a, b):
        yield prefix


def _list_differences(a: list[Any], b: list[Any], prefix: tuple[PathPart, ...]) -> Iterator[tuple[PathPart, ...]]:
    names_a, names_b = _names(a), _names(b)
    if names_a is None or names_b is None:
        for i in range(max(len(a), len(b))):
            if i < len(a) and i < len(b):
                yield from _differences(a[i], b[i], (*prefix, i))
            else:
                yield (*prefix, i)
        return
    found = False
    by_name_b = dict(zip(names_b, b, strict=True))
    for name, element in zip(names_a, a, strict=True):
        if name in by_name_b:
            for path in _differences(element, by_name_b[name], (*prefix, Named(name))):
                found = True
                yield path
        else:
            found = True
            yield (*prefix, Named(name))
    for name in names_b:
        if name not in names_a:
            found = True
            yield (*prefix, Named(name))
    if not found and names_a != names_b:
        yield prefix


def _names(items: list[Any]) -> list[str] | None:
    """The names of a list of maps that all have a distinct string `name`, else None."""
    names = [item["name"] for item in items if isinstance(item, dict) and isinstance(item.get("name"), str)]
    return names if len(names) == len(items) == len(set(names)) else None


def _position_of_name(node: Any, name: str) -> int | None:
    if isinstance(node, list):
        for i, item in enumerate(node):
            if isinstance(item, dict) and item.get("name") == name:
                return i
    return None


class Operation(StrEnum):
    """How a manager wrote its fields: Server-Side Apply, or any other write (create, update, patch)."""

    APPLY = "Apply"
    UPDATE = "Update"


@dataclass(frozen=True, slots=True)
class FieldOwnership:
    """One `metadata.managedFields` entry: a manager and the fields of the live object it owns.

    `fields` holds every owned field, list elements resolved against the live object: `k:{"name":"app"}` as
    `Named("app")`, other keys (`k:{"containerPort":80,"protocol":"TCP"}`), set values (`v:"x"`) and `i:N` as the
    element's position. `time` is None where the server records none (writes through the scale subresource, an
    Apply that changed no value)."""

    manager: str
    operation: Operation
    time: datetime | None
    subresource: str
    api_version: str
    fields: frozenset[FieldPath]


_Concrete = tuple[str | int, ...]


def managers(live: Obj) -> list[FieldOwnership]:
    """The managed-fields entries of `live`, in the server's order; malformed entries are skipped."""
    return [ownership for ownership, _ in _entries(live)]


def owner_of(live: Obj, path: FieldPath) -> FieldOwnership | None:
    """The manager that last wrote the field at `path` of `live`.

    An entry owns the path if it owns the field itself, or a prefix of it as one atomic value (a FieldsV1 leaf: a
    list or struct written whole, such as `args` or `selector`); the deepest such field decides. Owning a map or a
    list element as a node (FieldsV1 `.`) says only that it exists, not who wrote the keys under it. When nobody owns
    the path that way but `live` has it, the owners of the fields under it count (a map or an element added whole).
    Among several owners the latest `time` wins (an entry without one counts as oldest); on a tie an `Update` (which
    took the value) wins over an `Apply` (which may share it), then the manager's name, so the answer is stable.

    None when nobody owns the field: one removed from `live` (its remover keeps no ownership of it), or one a
    mutating admission webhook added (the server records a request's fields before admission mutates it)."""
    target, complete = _concrete(live, path)
    best_depth, owners, below = -1, [], []
    for ownership, owned in _entries(live):
        depth = max(
            (len(field) for field, leaf in owned.items() if _owns(field, leaf, target, complete)),
            default=-1,
        )
        if depth > best_depth:
            best_depth, owners = depth, [ownership]
        elif depth == best_depth >= 0:
            owners.append(ownership)
        if complete and any(len(field) > len(target) and field[: len(target)] == target for field in owned):
            below.append(ownership)
    return max(owners if owners else below, key=_recency, default=None)


def _owns(field: _Concrete, leaf: bool, target: _Concrete, complete: bool) -> bool:
    if leaf:
        return target[: len(field)] == field
    return complete and field == target


def _recency(ownership: FieldOwnership) -> tuple[bool, float, bool, str]:
    time = ownership.time
    return (
        time is not None,
        time.timestamp() if time else 0.0,
        ownership.operation is Operation.UPDATE,
        ownership.manager,
    )


def _concrete(live: Obj, path: FieldPath) -> tuple[_Concrete, bool]:
    """The path with named elements replaced by their positions in `live`, as far as `live` has it, and whether it
    has all of it."""
    node: Any = live
    out: list[str | int] = []
    for part in path.parts:
        match part:
            case str() if isinstance(node, dict) and part in node:
                out.append(part)
                node = node[part]
            case int() if isinstance(node, list) and 0 <= part < len(node):
                out.append(part)
                node = node[part]
            case Named(name) if (position := _position_of_name(node, name)) is not None:
                out.append(position)
                node = node[position]
            case _:
                return tuple(out), False
    return tuple(out), True


def _entries(live: Obj) -> Iterator[tuple[FieldOwnership, dict[_Concrete, bool]]]:
    """Each valid entry, with its owned fields as positions in `live`, each marked True if owned as a leaf."""
    entries = objects.metadata(live).get("managedFields")
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("manager"), str):
            continue
        try:
            operation = Operation(entry.get("operation", ""))
        except ValueError:
            continue
        fields_v1 = entry.get("fieldsV1")
        owned: dict[_Concrete, tuple[FieldPath, bool]] = {}
        if entry.get("fieldsType", "FieldsV1") == "FieldsV1" and isinstance(fields_v1, dict) and fields_v1:
            _collect(fields_v1, live, (), (), owned)
        ownership = FieldOwnership(
            manager=entry["manager"],
            operation=operation,
            time=_time(entry.get("time")),
            subresource=_string(entry.get("subresource")),
            api_version=_string(entry.get("apiVersion")),
            fields=frozenset(path for path, _ in owned.values()),
        )
        yield ownership, {field: leaf for field, (_, leaf) in owned.items()}


def _collect(
    node: Mapping[str, Any],
    value: Any,
    concrete: _Concrete,
    parts: tuple[PathPart, ...],
    out: dict[_Concrete, tuple[FieldPath, bool]],
) -> None:
    """Add the fields a FieldsV1 set owns under `value` (the live value at `concrete`) to `out`.

    FieldsV1 is a tree of path elements: `f:<key>` a map key, `k:<json>` the list element with those key fields,
    `v:<json>` the set element with that value, `i:<n>` a position, and `.` the node itself. A node without children
    is an owned leaf (its whole value); a node with children is owned, as a node, only when it has `.`. Elements
    `live` no longer has are skipped: they cannot be placed."""
    if not node:
        out[concrete] = (FieldPath(parts), True)
        return
    for element, child in node.items():
        if element == ".":
            out[concrete] = (FieldPath(parts), False)
            continue
        step = _step(element, value)
        if step is not None and isinstance(child, dict):
            position, part = step
            _collect(child, value[position], (*concrete, position), (*parts, part), out)


def _step(element: str, value: Any) -> tuple[str | int, PathPart] | None:
    """Where a FieldsV1 path element leads in `value`: the key or position, and the path part that names it."""
    kind, _, text = element.partition(":")
    if kind == "f":
        return (text, text) if isinstance(value, dict) and text in value else None
    if not isinstance(value, list):
        return None
    if kind == "i":
        position = int(text) if text.isdigit() else len(value)
        return (position, position) if position < len(value) else None
    try:
        wanted = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    for i, item in enumerate(value):
        if kind == "k" and isinstance(wanted, dict) and isinstance(item, dict):
            if all(json_equal(item.get(k, ABSENT), v) for k, v in wanted.items()):
                named = wanted.keys() == {"name"} and isinstance(wanted["name"], str)
                return i, Named(wanted["name"]) if named else i
        elif kind == "v" and json_equal(item, wanted):
            return i, i
    return None


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""
