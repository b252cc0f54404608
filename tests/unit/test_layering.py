"""The import contracts of pyproject.toml (what `make lint` runs) hold on the source, and they do catch what they
forbid: an upward import between the stages, and an import by the controller or the packaging layer that reaches past
the public API (kapply.api) into deploy internals, each named. The failing cases run lint-imports with the project's
pyproject.toml over a copy of the package with one import planted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
PUBLIC_API = "The controller and the packaging layer use the public API (kapply.api), not deploy internals"


def lint_imports(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [str(LINT_IMPORTS), str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def planted(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess[str]:
    """lint-imports over a copy of the package with `line` added to `module` (a path under src/kapply)."""
    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "kapply", src / "kapply", ignore=shutil.ignore_patterns("__pycache__"))
    path = src / "kapply" / module
    path.write_text(path.read_text() + "\n" + line + "\n")
    return lint_imports(src, tmp_path)


def test_the_contracts_are_kept_by_the_source(tmp_path: Path) -> None:
    result = lint_imports(REPO / "src", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout
    assert f"{PUBLIC_API} KEPT" in " ".join(result.stdout.split())


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    result = planted(tmp_path, "diff/change.py", "from kapply.ui.table import Table  # the diff stage using the UI")
    assert result.returncode != 0
    assert "BROKEN" in result.stdout and "kapply.diff.change -> kapply.ui.table" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "edge"),
    [
        (
            "controller/status.py",
            "from kapply.diff.ghost import explain",
            "kapply.controller.status -> kapply.diff.ghost",
        ),
        (
            "packaging/repository_deploy.py",
            "from kapply.app import record",
            "kapply.packaging.repository_deploy -> kapply.app",
        ),
        (
            "controller/deploy.py",
            "def _shown():\n    from kapply.ui.output import Output\n\n    return Output",
            "kapply.controller.deploy -> kapply.ui.output",
        ),
        ("controller/ghosts.py", "import kapply.deploy", "kapply.controller.ghosts -> kapply.deploy"),
        (
            "controller/delete.py",
            "from kapply.delete import DeleteOptions",
            "kapply.controller.delete -> kapply.delete",
        ),
        (
            "packaging/install.py",
            "from kapply.resources.labeled import get_each",
            "kapply.packaging.install -> kapply.resources.labeled",
        ),
        (
            "controller/spec.py",
            "from kapply.config.config import Config",
            "kapply.controller.spec -> kapply.config.config",
        ),
    ],
    ids=["diff.ghost", "app", "ui, in a function", "deploy", "delete", "resources.labeled", "config"],
)
def test_an_import_past_the_public_api_breaks_its_contract_naming_the_import(
    tmp_path: Path, module: str, line: str, edge: str
) -> None:
    result = planted(tmp_path, module, line)
    output = " ".join(result.stdout.split())
    assert result.returncode != 0
    assert f"{PUBLIC_API} BROKEN" in output
    assert edge in output
