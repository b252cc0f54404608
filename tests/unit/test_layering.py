"""The stages import only the stages below them: the import-linter contract in pyproject.toml holds on the source,
and it does catch an upward import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_layer_contract_is_kept_by_the_source(tmp_path: Path):
    result = lint_imports(REPO / "src", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path):
    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "kapply", src / "kapply", ignore=shutil.ignore_patterns("__pycache__"))
    change = src / "kapply" / "diff" / "change.py"
    change.write_text(change.read_text() + "\nfrom kapply.ui.table import Table  # the diff stage using the UI\n")
    result = lint_imports(src, tmp_path)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout and "kapply.diff.change -> kapply.ui.table" in result.stdout
