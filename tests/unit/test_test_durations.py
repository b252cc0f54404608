"""tests/conftest.py's `KAPPLY_DURATIONS=<file>` (`make test` sets it): every test's time kept in the file, slowest
first, with each file's sum and the run's wall time; the 25 slowest printed at the end of the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import durations_document, slowest

REPO = Path(__file__).resolve().parents[2]


def test_the_slowest_come_first_and_each_file_sums_its_tests() -> None:
    durations = {"a.py::t1": 1.0, "b.py::t1": 3.0, "a.py::t2": 2.5, "b.py::t2": 0.0004}
    assert slowest(durations) == [("b.py::t1", 3.0), ("a.py::t2", 2.5), ("a.py::t1", 1.0), ("b.py::t2", 0.0004)]
    document = durations_document(durations, 7.12345)
    assert document == {
        "wall_seconds": 7.123,
        "tests_seconds": 6.5,
        "files": {"a.py": 3.5, "b.py": 3.0},
        "tests": {"b.py::t1": 3.0, "a.py::t2": 2.5, "a.py::t1": 1.0, "b.py::t2": 0.0},
    }
    assert list(document["files"]) == ["a.py", "b.py"]  # type: ignore[call-overload]


def test_a_run_with_the_variable_writes_every_tests_time_and_prints_the_slowest(tmp_path: Path) -> None:
    """A run of this repository's conftest on two tests of its own (one sleeps in its setup, which counts)."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text())
    (tests / "test_timed.py").write_text(
        "import time\n\nimport pytest\n\n\n@pytest.fixture\ndef slow():\n    time.sleep(0.3)\n\n\n"
        "def test_slow(slow):\n    pass\n\n\ndef test_fast():\n    pass\n"
    )
    out = tmp_path / "durations.json"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_timed.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), "KAPPLY_DURATIONS": str(out)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    document = json.loads(out.read_text())
    assert list(document["tests"]) == ["tests/test_timed.py::test_slow", "tests/test_timed.py::test_fast"]
    assert document["tests"]["tests/test_timed.py::test_slow"] >= 0.3
    assert document["wall_seconds"] >= document["tests_seconds"]
    assert f"25 slowest tests (setup, call and teardown; every test's in {out})" in run.stdout
    lines = run.stdout.splitlines()
    shown = lines.index(next(line for line in lines if "25 slowest tests" in line))
    assert lines[shown + 1].endswith("s tests/test_timed.py::test_slow")
