"""Compiled regular expressions, kept between runs like dataclasses' methods (`kapply.cli.methods_cache`).

`re` compiles a pattern the first time a process uses it: parsing it and writing its matcher's code in Python,
~0.1-0.6 ms a pattern, and ~6 ms for PyYAML's reader's non-printable class (its ranges up to U+10FFFF are walked
character by character). A deploy compiles ~70 at import (PyYAML's, logging's, h11's, kapply's own): ~19 ms of its
start-up on the machines kapply is benchmarked on (bench/why.md). The code depends on the pattern, its flags and the
interpreter alone, so while a command runs, `re`'s compiler first looks the pattern up in a table loaded from
`kapply/__pycache__/re-patterns.<interpreter>.marshal` and builds the pattern object from the code found there
(`_sre.compile`, what `re` itself ends with; `_sre` validates the code again); what it does not find it compiles as
`re` would and adds. The table is written back at exit, as the methods' table is (not under `PYTHONDONTWRITEBYTECODE`;
the file carries the bytecode's magic number and `_sre`'s, anything else is ignored). A pattern built from the table
is equal (`==`) to one `re` compiles: same pattern, flags and code. Patterns compiled with `re.DEBUG` (which prints
the code) are left to `re`, and so is a pattern longer than `LONGEST` or past `LIMIT` new ones in a run; only this
run's patterns are written when the table would exceed `LIMIT`: patterns made from input (a kapp Config's `regex`
path in an App's content, compiled by a long-running controller) grow neither the table in memory nor the file.
"""

from __future__ import annotations

import re
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from typing import Any

from kapply.cli import kept_table

try:  # `re`'s own compiler, private to it: without it (another interpreter), patterns are compiled as `re` does
    import _sre  # type: ignore[import-not-found]
    from re import _compiler, _parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - CPython 3.11+ has both
    _compiler = None

CACHE_NAME = f"re-patterns.{sys.implementation.cache_tag}.marshal"
HEADER = MAGIC_NUMBER + _sre.MAGIC.to_bytes(4, "little") if _compiler is not None else b""
LIMIT = 2048
LONGEST = 1024  # characters of a pattern kept: kapply's own and its libraries' are far shorter

# A pattern's key: (pattern, flags); what `_sre.compile` takes after the pattern: flags, code, groups, groupindex,
# indexgroup.
Key = tuple[str | bytes, int]
Compiled = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]


def load(path: Path) -> dict[Key, Compiled]:
    """The table written by an earlier run, or an empty one when there is none this interpreter can use."""
    table = kept_table.load(path, HEADER)
    return {key: value for key, value in table.items() if _well_formed(key, value)}


def _well_formed(key: Any, value: Any) -> bool:
    return (
        isinstance(key, tuple)
        and len(key) == 2
        and isinstance(key[0], str | bytes)
        and isinstance(key[1], int)
        and isinstance(value, tuple)
        and len(value) == 5
        and isinstance(value[0], int)
        and isinstance(value[1], list)
        and isinstance(value[2], int)
        and isinstance(value[3], dict)
        and isinstance(value[4], tuple)
    )


def compiled(pattern: str | bytes, flags: int) -> Compiled:
    """What `re._compiler.compile` passes to `_sre.compile` for this pattern (the same steps, kept), as plain ints (the
    opcodes are `int` subclasses, which `marshal` does not write)."""
    parsed = _parser.parse(pattern, flags)
    code = [int(word) for word in _compiler._code(parsed, flags)]
    groupindex = parsed.state.groupdict
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    return int(flags | parsed.state.flags), code, parsed.state.groups - 1, groupindex, tuple(indexgroup)


class CompiledPatterns:
    """`re._compiler.compile` for `re`: each pattern compiled once per table, then built from the table."""

    def __init__(self, table: dict[Key, Compiled], original: Any) -> None:
        self.table = table
        self.original = original
        self.used: set[Key] = set()
        self.compiled = 0

    def __call__(self, pattern: Any, flags: int = 0) -> Any:
        if type(pattern) not in (str, bytes) or flags & re.DEBUG:  # (a subclass of str is not `marshal`'s)
            return self.original(pattern, flags)
        flags = int(flags)  # a `re.RegexFlag` given to the compiler directly: its value (`marshal` writes no enum)
        key = (pattern, flags)
        found = self.table.get(key)
        if found is not None:
            try:
                built = _sre.compile(pattern, *found)
            except (RuntimeError, TypeError, ValueError, OverflowError):  # code `_sre` refuses: compile it again
                self.table.pop(key, None)
            else:
                self.used.add(key)
                return built
        if len(pattern) > LONGEST or len(self.used) >= LIMIT:
            # a pattern made from input (a kapp Config's `regex` path of an App's content, in a long-running
            # controller): compiled by `re` and not kept, so no input grows the table or the file without bound
            return self.original(pattern, flags)
        kept = self.table[key] = compiled(pattern, flags)
        self.used.add(key)
        self.compiled += 1
        return _sre.compile(pattern, *kept)

    def to_write(self) -> dict[Key, Compiled]:
        if len(self.table) <= LIMIT:
            return self.table
        return {key: self.table[key] for key in self.used}


def install() -> None:
    """Used from the CLI's start, before the modules whose patterns it compiles are imported. Idempotent."""
    if _compiler is None or isinstance(_compiler.compile, CompiledPatterns):
        return
    path = kept_table.cache_path(CACHE_NAME)
    patterns = CompiledPatterns(load(path), _compiler.compile)
    _compiler.compile = patterns
    kept_table.save_at_exit(path, HEADER, lambda: patterns.to_write() if patterns.compiled else None)
