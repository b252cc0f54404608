"""kapply.cli.methods_cache: dataclasses' methods compiled once and kept between runs, exactly as dataclasses makes
them (the table across fresh starts of the CLI: test_kept_table.py)."""

from __future__ import annotations

import dataclasses
import inspect
import marshal
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from typing import Any

import pytest

from kapply.cli.kept_table import save
from kapply.cli.methods_cache import CompiledMethods, load


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


def test_the_table_round_trips_and_keeps_only_code_under_the_bytecodes_magic_number(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    code = compile("x = 1", "<string>", "exec", dont_inherit=True)
    save(path, {"x = 1": code}, MAGIC_NUMBER)
    assert load(path) == {"x = 1": code}
    foreign = tmp_path / "foreign"
    foreign.write_bytes(b"\0\0\r\n" + marshal.dumps({"x = 1": code}))
    assert load(foreign) == {}
    mixed = tmp_path / "mixed"
    mixed.write_bytes(MAGIC_NUMBER + marshal.dumps({"x = 1": code, "y": "not code", 3: code}))
    assert load(mixed) == {"x = 1": code}
