"""kapply.controller.confine: a tool's process, between fork and exec, dies with its parent and enters the namespaces
it is given. This machine allows both (the tests run as root, or with unprivileged user namespaces)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from kapply.controller import confine
from kapply.controller.confine import Confinement


@pytest.mark.parametrize("confinement", list(Confinement))
def test_this_machine_allows_each_confinement(confinement: Confinement):
    assert confine.probe(confinement)


def run(confinements: frozenset[Confinement], job: Path, script: str) -> str:
    (job / confine.VIEW).mkdir(exist_ok=True)
    ran = subprocess.run(
        ["/bin/sh", "-c", script],
        cwd=job,
        preexec_fn=confine.start(confinements, "/bin/sh", str(job)),
        capture_output=True,
        text=True,
        check=True,
    )
    return ran.stdout


def test_a_viewed_tool_sees_the_system_its_job_and_nothing_else(tmp_path: Path):
    job = tmp_path / "job"
    job.mkdir()
    (job / "mine.txt").write_text("mine")
    (tmp_path / "canary.txt").write_text("CANARY")
    seen = run(
        frozenset({Confinement.FILES}),
        job,
        f"pwd; cat mine.txt; echo; cat {tmp_path}/canary.txt 2>/dev/null || echo unseen; touch new.txt;"
        " ls /usr/bin/env; touch /usr/x 2>/dev/null || echo read-only",
    )
    assert seen.splitlines() == [str(job), "mine", "unseen", "/usr/bin/env", "read-only"]
    assert (job / "new.txt").exists()  # the job's directory is the machine's own, writable


def test_without_confinements_a_tool_sees_the_machine(tmp_path: Path):
    (tmp_path / "canary.txt").write_text("CANARY")
    assert run(frozenset(), tmp_path, f"cat {tmp_path}/canary.txt") == "CANARY"


def test_a_tool_without_network_cannot_reach_the_loopback(tmp_path: Path):
    script = (
        "/usr/bin/python3 -c \"import socket; socket.create_connection(('127.0.0.1', 1), timeout=2)\" 2>&1 | tail -1"
    )
    assert "Network is unreachable" in run(frozenset({Confinement.NETWORK}), tmp_path, script)
    assert "Connection refused" in run(frozenset(), tmp_path, script)


def in_fetch_view(job: Path, check: Callable[[], list[str]]) -> list[str]:
    """What `check` returns in a child process that entered its fetch view for `job` (then left its network)."""
    (job / confine.VIEW).mkdir(exist_ok=True)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.chdir(job)
            confine.enter_fetch_view([], str(job))
            seen = check()
            confine.leave_network(frozenset({Confinement.NETWORK}))
            seen += ["--left--", *check()]
            os.write(write, json.dumps(seen).encode())
        except BaseException as e:  # noqa: BLE001 (said in the parent, which fails on it)
            os.write(write, json.dumps([f"failed: {e!r}"]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        output = pipe.read()
    os.waitpid(pid, 0)
    return list(json.loads(output))


def test_a_fetcher_sees_its_job_the_system_and_what_it_needs_of_etc_and_then_neither_etc_nor_the_network(
    tmp_path: Path,
):
    job = tmp_path / "job"
    job.mkdir()
    canary = tmp_path / "canary.txt"
    canary.write_text("CANARY")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def check() -> list[str]:
        seen = ["canary seen" if canary.exists() else "canary unseen", *sorted(os.listdir("/"))]
        seen.append("hosts: " + ("readable" if os.access("/etc/hosts", os.R_OK) else "absent"))
        seen.append("certificates: " + ("readable" if os.path.isdir("/etc/ssl/certs") else "absent"))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            seen.append("network: reached")
        except OSError as e:
            seen.append(f"network: {e.strerror}")
        (job / "written.txt").write_text("fetched")
        return seen

    with listener:
        fetching, _, templating = "|".join(in_fetch_view(job, check)).partition("|--left--|")
    assert fetching.split("|")[0] == "canary unseen" and "CANARY" not in fetching
    # At the top: the system's directories, the devices, /etc, /tmp, and those leading to Python's files and the job.
    tops = {p.split("/")[1] for p in (*confine.SYSTEM, *confine.python_files(), str(job)) if os.path.exists(p)}
    assert {p for p in fetching.split("|") if p.isidentifier()} == tops | {"dev", "etc", "tmp"}
    assert "hosts: readable" in fetching and "certificates: readable" in fetching and "network: reached" in fetching
    assert templating.split("|")[0] == "canary unseen"
    assert "etc" not in templating.split("|") and "hosts: absent" in templating
    assert "certificates: absent" in templating and "network: Network is unreachable" in templating
    assert (job / "written.txt").read_text() == "fetched"  # the job's directory is the machine's own, writable
