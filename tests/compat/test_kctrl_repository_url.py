"""`package repository add --url` read as kctrl 0.53 reads it (issue 31): every `--url` is an OCI reference parsed
with go-containerregistry's weak validation, so `https://carvel.dev` is taken (the repository is made and fails at
fetch) and what kctrl cannot parse is refused in its words. Both tools print the PackageRepository with `--dry-run`
(no cluster, no controller: a kubeconfig naming nothing that answers); the `spec` they print, or their refusal, must
be the same. kapply's own sources (a `.git` URL, an http archive) are not compared."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.harness import external_tool

pytestmark = pytest.mark.compat

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none, namespace: urls}}]
current-context: none
"""
URLS = (
    "https://carvel.dev",  # registry `https:`, repository `/carvel.dev`
    "https://carvel.dev:1.0",  # ... with a tag
    "reg.io/p/repo",  # no tag: tagSelection
    "Reg.io/repo:latest",  # `latest` written: no tagSelection
    "carvel.dev/x:1.0",  # a repository of one character: refused
    "x/y:bad@tag",  # neither a tag nor a digest reference
    "Foo/bar",  # upper case in the repository
)


@pytest.fixture(scope="module")
def kctrl() -> Path:
    return external_tool("kctrl", "KAPPLY_KCTRL")


def dry_run(command: list[str], kubeconfig: Path, url: str) -> tuple[int, object]:
    """The exit status, and the printed spec or the error (after `<tool>: Error: `, its lines joined)."""
    args = ["package", "repository", "add", "-r", "r", "--url", url, "-n", "urls", "--dry-run", "--tty=false"]
    done = subprocess.run(
        [*command, *args, "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KAPP_KUBECONFIG": "", "KCTRL_KUBECONFIG": ""},
    )
    if done.returncode == 0:
        return 0, (yaml.safe_load(done.stdout) or {}).get("spec")
    return done.returncode, " ".join(done.stderr.split()).partition("Error: ")[2]


@pytest.mark.parametrize("url", URLS)
def test_a_repository_url_is_parsed_as_kctrl_parses_it(kctrl: Path, tmp_path: Path, url: str) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    theirs = dry_run([str(kctrl)], kubeconfig, url)
    ours = dry_run([sys.executable, "-m", "kapply"], kubeconfig, url)
    assert ours == theirs
