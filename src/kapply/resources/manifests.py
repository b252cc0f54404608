"""Reading manifests: files, directories, stdin and dicts, into documents named by where they came from.

Documents are parsed as kapp parses them (`kapply.yamlio`). Input that cannot be read is an error naming the path,
raised before anything is applied or deleted: a deploy that skipped an unreadable file would delete from the cluster
everything that file held.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TextIO

import orjson

from kapply import yamlio
from kapply.errors import ManifestError
from kapply.objects import Document
from kapply.resources import remote

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def _reason(error: OSError, path: str) -> str:
    """What went wrong, as kapp (Go) words it: `no such file or directory`, `permission denied`."""
    if error.errno == errno.ENOENT and os.path.islink(path):
        return f"it is a symlink to '{os.readlink(path)}', which does not exist"
    text = error.strerror or str(error)
    return text[:1].lower() + text[1:]


def _suffix(name: str) -> str:
    """The suffix from the last dot, as Go's filepath.Ext finds it (`.yml` is the suffix of a file named `.yml`)."""
    dot = name.rfind(".")
    return name[dot:] if dot >= 0 else ""


def _walk(root: str) -> list[str]:
    """The manifest files under a directory, in kapp's order (sorted paths). Every entry with a manifest suffix is
    listed, whatever it is, so that reading it reports what is wrong with it; symlinks to directories are not
    followed."""
    found = []
    pending = [root]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif _suffix(entry.name) in MANIFEST_SUFFIXES:
                        found.append(entry.path)
        except OSError as e:
            raise ManifestError(f"Listing files '{directory}': {_reason(e, directory)}") from None
    return sorted(found)


def _open_nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK)  # opening a FIFO that has no writer must not block


def _read_walked(path: str) -> bytes:
    """A file found in a directory. It must be a regular file: a FIFO or a device would block or never end."""
    try:
        with open(path, "rb", opener=_open_nonblocking) as file:
            mode = os.fstat(file.fileno()).st_mode
            if not stat.S_ISREG(mode):
                what = "a FIFO" if stat.S_ISFIFO(mode) else "a device"
                raise ManifestError(f"Reading file '{path}': it is {what}, not a regular file")
            return file.read()
    except OSError as e:
        raise ManifestError(f"Reading file '{path}': {_reason(e, path)}") from None


def _read_named(path: str) -> list[tuple[bytes, str, str]]:
    """(content, source, name) of a path given by the user: a file, or every manifest file of a directory. `source`
    names the file in kapply's errors (its path); `name` in documents' origins, as kapp names it (a file of a directory
    by its path within the directory). A named path may be a pipe (`-f <(ytt ...)`), so it is read whatever its
    type."""
    try:
        is_directory = stat.S_ISDIR(os.stat(path).st_mode)
    except OSError as e:
        raise ManifestError(f"Checking file '{path}': {_reason(e, path)}") from None
    if is_directory:
        return [(_read_walked(file), f"file '{file}'", f"file '{os.path.relpath(file, path)}'") for file in _walk(path)]
    try:
        with open(path, "rb") as file:
            return [(file.read(), f"file '{path}'", f"file '{path}'")]
    except OSError as e:
        raise ManifestError(f"Reading file '{path}': {_reason(e, path)}") from None


def _read_stdin(stdin: TextIO) -> bytes | str:
    """stdin's bytes when it has them (so that YAML decodes them, as kapp does), else its text."""
    try:
        buffer = getattr(stdin, "buffer", None)
        return buffer.read() if buffer is not None else stdin.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ManifestError(f"Reading stdin: {e}") from None


def _documents(data: bytes | str, source: str, name: str = "") -> Iterator[Document]:
    """The resources of one input; `source` names it in errors, `name` (default: the same) in documents' origins."""
    for index, doc in enumerate(yamlio.load_all(data, source, ManifestError), start=1):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            kind = type(doc).__name__
            raise ManifestError(f"Parsing {source} doc {index}: expected a resource (a YAML mapping), got {kind}")
        yield from _expand_list(doc, f"{name or source} doc {index}")


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
    is reported here rather than when it is sent. They may nest as deeply as YAML documents may
    (`yamlio.MAX_DEPTH`)."""
    out: list[Document] = []
    for index, resource in enumerate(resources):
        origin = f"resource {index + 1}"
        if not isinstance(resource, Mapping):
            raise ManifestError(f"Reading {origin}: expected a resource (a mapping), got {type(resource).__name__}")
        if yamlio.too_deep(resource):
            raise ManifestError(f"Reading {origin}: nesting deeper than {yamlio.MAX_DEPTH} levels")
        try:
            obj = orjson.loads(orjson.dumps(resource, option=orjson.OPT_NON_STR_KEYS))
        except (orjson.JSONEncodeError, TypeError) as e:
            raise ManifestError(f"Reading {origin}: not representable as JSON: {e}") from e
        out += _expand_list(obj, origin)
    return out


def read(paths: Sequence[str], stdin: TextIO | None = None) -> list[Document]:
    """Every document of every path; `-` is stdin, `http://` and `https://` URLs are fetched, a directory is walked
    for *.yaml, *.yml, *.json.

    Everything is read and parsed before anything is returned, so an unreadable file stops a deploy early."""
    if not paths:
        raise ManifestError("Expected at least one --file (-f) specified with a file or directory path")
    out: list[Document] = []
    for path in paths:
        if path == "-":
            sources: list[tuple[bytes | str, str, str]] = [(_read_stdin(stdin or sys.stdin), "stdin", "stdin")]
        elif remote.is_url(path):
            sources = [(remote.fetch(path), remote.source(path), remote.source(path))]
        else:
            sources = list(_read_named(path))
        for data, source, name in sources:
            out += _documents(data, source, name)
    return out
