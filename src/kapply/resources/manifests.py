"""Reading manifests: files, directories and stdin, split into YAML documents.

Documents are parsed as kapp parses them (YAML 1.1 into JSON types): map keys
become strings (`on:` is the key "true"), and timestamps stay strings.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import orjson
import yaml

from kapply.errors import ManifestError
from kapply.objects import Document

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe loading with timestamps left as strings, as they are in JSON."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _json_key(key: object) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


def _to_json_types(value: object) -> object:
    if isinstance(value, dict):
        return {k if isinstance(k, str) else _json_key(k): _to_json_types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_json_types(v) for v in value]
    return value


def _json_map(doc: dict[Any, Any]) -> dict[str, Any]:
    return {k if isinstance(k, str) else _json_key(k): _to_json_types(v) for k, v in doc.items()}


def _expand(path: str) -> list[Path]:
    p = Path(path)
    if p.is_dir():
        return sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in MANIFEST_SUFFIXES)
    if not p.exists():
        raise ManifestError(f"Checking file '{path}': no such file or directory")
    return [p]


def _documents(text: str, source: str) -> Iterator[Document]:
    try:
        docs = list(yaml.load_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        context = f" ({e.context})" if e.context else ""
        raise ManifestError(f"Parsing {source}: {e.problem}{where}{context}") from e
    except yaml.YAMLError as e:
        raise ManifestError(f"Parsing {source}: {e}") from e
    for index, doc in enumerate(docs):
        origin = f"{source} doc {index + 1}"
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ManifestError(f"Parsing {origin}: expected a resource (a YAML mapping), got {type(doc).__name__}")
        yield from _expand_list(_json_map(doc), origin)


def _expand_list(obj: dict[str, Any], origin: str) -> Iterator[Document]:
    """The resource, or the items of a `kind: *List`."""
    if str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list):
        for item_index, item in enumerate(obj["items"]):
            if not isinstance(item, dict):
                raise ManifestError(f"Parsing {origin} item {item_index}: expected a resource")
            yield Document(item, f"{origin} item {item_index}")
    else:
        yield Document(obj, origin)


def from_objects(resources: Iterable[Mapping[str, Any]]) -> list[Document]:
    """Resources given as dicts (the Python API), named `resource N` (from 1) in messages.

    Each is copied through JSON, so that kapply never changes the caller's dicts and a value JSON cannot hold
    is reported here rather than when it is sent."""
    out: list[Document] = []
    for index, resource in enumerate(resources):
        origin = f"resource {index + 1}"
        if not isinstance(resource, Mapping):
            raise ManifestError(f"Reading {origin}: expected a resource (a mapping), got {type(resource).__name__}")
        try:
            obj = orjson.loads(orjson.dumps(resource, option=orjson.OPT_NON_STR_KEYS))
        except (orjson.JSONEncodeError, TypeError) as e:
            raise ManifestError(f"Reading {origin}: not representable as JSON: {e}") from e
        out += _expand_list(obj, origin)
    return out


def read(paths: Sequence[str], stdin: TextIO | None = None) -> list[Document]:
    """Every document of every path; `-` is stdin, a directory is walked for *.yaml, *.yml, *.json."""
    if not paths:
        raise ManifestError("Expected at least one --file (-f) specified with a file or directory path")
    out: list[Document] = []
    for path in paths:
        if path == "-":
            out += _documents((stdin or sys.stdin).read(), "stdin")
            continue
        for file in _expand(path):
            try:
                text = file.read_text()
            except (OSError, UnicodeDecodeError) as e:
                raise ManifestError(f"Reading file '{file}': {e}") from e
            out += _documents(text, f"file '{file}'")
    return out
