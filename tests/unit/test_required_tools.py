"""`KAPPLY_REQUIRE_TOOLS=1` (.ci/run sets it): a test whose kapp or ytt is nowhere fails instead of being skipped
(tests/e2e/harness.py's external_tool, through which the compat and e2e tests find the real tools)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import REQUIRE_TOOLS, external_tool

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def nowhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """kapp neither named by $KAPPLY_KAPP nor on PATH."""
    monkeypatch.delenv("KAPPLY_KAPP", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))


def test_a_tool_that_is_nowhere_skips_the_test_by_default(nowhere: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_TOOLS, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"kapp is not on PATH and \$KAPPLY_KAPP is not set"):
        external_tool("kapp", "KAPPLY_KAPP")


def test_a_tool_that_is_nowhere_fails_the_test_when_tools_are_required(
    nowhere: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REQUIRE_TOOLS, "1")
    with pytest.raises(pytest.fail.Exception, match=r"KAPPLY_REQUIRE_TOOLS=1: a missing tool is a failure"):
        external_tool("kapp", "KAPPLY_KAPP")


def test_a_test_run_with_tools_required_reports_the_missing_tool_as_a_failure(tmp_path: Path) -> None:
    """As CI runs it: pytest says `failed`, not `skipped`, for a test whose $KAPPLY_YTT names a missing file or whose
    kapp is nowhere."""
    (tmp_path / "test_tools.py").write_text(
        "from tests.e2e.harness import external_tool\n\n\n"
        "def test_kapp():\n    external_tool('kapp', 'KAPPLY_KAPP')\n\n\n"
        "def test_ytt():\n    external_tool('ytt', 'KAPPLY_YTT')\n"
    )
    env = {
        **{k: v for k, v in os.environ.items() if k != "KAPPLY_KAPP"},
        "PATH": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "KAPPLY_YTT": str(tmp_path / "no-ytt"),
        REQUIRE_TOOLS: "1",
    }
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs", str(tmp_path / "test_tools.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 failed" in run.stdout and "skipped" not in run.stdout, run.stdout
    assert "kapp is not on PATH" in run.stdout and "no-ytt, which is not an executable file" in run.stdout
