"""Installed as a drop-in, under the name `kapp` (a link to the `kapply` program), kapply says `kapp` where kapp does:
its version (`kapp version <semver>`, for scripts that check it), its errors (`kapp: Error: ...`) and its usage
messages. Compared with the real kapp without the harness's normalising of the program name."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat

VERSION = re.compile(r"kapp version (\d+\.\d+\.\d+)(-[0-9A-Za-z.-]+)?")


@pytest.fixture
def drop_in(tmp_path: Path) -> Path:
    """`kapp`: a symbolic link to the `kapply` program, as a drop-in is installed."""
    program = Path(sys.executable).with_name("kapply")
    if not program.exists():
        found = shutil.which("kapply")
        assert found is not None, "the kapply program is not installed next to this Python nor on PATH"
        program = Path(found)
    link = tmp_path / "kapp"
    link.symlink_to(program)
    return link


def run(program: Path, both: Harness, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(both.kubeconfig)}
    env.pop("KAPP_NAMESPACE", None)
    return subprocess.run(
        [str(program), *(both.fill(a, "kapp") for a in args)], env=env, capture_output=True, text=True, timeout=120
    )


def versionless(text: str) -> str:
    return VERSION.sub("kapp version X", text)


def test_version_says_kapp_and_a_semver(both: Harness, drop_in: Path):
    for args in (["version"], ["version", "--tty"], ["version", "--json"]):
        kapp, kapply = run(both.kapp, both, *args), run(drop_in, both, *args)
        assert (kapply.returncode, versionless(kapply.stdout), kapply.stderr) == (
            kapp.returncode,
            versionless(kapp.stdout),
            kapp.stderr,
        ), args
    assert VERSION.fullmatch(run(drop_in, both, "version").stdout.strip())
    document = json.loads(run(drop_in, both, "version", "--json").stdout)
    assert VERSION.fullmatch(document["Blocks"][0].strip())


def test_errors_and_usage_say_kapp(both: Harness, drop_in: Path):
    for args in (
        ["deploy", "-a", "app", "-n", "{ns}"],
        ["deploy", "-a", "app", "-n", "{ns}", "extra", "-f", "-"],
        ["app-change"],
        [
            "deploy",
            "-a",
            "app",
            "-n",
            "no-such-namespace-x",
            "-f",
            "/dev/null",
            "--dangerous-allow-empty-list-of-resources",
        ],
    ):
        kapp, kapply = run(both.kapp, both, *args), run(drop_in, both, *args)
        expected = kapp.stderr
        if args == ["app-change"]:  # kapply's own subcommand (`rollback`, marked (kapply)) is listed after kapp's
            expected = expected.replace("garbage-collect, list\n", "garbage-collect, list, rollback\n")
        assert (kapply.returncode, kapply.stderr) == (kapp.returncode, expected), args
        assert kapply.stderr.startswith("kapp: Error: ")
    kapp, kapply = run(both.kapp, both, "deploy", "--help"), run(drop_in, both, "deploy", "--help")
    usage = kapp.stdout.split("\n\n")[1]
    assert usage == "Usage:\n  kapp deploy [flags]" and usage in kapply.stdout


def test_under_its_own_name_it_stays_kapply(both: Harness):
    result = both.run_one("kapply", ["version"])
    assert result.stdout.startswith("kapply version ")
