"""Reading manifests: files, directories and stdin, split into YAML documents.

Documents are parsed as kapp parses them (YAML 1.1 into JSON types): map keys
become strings (`on:` is the key "true"), and timestamps stay strings.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import yaml

from kapply.errors import ManifestError

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe loading with timestamps left as strings, as they are in JSON."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True, slots=True)
class Document:
    """One resource as read, and where it came from (`file 'x.yml' doc 2`)."""

    obj: dict
    origin: str


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
        doc = _to_json_types(doc)
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            for item_index, item in enumerate(doc["items"]):
                if not isinstance(item, dict):
                    raise ManifestError(f"Parsing {origin} item {item_index}: expected a resource")
                yield Document(item, f"{origin} item {item_index}")
        else:
            yield Document(doc, origin)


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
