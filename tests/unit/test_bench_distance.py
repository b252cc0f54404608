"""bench/sidebyside.py and bench/report.py at a distance: `--rtt`, the kubeconfig that points the tools at the
delaying proxy, and results.md's tables of every RTT side by side with the round trips on the critical path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench import report, sidebyside


def test_rtt_takes_a_list_of_milliseconds_and_defaults_to_loopback() -> None:
    assert sidebyside.parse_args([]).rtt == [0]
    assert sidebyside.parse_args(["--rtt", "0,20 50"]).rtt == [0, 20, 50]
    with pytest.raises(SystemExit):
        sidebyside.parse_args(["--rtt", "-5"])


def test_the_proxied_kubeconfig_changes_only_the_servers_port(tmp_path: Path) -> None:
    doc = {
        "clusters": [
            {"name": "bench", "cluster": {"server": "https://127.0.0.1:43319", "certificate-authority-data": "Q0E="}}
        ],
        "users": [{"name": "bench", "user": {"token": "t"}}],
    }
    source = tmp_path / "bench.kubeconfig"
    source.write_text(json.dumps(doc))
    out = sidebyside.via_proxy(source, tmp_path / "proxied.kubeconfig", 5555)
    proxied = json.loads(out.read_text())
    assert proxied["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:5555"
    proxied["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:43319"
    assert proxied == doc
    assert out.stat().st_mode & 0o777 == 0o600  # it holds the bench account's token


def _run(tool: str, step: str, rtt: int, wall: float, trips: int = 0) -> dict[str, Any]:
    return {
        "workload": "mix-100",
        "kind": "mix",
        "n": 100,
        "tool": tool,
        "rep": 0,
        "position": 0,
        "step": step,
        "ok": True,
        "exit_code": 0,
        "wall_s": wall,
        "cpu_user_s": 0.1,
        "cpu_sys_s": 0.1,
        "max_rss_kb": 40 * 1024,
        "namespace": "ns",
        "argv": [],
        "requests": {"client": {"LIST": 4, "GET": 2}, "dry_run": {}, "server": {"LIST": 4}, "detail": []},
        "error": "",
        "rtt_ms": rtt,
        "path": {"round_trips": trips, "flights": trips + 3, "connections": 4} if rtt else {},
    }


def test_results_md_puts_every_rtt_side_by_side_with_the_round_trips() -> None:
    runs = [
        _run("kapp", "noop", 0, 0.2),
        _run("kapply", "noop", 0, 0.3),
        _run("kapp", "noop", 20, 0.4, trips=10),
        _run("kapply", "noop", 20, 0.4, trips=5),
    ]
    doc = {
        "meta": {
            "started": "2026-12-05T07:00:00+00:00",
            "machine": {"cpu": "Xeon", "cores": 2, "memory_gb": 23.5, "os": "Debian 12"},
            "versions": {},
            "config": {"repeat": 1, "deploy_flags": ["-y"]},
        },
        "runs": runs,
    }
    text = report.render(doc)
    assert "| no-change redeploy | 0.20 / 0.30 | 1.50 | 0.40 / 0.40 | 1.00 | 10 / 5 | 10 / 5 |" in text
    assert "### mix-100 over loopback" in text and "### mix-100 at 20 ms RTT" in text
    at_20 = text.split("### mix-100 at 20 ms RTT")[1]
    assert "round trips on the critical path | client flights | connections |" in at_20
    assert "| no-change redeploy | kapply | 6 | 4 | 2 | 0 | 4 | 5 | 8 | 4 |" in at_20
    loopback = text.split("### mix-100 over loopback")[1].split("###")[0]
    assert "round trips on the critical path" not in loopback


def test_a_results_json_from_before_rtt_renders_as_loopback() -> None:
    run = _run("kapply", "noop", 0, 0.3)
    del run["rtt_ms"], run["path"]
    assert report.select([run], workload="mix-100", tool="kapply", step="noop") == [run]
    assert "###" not in report.render(
        {
            "meta": {
                "started": "x",
                "machine": {"cpu": "c", "cores": 2, "memory_gb": 1.0, "os": "o"},
                "versions": {},
                "config": {"repeat": 1, "deploy_flags": []},
            },
            "runs": [run],
        }
    )
