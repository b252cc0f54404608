"""tests/conftest.py's `KAPPLY_TEST_FILE_ORDER=random`: files shuffled, each file's tests kept together in order."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.conftest import shuffled_by_file


def items(*paths: str) -> list[Any]:
    return [SimpleNamespace(path=Path(p), name=f"{p}#{i}") for i, p in enumerate(paths)]


def test_files_stay_together_and_keep_their_tests_order() -> None:
    given = items("a.py", "a.py", "b.py", "c.py", "c.py", "c.py")
    got = shuffled_by_file(given, seed=3)
    assert sorted(i.name for i in got) == sorted(i.name for i in given)
    runs = [str(i.path) for i in got]
    assert [p for j, p in enumerate(runs) if j == 0 or runs[j - 1] != p] == list(dict.fromkeys(runs))
    for path in ("a.py", "c.py"):
        assert [i.name for i in got if str(i.path) == path] == [i.name for i in given if str(i.path) == path]


def test_the_seed_decides_the_order() -> None:
    given = items(*(f"t{n}.py" for n in range(20)))
    assert [i.name for i in shuffled_by_file(given, 5)] == [i.name for i in shuffled_by_file(given, 5)]
    orders = {tuple(i.name for i in shuffled_by_file(given, seed)) for seed in range(5)}
    assert len(orders) > 1 and tuple(i.name for i in given) not in orders
