"""Fake tools for unit tests: shell scripts (in the test's tmp_path) that kapply runs in place of helm, kustomize,
vendir, cue, sops, ... (the `$KAPPLY_<TOOL>` variables), and what the template steps' tests share: a fetch directory
with canaries beside it, and a read of the App's namespace that finds nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kapply.objects import Obj


def fake_tool(monkeypatch: pytest.MonkeyPatch, path: Path, variable: str, script: str) -> Path:
    """A shell script at `path` that kapply runs as the tool `$variable` names."""
    path.write_text(f"#!/bin/sh\n{script}")
    path.chmod(0o755)
    monkeypatch.setenv(variable, str(path))
    return path


def fake_step_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, script: str) -> None:
    """`tool` of a template step (`$KAPPLY_<TOOL>`): `script`."""
    fake_tool(monkeypatch, tmp_path / f"fake-{tool}", f"KAPPLY_{tool.upper()}", script)


def tree(root: Path, files: dict[str, str], links: dict[str, str] | None = None) -> Path:
    for relative, content in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(content)
    for relative, target in (links or {}).items():
        os.symlink(target, root / relative)
    return root


def fetch_directory(tmp_path: Path, canaries: dict[str, str]) -> Path:
    """An empty fetch directory, and `canaries` beside it, outside (where no step may read)."""
    tree(tmp_path / "outside", canaries)
    (tmp_path / "root").mkdir()
    return tmp_path / "root"


async def nothing(kind: str, name: str) -> Obj | None:
    return None
