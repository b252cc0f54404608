"""The controller's tools run with an allow-listed environment (no kubeconfig, no credentials, proxies without their
passwords), an empty temporary HOME, bounded output and time, and die with their children when stopped. The tool
here is a shell script named by $KAPPLY_YTT (tmp_path only)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from kapply.controller import runner
from kapply.controller.runner import ToolError, environment, run, without_userinfo


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://user:secret@proxy.corp:3128", "http://proxy.corp:3128"),
        ("http://user:p%40ss@word@proxy.corp:3128/", "http://proxy.corp:3128/"),
        ("socks5://user@proxy:1080", "socks5://proxy:1080"),
        ("user:secret@proxy:3128", "proxy:3128"),
        ("http://proxy.corp:3128", "http://proxy.corp:3128"),
        ("proxy.corp:3128", "proxy.corp:3128"),
    ],
)
def test_proxies_lose_their_user_and_password(url: str, expected: str):
    assert without_userinfo(url) == expected


def test_the_environment_is_an_allow_list():
    inherited = {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TZ": "UTC",
        "HOME": "/root",
        "KUBECONFIG": "/root/.kube/config",
        "KAPP_KUBECONFIG": "/x",
        "KAPPLY_YTT": "/usr/bin/ytt",
        "AWS_SECRET_ACCESS_KEY": "s",
        "GOOGLE_APPLICATION_CREDENTIALS": "/c.json",
        "SSH_AUTH_SOCK": "/tmp/agent",
        "GIT_DIR": "/elsewhere",
        "GIT_CONFIG_PARAMETERS": "'core.sshCommand'='x'",
        "HTTPS_PROXY": "http://me:secret@proxy:3128",
        "http_proxy": "http://me:secret@proxy:3128",
        "NO_PROXY": "10.0.0.0/8",
        "KUBERNETES_SERVICE_HOST": "10.0.0.1",
    }
    assert environment(inherited, "/tmp/home", {"GIT_TERMINAL_PROMPT": "0"}) == {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TZ": "UTC",
        "HOME": "/tmp/home",
        "HTTPS_PROXY": "http://proxy:3128",
        "http_proxy": "http://proxy:3128",
        "NO_PROXY": "10.0.0.0/8",
        "GIT_TERMINAL_PROMPT": "0",
    }


@pytest.fixture
def tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write the shell script `ytt` runs."""

    def write(body: str) -> Path:
        script = tmp_path / "tool.sh"
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
        monkeypatch.setenv("KAPPLY_YTT", str(script))
        return script

    return write


def test_a_tool_runs_in_its_directory_with_an_empty_temporary_home(
    tool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    monkeypatch.setenv("HTTPS_PROXY", "http://me:secret@proxy:3128")
    tool('pwd; echo "$HOME"; ls -A "$HOME" | wc -l; echo "kubeconfig=$KUBECONFIG"; echo "$HTTPS_PROXY"; cat')
    (tmp_path / "work").mkdir()
    ran = asyncio.run(run("ytt", cwd=tmp_path / "work", stdin="from stdin"))
    cwd, home, entries, kubeconfig, proxy, stdin = ran.stdout.splitlines()
    assert cwd == str(tmp_path / "work")
    assert home != str(Path.home()) and entries.strip() == "0" and not Path(home).exists()  # removed afterwards
    assert (kubeconfig, proxy, stdin) == ("kubeconfig=", "http://proxy:3128", "from stdin")


def test_a_tool_that_prints_too_much_is_killed(tool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(runner, "MAX_STDOUT", 1000)
    tool("while true; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done")
    started = time.monotonic()
    with pytest.raises(ToolError) as error:
        asyncio.run(run("ytt", cwd=tmp_path))
    assert str(error.value) == "ytt printed more than 1000 bytes: stopped"
    assert time.monotonic() - started < 10


def test_only_the_tail_of_stderr_is_kept(tool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(runner, "MAX_STDERR", 100)
    tool('i=0; while [ $i -lt 100 ]; do echo "line $i" >&2; i=$((i+1)); done; exit 3')
    with pytest.raises(ToolError) as error:
        asyncio.run(run("ytt", cwd=tmp_path))
    assert str(error.value) == "ytt failed (exit status 3)" and error.value.exit_code == 3
    cut, _, tail = error.value.stderr.partition("\n")
    assert cut == "(earlier output cut)" and len(tail) <= 100 and tail.endswith("line 99")
    assert "line 0\n" not in error.value.stderr


def test_a_tool_that_does_not_read_its_input_fails_without_hanging(tool, tmp_path: Path):
    tool("echo no >&2; exit 2")
    with pytest.raises(ToolError, match=r"exit status 2") as error:
        asyncio.run(run("ytt", cwd=tmp_path, stdin="x" * (8 << 20)))
    assert error.value.stderr == "no"


def test_at_its_time_limit_a_tool_and_its_children_are_killed(tool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(runner, "TIMEOUT", 0.5)
    marker = tmp_path / "child-survived"
    tool(f"(sleep 1; touch {marker}) & sleep 30")
    with pytest.raises(ToolError, match=r"ytt did not finish in 0s"):
        asyncio.run(run("ytt", cwd=tmp_path))
    time.sleep(1.5)
    assert not marker.exists()


def test_a_cancelled_run_kills_the_tool_and_its_children(tool, tmp_path: Path):
    marker = tmp_path / "child-survived"
    tool(f"(sleep 1; touch {marker}) & sleep 30")

    async def cancel() -> None:
        task = asyncio.ensure_future(run("ytt", cwd=tmp_path))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel())
    time.sleep(1.5)
    assert not marker.exists()


def test_a_missing_tool_is_a_tool_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KAPPLY_YTT", str(tmp_path / "nothing"))
    with pytest.raises(ToolError, match=r"ytt is not available: \$KAPPLY_YTT names"):
        asyncio.run(run("ytt", cwd=tmp_path))
