"""kapply.cli.methods_cache: dataclasses' methods compiled once and kept between runs, exactly as dataclasses makes
them."""

from __future__ import annotations

import dataclasses
import inspect
import marshal
import os
import subprocess
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from typing import Any

import pytest

from kapply.cli import methods_cache
from kapply.cli.methods_cache import CompiledMethods, load, save


def made_with(methods: Any) -> Any:
    """A frozen slotted dataclass created while `dataclasses` compiles through `methods` (its annotations are types,
    not strings, as in a module without `from __future__ import annotations`)."""
    previous = dataclasses.__dict__.get("exec")
    dataclasses.exec = methods  # type: ignore[attr-defined]
    try:
        fields: list[Any] = [
            ("x", int),
            ("y", str, dataclasses.field(default="a")),
            ("tags", tuple, dataclasses.field(default=())),
        ]
        return dataclasses.make_dataclass("Point", fields, frozen=True, slots=True)
    finally:
        if previous is None:
            del dataclasses.exec  # type: ignore[attr-defined]
        else:
            dataclasses.exec = previous  # type: ignore[attr-defined]


def test_a_class_made_from_the_table_behaves_as_one_compiled_afresh() -> None:
    methods = CompiledMethods({})
    first = made_with(methods)
    compiled = methods.compiled
    assert compiled >= 5  # __init__, __repr__, __eq__, __hash__, __setattr__, __delattr__
    again = made_with(methods)
    assert methods.compiled == compiled  # nothing compiled the second time
    plain = made_with(builtins_exec())
    for cls in (first, again, plain):
        point = cls(1, tags=("t",))
        assert repr(point) == "Point(x=1, y='a', tags=('t',))"
        assert point == cls(1, "a", ("t",)) and point != cls(2)
        assert hash(point) == hash(cls(1, "a", ("t",)))
        with pytest.raises(dataclasses.FrozenInstanceError):
            point.x = 2
    # compiled without this module's `from __future__ import annotations`, as dataclasses compiles it
    assert inspect.signature(first) == inspect.signature(plain)
    assert first.__dict__["__init__"].__annotations__["x"] is int


def builtins_exec() -> Any:
    import builtins

    return builtins.exec


def test_the_table_round_trips_and_what_is_not_this_interpreters_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.marshal"
    code = compile("x = 1", "<string>", "exec", dont_inherit=True)
    save(path, {"x = 1": code})
    assert load(path) == {"x = 1": code}
    assert list(path.parent.iterdir()) == [path]  # no partial file left
    assert load(tmp_path / "missing") == {}
    foreign = tmp_path / "foreign"
    foreign.write_bytes(b"\0\0\r\n" + marshal.dumps({"x = 1": code}))
    assert load(foreign) == {}
    damaged = tmp_path / "damaged"
    damaged.write_bytes(MAGIC_NUMBER + marshal.dumps({"x = 1": code})[:-7])
    assert load(damaged) == {}
    not_a_table = tmp_path / "list"
    not_a_table.write_bytes(MAGIC_NUMBER + marshal.dumps([code]))
    assert load(not_a_table) == {}
    mixed = tmp_path / "mixed"
    mixed.write_bytes(MAGIC_NUMBER + marshal.dumps({"x = 1": code, "y": "not code", 3: code}))
    assert load(mixed) == {"x = 1": code}


def test_an_unwritable_place_writes_nothing_and_raises_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    save(blocker / "cache.marshal", {})
    assert blocker.read_text() == ""


def run_cli_start(prefix: Path, **env: str) -> int:
    """Starts a fresh interpreter the way the CLI starts, with bytecode under `prefix`; how many methods it
    compiled."""
    program = "import dataclasses, atexit, kapply.cli.main, kapply.cli.deploy\nprint(dataclasses.exec.compiled)\n"
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | env
    done = subprocess.run(
        [sys.executable, "-X", f"pycache_prefix={prefix}", "-c", program],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def test_a_second_start_compiles_nothing_and_no_bytecode_means_no_table(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    assert run_cli_start(kept) > 20
    assert run_cli_start(kept) == 0
    assert [p.name for p in kept.rglob("dataclass-methods.*")] == [methods_cache.CACHE_NAME]
    unkept = tmp_path / "unkept"
    assert run_cli_start(unkept, PYTHONDONTWRITEBYTECODE="1") > 20
    assert run_cli_start(unkept, PYTHONDONTWRITEBYTECODE="1") > 20
    assert not list(unkept.rglob("dataclass-methods.*"))
