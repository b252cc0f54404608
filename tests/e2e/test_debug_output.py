"""`--debug` on any command: every request to the API server on stderr (method, path, status, duration), kapp's
`<time>: debug: ` before each; stdout as without the flag, and no Secret value in the lines."""

from __future__ import annotations

import re

import pytest

from tests.e2e.harness import KapplyRunner

pytestmark = pytest.mark.e2e

SECRET = """
apiVersion: v1
kind: Secret
metadata:
  name: token
stringData:
  token: debug-s3cr3t
"""
LINE = re.compile(
    r"^\d\d:\d\d:\d\d[AP]M: debug: (GET|POST|PUT|PATCH|DELETE) (/\S+): (\d{3}) \((\d+\.\d{3}s|streamed)\)$"
)


def without_ages(table: str) -> str:
    """The table with its Age cells (`0s`, `1s`, ...: the two runs are a second apart at times) blanked."""
    return re.sub(r"\t\d+[smhd]\t", "\tAGE\t", table)


def test_debug_prints_every_request_and_nothing_else_changes(kapply: KapplyRunner, namespace: str) -> None:
    kapply.deploy(namespace, SECRET, "--debug", app="debugged")
    quiet = kapply("inspect", "-a", "debugged", "-n", namespace, "--tty=false")
    loud = kapply("inspect", "-a", "debugged", "-n", namespace, "--tty=false", "--debug")
    assert quiet.returncode == loud.returncode == 0, loud.stderr
    assert without_ages(loud.stdout) == without_ages(quiet.stdout) and quiet.stderr == ""
    lines = loud.stderr.splitlines()
    assert lines and all(LINE.match(line) for line in lines), loud.stderr
    paths = [LINE.match(line).group(2) for line in lines]  # type: ignore[union-attr]
    assert f"/api/v1/namespaces/{namespace}/configmaps/debugged" in paths  # the app's record


def test_debug_lines_name_no_secret_value(kapply: KapplyRunner, namespace: str) -> None:
    result = kapply.deploy(namespace, SECRET, "--debug", app="debugged")
    assert "debug: POST" in result.stderr or "debug: PATCH" in result.stderr, result.stderr
    assert "debug-s3cr3t" not in result.stderr + result.stdout
