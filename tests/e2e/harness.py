"""Helpers for e2e tests: the cluster under test, a client for it, and polling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client, KubeConfig


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path
    restricted_kubeconfig: Path | None
    restricted_namespace: str | None


def client_for(kubeconfig: Path, namespace: str | None = None) -> Client:
    return Client(KubeConfig.from_file(kubeconfig), namespace=namespace, field_manager="kapply-tests")


def eventually(
    check: Callable[[], object], timeout: float = 60, interval: float | None = None, what: str = "condition"
) -> object:
    """Poll `check` until it returns something truthy; fail with `what` after `timeout`.

    Every `interval` seconds; by default as often as the check's cost allows (`poll_pause`): a wait of the suite's
    many ends, on average, half a pause after what it waits for, and a fixed half second was minutes in all."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        started = time.monotonic()
        last = check()
        if last:
            return last
        time.sleep(poll_pause(time.monotonic() - started) if interval is None else interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def poll_pause(check_seconds: float) -> float:
    """The pause after a check that took `check_seconds`: 0.1 s after a cheap one (a GET), four times the check's
    own time after a costly one (a CLI run), so that polling keeps to a fifth of a core, and at most 0.5 s."""
    return min(0.5, max(0.1, 4 * check_seconds))


# Set to 1 (.ci/run does): a test whose external tool (kapp, ytt, ...) is nowhere fails instead of being skipped, so
# that CI cannot pass with the differential tests silently left out.
REQUIRE_TOOLS = "KAPPLY_REQUIRE_TOOLS"


def external_tool(name: str, env_var: str) -> Path:
    """The real `kapp` or `ytt`: the path `$<env_var>` names (a missing file there fails the test: it was told where
    the tool is), else the one on PATH; skips the test when neither names one, or fails it under
    `$KAPPLY_REQUIRE_TOOLS=1`."""
    import os
    import shutil

    named = os.environ.get(env_var)
    if named:
        path = Path(named)
        if not (path.is_file() and os.access(path, os.X_OK)):
            pytest.fail(f"${env_var} names {named}, which is not an executable file")
        return path
    found = shutil.which(name)
    if found is None:
        reason = f"{name} is not on PATH and ${env_var} is not set"
        if os.environ.get(REQUIRE_TOOLS) == "1":
            pytest.fail(f"{reason} (${REQUIRE_TOOLS}=1: a missing tool is a failure)")
        pytest.skip(reason)
    return Path(found)


KappRun = Callable[..., subprocess.CompletedProcess[str]]  # the real kapp's arguments (and `input=`, its stdin)


def real_kapp(kubeconfig: Path) -> KappRun:
    """Run the real kapp (external_tool's) against the cluster of `kubeconfig`."""
    binary = external_tool("kapp", "KAPPLY_KAPP")

    def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        return subprocess.run([str(binary), *args], input=input, env=env, capture_output=True, text=True, timeout=240)

    return run


WAIT_INTERVAL = "--wait-check-interval=0.2s"  # every e2e deploy polls 5 times a second rather than kapp's every 3 s


@dataclass(frozen=True)
class JsonTable:
    """One table of kapp's `--json` output: rows as {column key: value}."""

    content: str
    header: dict[str, str]
    rows: list[dict[str, str]]
    notes: list[str]

    def column(self, key: str) -> list[str]:
        return [row[key] for row in self.rows]


@dataclass(frozen=True)
class JsonOutput:
    tables: list[JsonTable]
    blocks: list[str]
    lines: list[str]

    def table(self, content: str = "") -> JsonTable:
        """The only table, or the one whose Content is `content`."""
        found = [t for t in self.tables if not content or t.content == content]
        assert len(found) == 1, f"expected one table {content!r}, got {[t.content for t in self.tables]}"
        return found[0]


def parse_json_output(stdout: str) -> JsonOutput:
    """kapp's `--json` document: `{"Tables": [...], "Blocks": [...], "Lines": [...]}`."""
    doc: dict[str, Any] = json.loads(stdout)
    tables = [
        JsonTable(t.get("Content", ""), t.get("Header", {}), t.get("Rows") or [], t.get("Notes") or [])
        for t in doc.get("Tables") or []
    ]
    return JsonOutput(tables, doc.get("Blocks") or [], doc.get("Lines") or [])


class KapplyRunner:
    """The kapply CLI run as a subprocess against the test cluster: `kapply(*args)` for any command, `deploy` for
    the common case, `json` for a command's parsed `--json` output."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig

    def __call__(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), **(env or {})}
        try:
            return subprocess.run(
                [sys.executable, "-m", "kapply", *args],
                input=input,
                env=full_env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as e:
            output = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            errors = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            pytest.fail(f"kapply {' '.join(args)} did not finish in {timeout}s; its output so far:\n{output}\n{errors}")

    def deploy(
        self,
        namespace: str | None,
        manifest: str,
        *args: str,
        app: str,
        check: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        """`kapply deploy -a APP [-n NS] -f - -y` of the manifest, polling every 0.2 s; with `check`, it must
        succeed."""
        where = ("-n", namespace) if namespace else ()
        result = self(
            "deploy",
            "-a",
            app,
            *where,
            "-f",
            "-",
            "-y",
            WAIT_INTERVAL,
            *args,
            input=manifest,
            env=env,
            timeout=timeout,
        )
        if check:
            assert result.returncode == 0, result.stdout + result.stderr
        return result

    def json(self, *args: str, input: str | None = None) -> JsonOutput:
        """A command's `--json` output, parsed; the command must succeed."""
        result = self(*args, "--json", input=input)
        assert result.returncode == 0, result.stdout + result.stderr
        return parse_json_output(result.stdout)
