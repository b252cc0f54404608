"""The side-by-side benchmark (bench/sidebyside.py) end to end, tiny: 10 resources of the mix, one repetition, both
tools, every step, on the test cluster, through the delaying proxy at 5 ms RTT. It measures nothing worth keeping; it
shows the harness works: every step ran and succeeded through the proxy, its requests were counted by the API server
and its round trips by the proxy, and results.json and results.md were written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench import sidebyside
from bench.report import STEPS

from tests.e2e.harness import Cluster, external_tool

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(120)
def test_a_tiny_side_by_side_run_writes_its_results(cluster: Cluster, tmp_path: Path) -> None:
    kapp = external_tool("kapp", "KAPPLY_KAPP")
    code = sidebyside.main(
        [
            "--sizes=10",
            "--deployments=",
            "--crs=",
            "--repeat=1",
            "--settle=0",
            "--rtt=5",
            f"--kapp={kapp}",
            f"--kubeconfig={cluster.kubeconfig}",
            f"--out={tmp_path}",
            "--note=e2e smoke run",
        ]
    )
    doc = json.loads((tmp_path / "results.json").read_text())
    failed = [(r["tool"], r["step"], r["error"]) for r in doc["runs"] if not r["ok"]]
    assert code == 0, (failed, doc["meta"].get("harness_errors"))
    assert sorted((r["tool"], r["step"]) for r in doc["runs"]) == sorted(
        (tool, step) for tool in ("kapp", "kapply") for step in STEPS
    )
    for run in doc["runs"]:
        client = run["requests"]["client"]
        assert sum(client.values()) > 0, run
        assert client.get("LIST", 0) > 0, run  # both tools list the app's resources at every step
        assert run["wall_s"] > 0 and run["max_rss_kb"] > 0, run
        assert run["rtt_ms"] == 5, run
        # at least a TCP connect, a TLS handshake and a request, one after another
        assert run["path"]["round_trips"] >= 3 and run["path"]["connections"] >= 1, run
    creates = {r["tool"]: r["requests"]["client"].get("POST", 0) for r in doc["runs"] if r["step"] == "deploy"}
    assert all(n >= 10 for n in creates.values()), creates  # at least one create per resource
    text = (tmp_path / "results.md").read_text()
    assert "e2e smoke run" in text
    assert "## mix-10" in text
    assert "kapply/kapp" in text
    assert "### mix-10 at 5 ms RTT" in text
    assert "round trips on the critical path" in text
