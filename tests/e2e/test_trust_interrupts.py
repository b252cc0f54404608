"""A deploy interrupted half-way (SIGTERM: a CI job cancelled, a pod stopping, `timeout`; SIGINT: Ctrl-C) releases the
app at once and records its app-change as finished and failed, beyond kapp (which leaves the change unfinished): the
next deploy of the app goes ahead at once, and the history says the interrupted one failed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap

from tests.e2e.harness import Cluster, KapplyRunner

# A change that never completes: a `kapp.k14s.io/exists` Namespace that nobody creates (retried until --apply-timeout)
STUCK = """
apiVersion: v1
kind: ConfigMap
metadata: {name: fine}
data: {k: v}
---
apiVersion: v1
kind: Namespace
metadata:
  name: never-created-by-anyone
  annotations: {kapp.k14s.io/exists: ""}
"""
FINE = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\ndata: {k: w}\n"


def interrupted(cluster: Cluster, namespace: str, signum: int) -> tuple[subprocess.CompletedProcess[str], float]:
    """The stuck deploy, sent `signum` once it is retrying; its result and how long it took to end after the signal."""
    process = subprocess.Popen(
        [sys.executable, "-m", "kapply", "deploy", "-a", "app", "-n", namespace, "-f", "-", "-y"],
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    process.stdin.write(STUCK)
    process.stdin.close()
    seen: list[str] = []
    retrying = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            seen.append(line)
            if "Retryable error" in line:
                retrying.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if not retrying.wait(60):
        process.kill()
        pytest.fail("the deploy did not get to retrying:\n" + "".join(seen) + process.stderr.read())
    process.send_signal(signum)
    sent = time.monotonic()
    try:
        code = process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("the deploy did not end within 30 s of the signal")
    took = time.monotonic() - sent
    reader.join(5)
    return subprocess.CompletedProcess(process.args, code, "".join(seen), process.stderr.read()), took


@pytest.mark.parametrize(
    ("signum", "status", "word"), [(signal.SIGTERM, 143, "Terminated"), (signal.SIGINT, 130, "Interrupted")]
)
def test_an_interrupted_deploy_releases_the_app_and_records_its_failure(
    cluster: Cluster, kube: Client, kapply: KapplyRunner, namespace: str, signum: int, status: int, word: str
):
    result, took = interrupted(cluster, namespace, signum)
    assert result.returncode == status, result.stdout + result.stderr
    assert result.stderr.strip().endswith(f"kapply: Error: {word} (changes applied so far stay applied)")
    assert "Traceback" not in result.stderr
    assert took < 15
    record = kube.get(ConfigMap, "app", namespace=namespace)
    assert "kapply.dev/deploy-lock" not in (record.metadata.annotations or {})
    last = json.loads(record.data["spec"])["lastChange"]
    assert last["successful"] is False and not last["finishedAt"].startswith("0001-")
    changes = [cm for cm in kube.list(ConfigMap, namespace=namespace) if cm.metadata.name.startswith("app-change-")]
    assert len(changes) == 1
    spec = json.loads(changes[0].data["spec"])
    assert spec["successful"] is False and not spec["finishedAt"].startswith("0001-")
    started = time.monotonic()
    kapply.deploy(namespace, FINE, app="app")  # not held: goes ahead at once
    assert time.monotonic() - started < 30
    listed = kapply("app-change", "list", "-a", "app", "-n", namespace)
    assert listed.returncode == 0 and "false" in listed.stdout and "true" in listed.stdout, listed.stdout


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_an_interrupt_at_the_question_ends_the_deploy_at_once(
    cluster: Cluster, kube: Client, namespace: str, tmp_path: Path, signum: int, status: int
):
    """`Continue? [yN]:` waits on a blocking read: the signal still ends the command there, with nothing applied."""
    manifest = tmp_path / "fine.yml"
    manifest.write_text(FINE)
    process = subprocess.Popen(
        [sys.executable, "-m", "kapply", "deploy", "-a", "app", "-n", namespace, "-f", str(manifest)],
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
        stdin=subprocess.PIPE,  # left open: the question gets no answer
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    buffered = b""
    deadline = time.monotonic() + 60
    try:
        while b"Continue? [yN]:" not in buffered:
            assert time.monotonic() < deadline and process.poll() is None, buffered
            buffered += os.read(process.stdout.fileno(), 4096)
        process.send_signal(signum)
        assert process.wait(timeout=10) == status
    finally:
        process.kill()
        process.wait()
    assert [cm.metadata.name for cm in kube.list(ConfigMap, namespace=namespace)] == ["kube-root-ca.crt"]
