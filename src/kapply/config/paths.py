"""Paths into resources (`[spec, template, metadata, labels]`) and the operations rules do at them.

A path part is a map key, every element of a list (`{allIndexes: true}`), one element
(`{index: N}`), or, in rebase rules and diff field exclusion rules only, every map key matching a regular
expression (`{regex: "^foo"}`, searched like Go's `MatchString`).

The operations never mutate their inputs. They copy only the maps and lists on the way to what
they change, so a result shares every untouched subtree with its inputs: treat inputs and results
as immutable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from kapply.config.decode import Decoder
from kapply.errors import ConfigError


@dataclass(frozen=True, slots=True)
class AllIndexes:
    """Every element of a list."""


@dataclass(frozen=True, slots=True)
class Index:
    """One element of a list; a path through a missing element leads nowhere."""

    index: int


@dataclass(frozen=True, slots=True)
class KeyRegex:
    """Every key of a map that the pattern matches (anywhere in the key, like Go's regexp)."""

    regex: re.Pattern[str]


PathPart = str | AllIndexes | Index | KeyRegex
Path = tuple[PathPart, ...]
# A path with every list part resolved to an index and every regex to a key.
ConcretePath = tuple[str | int, ...]

_MISSING = object()

REGEX_NOT_SUPPORTED = "regex path parts are only supported by rebase rules and diff field exclusion rules"


def parse_path(value: Any, decoder: Decoder, where: str, *, allow_regex: bool = False, required: bool = True) -> Path:
    """The path in `value`; `required` makes a missing or empty one an error."""
    if required and not value:
        decoder.fail(where, "expected a non-empty path")
    parts: list[PathPart] = []
    for i, raw in enumerate(decoder.items(value, where)):
        part_where = f"{where}[{i}]"
        if isinstance(raw, str):
            parts.append(raw)
            continue
        fields = decoder.fields(raw, part_where, ("allIndexes", "index", "regex"))
        if len(fields) != 1:
            decoder.fail(part_where, "expected a string, {allIndexes: true}, {index: N} or {regex: R}")
        ((name, part_value),) = fields.items()
        if name == "allIndexes":
            if part_value is not True:
                decoder.fail(part_where, "expected allIndexes to be true")
            parts.append(AllIndexes())
        elif name == "index":
            if isinstance(part_value, bool) or not isinstance(part_value, int) or part_value < 0:
                decoder.fail(part_where, "expected index to be a non-negative integer")
            parts.append(Index(part_value))
        else:
            if not allow_regex:
                decoder.fail(part_where, REGEX_NOT_SUPPORTED)
            pattern = decoder.string(part_value, f"{part_where}.regex")
            try:
                parts.append(KeyRegex(re.compile(pattern)))
            except (re.error, OverflowError) as e:  # OverflowError: a repeat count beyond what `re` takes
                decoder.fail(part_where, f"invalid regex '{pattern}': {e}")
            except RecursionError:  # the regex parser recurses once per level of groups
                decoder.fail(part_where, f"invalid regex '{pattern}': groups nest too deeply")
    return tuple(parts)


def format_path(path: Path) -> str:
    """kapp's notation for a path in messages, e.g. `webhooks,(all),clientConfig,caBundle`."""
    return ",".join(_format_part(part) for part in path)


def _format_part(part: PathPart) -> str:
    match part:
        case str():
            return part
        case AllIndexes():
            return "(all)"
        case Index(index):
            return str(index)
        case KeyRegex(regex):
            return f"(regex {regex.pattern})"


def has_list_parts(path: Path) -> bool:
    return any(isinstance(part, AllIndexes | Index) for part in path)


def is_empty_at(obj: Any, path: Path) -> bool:
    """True if the value at the path is missing, null, `{}` or `[]` (for list parts: in every element).

    Reaching a scalar where a map or list was expected counts as non-empty, like kapp."""
    for i, part in enumerate(path):
        match part:
            case str():
                if not isinstance(obj, dict):
                    return obj is None
                if part not in obj:
                    return True
                obj = obj[part]
            case AllIndexes():
                if not isinstance(obj, list):
                    return obj is None
                return all(is_empty_at(item, path[i + 1 :]) for item in obj)
            case Index(index):
                if not isinstance(obj, list):
                    return obj is None
                if index >= len(obj):
                    return True
                obj = obj[index]
            case KeyRegex():
                _reject_regex()
    if isinstance(obj, dict | list):
        return len(obj) == 0
    return obj is None


def remove_at(obj: Any, path: Path) -> Any:
    """`obj` without the value at the path (for list parts: in every element; for a regex part: under every key of
    the map there that it matches).

    As kapp's FieldRemoveMod, a key or regex part that meets anything but a map (a list, a scalar, null) removes
    nothing there; a list part that meets anything but a list is an error."""
    return _remove(obj, path, 0)


def _remove(node: Any, path: Path, i: int) -> Any:
    part = path[i]
    last = i == len(path) - 1
    match part:
        case str():
            if not isinstance(node, dict) or part not in node:
                return node
            if last:
                return {k: v for k, v in node.items() if k != part}
            return _replace_key(node, part, _remove(node[part], path, i + 1))
        case AllIndexes() | Index():
            if last:
                raise ConfigError("Expected last part of the path to be map key")
            return _each_element(node, part, lambda _, element: _remove(element, path, i + 1))
        case KeyRegex(regex):
            if not isinstance(node, dict):
                return node
            for key in [key for key in node if regex.search(key)]:
                node = _remove(node, (*path[:i], key, *path[i + 1 :]), i)
            return node


def _has_key(node: Any, key: str) -> bool:
    """Whether a path that changes what it finds goes on through `key` of `node`: not when `node` is null or has no
    such key (it leaves `node` as it is); a `node` that is not a map is an error."""
    if node is None:
        return False
    _expect_map(node)
    return key in node


def append_string_map(obj: Any, path: Path, kvs: dict[str, str], *, create_missing: bool) -> Any:
    """`obj` with `kvs` added to the map at the path, overriding equal keys.

    Missing maps on the way are created when `create_missing` and the path has no list parts;
    otherwise a missing map means nothing is added."""
    create = create_missing and not has_list_parts(path)
    return _append(obj, path, 0, kvs, create)


def _append(node: Any, path: Path, i: int, kvs: dict[str, str], create: bool) -> Any:
    if i == len(path):
        _expect_map(node)
        return {**node, **kvs}
    part = path[i]
    match part:
        case str():
            _expect_map(node)
            child = node.get(part)
            if child is None:
                if not create:
                    return node
                child = {}
            return _replace_key(node, part, _append(child, path, i + 1, kvs, create))
        case AllIndexes() | Index():
            return _each_element(node, part, lambda _, element: _append(element, path, i + 1, kvs, create))
        case KeyRegex():
            _reject_regex()


def replace_maps_at(obj: Any, path: Path, replace: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """`obj` with each map the path reaches replaced by `replace(map)`; missing or null values are skipped."""
    return _replace_maps(obj, path, 0, replace)


def _replace_maps(node: Any, path: Path, i: int, replace: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    if i == len(path):
        if node is None:
            return node
        _expect_map(node)
        return replace(node)
    part = path[i]
    match part:
        case str():
            if not _has_key(node, part):
                return node
            return _replace_key(node, part, _replace_maps(node[part], path, i + 1, replace))
        case AllIndexes() | Index():
            return _each_element(node, part, lambda _, element: _replace_maps(element, path, i + 1, replace))
        case KeyRegex():
            _reject_regex()


def copy_from_sources(target: Any, path: Path, sources: Sequence[Any]) -> Any:
    """`target` with the value at the path taken from the first source that has it.

    List parts walk the target's elements (and the same index in the sources); regex parts take
    the matching keys of every source. Where no source has a value, the target is left as is.
    Missing maps on the way are created unless the path has list parts."""
    if _nothing_to_copy(target, path, sources):
        return target
    return _copy(target, path, 0, (), sources, not has_list_parts(path))


def _nothing_to_copy(target: Any, path: Path, sources: Sequence[Any]) -> bool:
    """True when a path of map keys only is in no source and the target is a map at each step it has: the common
    case of a rebase rule (most resources lack what most rules copy), which then needs no walk that rebuilds maps."""
    keys = tuple(part for part in path if type(part) is str)
    if len(keys) != len(path) or _first_value(sources, keys) is not _MISSING:
        return False
    node = target
    for part in path:
        if not isinstance(node, dict):
            return False  # _copy raises the error this deserves
        if part not in node:
            return True
        node = node[part]
    return True


def _copy(node: Any, path: Path, i: int, prefix: ConcretePath, sources: Sequence[Any], create: bool) -> Any:
    part = path[i]
    last = i == len(path) - 1
    match part:
        case str():
            _expect_map(node)
            here = (*prefix, part)
            if last:
                value = _first_value(sources, here)
                return node if value is _MISSING else _replace_key(node, part, value)
            child = node.get(part)
            if child is None:
                if not create:
                    return node
                new_child = _copy({}, path, i + 1, here, sources, create)
                # Only keep the created map if something was copied into it.
                return node if new_child == {} else _replace_key(node, part, new_child)
            return _replace_key(node, part, _copy(child, path, i + 1, here, sources, create))
        case AllIndexes() | Index():
            if last:
                raise ConfigError("Expected last part of the path to be map key")
            return _each_element(
                node,
                part,
                lambda index, element: _copy(element, path, i + 1, (*prefix, index), sources, create),
            )
        case KeyRegex():
            for key in _matching_keys(sources, prefix, part):
                node = _copy(node, (*path[:i], key, *path[i + 1 :]), i, prefix, sources, create)
            return node


def _first_value(sources: Sequence[Any], path: ConcretePath) -> Any:
    for source in sources:
        value = _value_at(source, path)
        if value is not _MISSING:
            return value
    return _MISSING


def _value_at(obj: Any, path: ConcretePath) -> Any:
    for part in path:
        if isinstance(part, str):
            if not isinstance(obj, dict) or part not in obj:
                return _MISSING
        elif not isinstance(obj, list) or part >= len(obj):
            return _MISSING
        obj = obj[part]
    return obj


def _matching_keys(sources: Sequence[Any], prefix: ConcretePath, part: KeyRegex) -> list[str]:
    keys: set[str] = set()
    for source in sources:
        node = _value_at(source, prefix)
        if isinstance(node, dict):
            keys.update(key for key in node if part.regex.search(key))
    return sorted(keys)


def _each_element(node: Any, part: AllIndexes | Index, update: Callable[[int, Any], Any]) -> Any:
    """`node` (a list) with `update(index, element)` applied to the elements the part selects."""
    if node is None:
        return node
    if not isinstance(node, list):
        raise ConfigError(f"Unexpected non-array found: {type(node).__name__}")
    if isinstance(part, AllIndexes):
        indexes = range(len(node))
    else:
        indexes = range(part.index, part.index + 1) if part.index < len(node) else range(0)
    changed: list[Any] | None = None
    for index in indexes:
        new_element = update(index, node[index])
        if new_element is not node[index]:
            changed = changed if changed is not None else list(node)
            changed[index] = new_element
    return node if changed is None else changed


def _replace_key(node: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    if key in node and node[key] is value:
        return node
    return {**node, key: value}


def _expect_map(node: Any) -> None:
    if not isinstance(node, dict):
        raise ConfigError(f"Unexpected non-map found: {type(node).__name__}")


def _reject_regex() -> NoReturn:
    raise ConfigError(REGEX_NOT_SUPPORTED)
