"""The compiled methods of dataclasses, kept between runs like Python keeps a module's bytecode.

`dataclasses` writes the source of each class's `__init__`, `__eq__`, `__hash__`, `__repr__`, `__setattr__` and
`__delattr__` and compiles it with `exec` while the class is created: ~0.8 ms a class on the machines kapply is
benchmarked on, ~100 ms of a short command's start-up for the ~110 classes a deploy imports (bench/why.md, "Start-up,
fifth pass"). The compiling is the cost, and its result depends on the source text alone. So while a command runs,
`dataclasses`' `exec` looks the text up in a table of code objects loaded from
`kapply/__pycache__/dataclass-methods.<interpreter>.marshal` and compiles only what it does not find; the table
(with what was compiled) is written back at exit (`kapply.cli.kept_table`) under the rule Python writes bytecode by
(not when `sys.dont_write_bytecode`, `PYTHONDONTWRITEBYTECODE`), atomically. Every method is exactly the one
`dataclasses` writes: a code object found is one compiled from the same text, with the same flags, by the same
interpreter (the file carries the bytecode's magic number); a file that is missing, foreign or damaged is ignored.
"""

from __future__ import annotations

import builtins
import dataclasses
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any

from kapply.cli import kept_table

CACHE_NAME = f"dataclass-methods.{sys.implementation.cache_tag}.marshal"


def load(path: Path) -> dict[str, CodeType]:
    """The table written by an earlier run, or an empty one when there is none this interpreter can use."""
    table = kept_table.load(path, MAGIC_NUMBER)
    return {text: code for text, code in table.items() if isinstance(text, str) and isinstance(code, CodeType)}


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
    path = kept_table.cache_path(CACHE_NAME)
    methods = CompiledMethods(load(path))
    dataclasses.exec = methods  # type: ignore[attr-defined]
    kept_table.save_at_exit(path, MAGIC_NUMBER, lambda: methods.table if methods.compiled else None)
