"""The compiled methods of dataclasses, kept between runs like Python keeps a module's bytecode.

`dataclasses` writes the source of each class's `__init__`, `__eq__`, `__hash__`, `__repr__`, `__setattr__` and
`__delattr__` and compiles it with `exec` while the class is created: ~0.8 ms a class on the machines kapply is
benchmarked on, ~100 ms of a short command's start-up for the ~110 classes a deploy imports (bench/why.md, "Start-up,
fifth pass"). The compiling is the cost, and its result depends on the source text alone. So while a command runs,
`dataclasses`' `exec` looks the text up in a table of code objects loaded from
`kapply/__pycache__/dataclass-methods.<interpreter>.marshal` and compiles only what it does not find; the table
(with what was compiled) is written back at exit under the rule Python writes bytecode by (not when
`sys.dont_write_bytecode`, `PYTHONDONTWRITEBYTECODE`), atomically. Every method is exactly the one `dataclasses`
writes: a code object found is one compiled from the same text, with the same flags, by the same interpreter (the
file carries the bytecode's magic number); a file that is missing, foreign or damaged is ignored.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import marshal
import os
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any

CACHE_NAME = f"dataclass-methods.{sys.implementation.cache_tag}.marshal"


def cache_path(name: str = CACHE_NAME) -> Path:
    """Beside kapply's own bytecode (or under `sys.pycache_prefix`, as Python would put it)."""
    package = Path(__file__).resolve().parent.parent
    if sys.pycache_prefix:
        return Path(sys.pycache_prefix + str(package)) / name
    return package / "__pycache__" / name


def load(path: Path) -> dict[str, CodeType]:
    """The table written by an earlier run, or an empty one when there is none this interpreter can use."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    if not data.startswith(MAGIC_NUMBER):
        return {}
    try:
        table = marshal.loads(data[len(MAGIC_NUMBER) :])
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {text: code for text, code in table.items() if isinstance(text, str) and isinstance(code, CodeType)}


def save(path: Path, table: dict[Any, Any], header: bytes = MAGIC_NUMBER) -> None:
    """Writes the table whole or not at all (a concurrent run's file is replaced, never mixed with this one)."""
    partial = path.with_name(f"{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(header + marshal.dumps(table))
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


class CompiledMethods:
    """`exec` for `dataclasses`: source text is compiled once per table, then run from the table."""

    def __init__(self, table: dict[str, CodeType]) -> None:
        self.table = table
        self.compiled = 0

    def __call__(self, source: Any, namespace: Any = None, local_namespace: Any = None, /) -> None:
        if not isinstance(source, str):
            return builtins.exec(source, namespace, local_namespace)
        code = self.table.get(source)
        if code is None:
            # dont_inherit: compiled as `dataclasses` compiles it (no `from __future__` flags of this module)
            code = self.table[source] = compile(source, "<string>", "exec", dont_inherit=True)
            self.compiled += 1
        return builtins.exec(code, namespace, local_namespace)


def install() -> None:
    """Used from the CLI's start, before the modules whose classes it builds are imported. Idempotent."""
    if isinstance(getattr(dataclasses, "exec", None), CompiledMethods):
        return
    path = cache_path()
    methods = CompiledMethods(load(path))
    dataclasses.exec = methods  # type: ignore[attr-defined]

    def write_back() -> None:
        if methods.compiled and not sys.dont_write_bytecode:
            save(path, methods.table)

    atexit.register(write_back)
