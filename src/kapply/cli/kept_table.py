"""A table kept between runs like Python keeps a module's bytecode: the file shared by `kapply.cli.methods_cache` and
`kapply.cli.pattern_cache`.

The file is a header (the magic numbers of what made the table: a table is used only by an interpreter with the same
ones) and then the table, in `marshal`'s format. It lives beside kapply's own bytecode, is written whole or not at all,
and only at exit, under the rule Python writes bytecode by (not when `sys.dont_write_bytecode`:
`PYTHONDONTWRITEBYTECODE`, `-B`). A file that is missing, foreign or damaged reads as an empty table. Imported at
every start, before the CLI's other modules: nothing here imports more than `marshal` and what Python starts with.
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cache_path(name: str) -> Path:
    """Beside kapply's own bytecode (or under `sys.pycache_prefix`, as Python would put it)."""
    package = Path(__file__).resolve().parent.parent
    if sys.pycache_prefix:
        return Path(sys.pycache_prefix + str(package)) / name
    return package / "__pycache__" / name


def load(path: Path, header: bytes) -> dict[Any, Any]:
    """The table written by an earlier run under this header, or an empty one (none, another header, damaged data,
    not a table). Its entries are as `marshal` read them: the caller keeps those of the shape it writes. An empty
    header (an interpreter that can use no table) reads nothing."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    if not header or not data.startswith(header):
        return {}
    try:
        table = marshal.loads(data[len(header) :])
    except (EOFError, ValueError, TypeError):
        return {}
    return table if isinstance(table, dict) else {}


def save(path: Path, table: dict[Any, Any], header: bytes) -> None:
    """Writes the table whole or not at all (a concurrent run's file is replaced, never mixed with this one); a place
    that cannot be written is left as it is."""
    partial = path.with_name(f"{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(header + marshal.dumps(table))
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def save_at_exit(path: Path, header: bytes, to_write: Callable[[], dict[Any, Any] | None]) -> None:
    """At exit, writes the table `to_write` gives then (None: nothing new, nothing written), unless bytecode is not
    written then."""

    def write_back() -> None:
        table = to_write()
        if table is not None and not sys.dont_write_bytecode:
            save(path, table, header)

    atexit.register(write_back)
