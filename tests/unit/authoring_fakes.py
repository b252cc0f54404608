"""What the unit tests of kctrl's authoring commands share (test_app_init.py, test_package_authoring.py,
test_package_authoring_helm.py): a command run with its questions answered on stdin, the spec kctrl 0.53 builds an app
from after the answers `1` (Local Directory) and `config`."""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable

import pytest

from kapply.cli.main import run

# An AppBuild's spec; a PackageBuild's `spec.template.spec`
BUILT_APP_SPEC = """app:
  spec:
    deploy:
    - kapp: {}
    template:
    - ytt:
        paths:
        - config
    - kbld: {}
export:
- includePaths:
  - config
"""

Answered = Callable[..., tuple[int, str, str]]


def built_app_spec(indent: int) -> str:
    return textwrap.indent(BUILT_APP_SPEC, " " * indent)


def answering(command: str) -> Answered:
    """`kapply COMMAND ...` as `kapply(monkeypatch, capsys, stdin, *argv)`: `stdin` answers its questions; its exit
    code, stdout and stderr."""

    def kapply(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stdin: str, *argv: str
    ) -> tuple[int, str, str]:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = run([command, *argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return kapply
