"""kapply.cli.kept_table: a table kept between runs in a file of a header and `marshal` data, written whole at exit
under the rule Python writes bytecode by; and the two tables the CLI keeps with it, across fresh starts."""

from __future__ import annotations

import atexit
import marshal
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kapply.cli import methods_cache, pattern_cache
from kapply.cli.kept_table import load, save, save_at_exit

HEADER = b"HEAD\x01\x02"


def test_a_table_saved_is_loaded_whole_and_leaves_no_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "table.marshal"
    table = {"a": (1, [2], b"3"), ("k", 0): None}
    save(path, table, HEADER)
    assert path.read_bytes().startswith(HEADER)
    assert load(path, HEADER) == table
    assert list(path.parent.iterdir()) == [path]
    save(path, {"b": 2}, HEADER)  # an earlier run's file is replaced
    assert load(path, HEADER) == {"b": 2}


def test_a_file_missing_foreign_or_damaged_is_an_empty_table(tmp_path: Path) -> None:
    data = marshal.dumps({"a": 1, "b": [2, 3]})
    cases = {
        "foreign": b"HEAD\x01\x03" + data,
        "short": HEADER[:3],
        "damaged": HEADER + data[:-3],
        "not-marshal": HEADER + b"\xff\xfe",
        "list": HEADER + marshal.dumps([("a", 1)]),
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        assert load(tmp_path / name, HEADER) == {}, name
    assert load(tmp_path / "missing", HEADER) == {}
    (tmp_path / "headerless").write_bytes(data)
    assert load(tmp_path / "headerless", b"") == {}  # an empty header: an interpreter that can use no table


def test_an_unwritable_place_writes_nothing_and_raises_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    save(blocker / "table.marshal", {"a": 1}, HEADER)
    assert blocker.read_text() == ""
    directory = tmp_path / "directory"
    (directory / "table.marshal").mkdir(parents=True)  # the table's name taken by a folder: the partial file goes
    save(directory / "table.marshal", {"a": 1}, HEADER)
    assert [path.name for path in directory.iterdir()] == ["table.marshal"]


def registered_at_exit(monkeypatch: pytest.MonkeyPatch, path: Path, to_write: Callable[[], Any]) -> Callable[[], Any]:
    """`save_at_exit`'s function for the exit, kept from `atexit` (this process's exit writes nothing)."""
    registered: list[Callable[[], Any]] = []
    monkeypatch.setattr(atexit, "register", registered.append)
    save_at_exit(path, HEADER, to_write)
    assert len(registered) == 1
    return registered[0]


def test_the_table_is_written_at_exit_as_it_is_then(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "table.marshal"
    table: dict[str, int] = {}
    write_back = registered_at_exit(monkeypatch, path, lambda: table)
    assert not path.exists()
    table["a"] = 1
    write_back()
    assert load(path, HEADER) == {"a": 1}


def test_nothing_new_or_no_bytecode_written_means_no_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    nothing_new = tmp_path / "nothing-new.marshal"
    registered_at_exit(monkeypatch, nothing_new, lambda: None)()
    assert not nothing_new.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # PYTHONDONTWRITEBYTECODE, -B
    unkept = tmp_path / "unkept.marshal"
    registered_at_exit(monkeypatch, unkept, lambda: {"a": 1})()
    assert not unkept.exists()


def compiled_at_start(prefix: Path, program: str, **env: str) -> int:
    """Starts a fresh interpreter the way the CLI starts, with bytecode under `prefix` (and without this process's
    PYTHONDONTWRITEBYTECODE); what `program` prints: how many entries of a table the start compiled."""
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | env
    command = [sys.executable, "-X", f"pycache_prefix={prefix}", "-c", program]
    return int(subprocess.run(command, env=environ, capture_output=True, text=True, check=True).stdout)


@pytest.mark.parametrize(
    ("name", "program"),
    [
        pytest.param(
            methods_cache.CACHE_NAME,
            "import dataclasses, kapply.cli.main, kapply.cli.deploy\nprint(dataclasses.exec.compiled)\n",
            id="dataclass-methods",
        ),
        pytest.param(
            pattern_cache.CACHE_NAME,
            "import re, kapply.cli.main, kapply.cli.deploy, kapply.api\nprint(re._compiler.compile.compiled)\n",
            id="re-patterns",
        ),
    ],
)
def test_a_second_start_compiles_nothing_and_no_bytecode_means_no_table(
    tmp_path: Path, name: str, program: str
) -> None:
    kept = tmp_path / "kept"
    assert compiled_at_start(kept, program) > 20
    assert compiled_at_start(kept, program) == 0
    assert [path.name for path in kept.rglob(f"{name}*")] == [name]  # the table, no partial file
    unkept = tmp_path / "unkept"
    assert compiled_at_start(unkept, program, PYTHONDONTWRITEBYTECODE="1") > 20
    assert compiled_at_start(unkept, program, PYTHONDONTWRITEBYTECODE="1") > 20
    assert not list(unkept.rglob(f"{name}*"))
