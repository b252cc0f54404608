"""kapply.controller.confine: a tool's process, between fork and exec, dies with its parent and enters the namespaces
it is given. This machine allows both (the tests run as root, or with unprivileged user namespaces)."""

from __future__ import annotations

import subprocess
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
