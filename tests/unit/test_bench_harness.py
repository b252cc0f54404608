"""The pure parts of the side-by-side benchmark (bench/): reading /metrics, the requests a step made by verb, median
and spread, the manifests, and the results.md rendering. No cluster."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from bench import metrics, report, sidebyside, workloads
from bench.identity import PREFIX, flow_schemas

SAMPLE_BEFORE = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, \
version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",\
subresource="",verb="LIST",version="v1"} 2489
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",\
subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="All",group="apps",resource="deployments",\
scope="resource",subresource="",verb="PUT",version="v1"} 3
apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/metrics",\
verb="GET",version=""} 40
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="leases",scope="resource",\
subresource="",verb="PUT",version="v1"} 1.5e+03
# HELP apiserver_flowcontrol_dispatched_requests_total [BETA] Number of requests executed by API Priority and Fairness
# TYPE apiserver_flowcontrol_dispatched_requests_total counter
apiserver_flowcontrol_dispatched_requests_total{flow_schema="exempt",priority_level="exempt"} 142400
apiserver_flowcontrol_dispatched_requests_total{flow_schema="kapply-bench-list",priority_level="exempt"} 7
apiserver_request_duration_seconds_bucket{verb="GET",le="0.005"} 99
apiserver_storage_objects{resource="configmaps"} 1200
"""

SAMPLE_AFTER = """\
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",\
subresource="",verb="LIST",version="v1"} 2492
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",\
subresource="",verb="POST",version="v1"} 110
apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",\
subresource="",verb="GET",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="All",group="apps",resource="deployments",\
scope="resource",subresource="",verb="PUT",version="v1"} 53
apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/metrics",\
verb="GET",version=""} 41
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="leases",scope="resource",\
subresource="",verb="PUT",version="v1"} 1504
apiserver_flowcontrol_dispatched_requests_total{flow_schema="exempt",priority_level="exempt"} 142900
apiserver_flowcontrol_dispatched_requests_total{flow_schema="kapply-bench-list",priority_level="exempt"} 10
apiserver_flowcontrol_dispatched_requests_total{flow_schema="kapply-bench-create",priority_level="exempt"} 100
apiserver_flowcontrol_dispatched_requests_total{flow_schema="kapply-bench-get",priority_level="exempt"} 100
apiserver_flowcontrol_dispatched_requests_total{flow_schema="kapply-bench-update",priority_level="exempt"} 50
apiserver_flowcontrol_dispatched_requests_total{flow_schema="kapply-bench-nonresource",priority_level="exempt"} 2
"""


# ---------------------------------------------------------------- /metrics


def test_parse_reads_only_the_request_counters_with_their_labels():
    samples = metrics.parse(SAMPLE_BEFORE)
    names = {name for name, _ in samples}
    assert names == {metrics.REQUESTS, metrics.DISPATCHED}
    series = next(s for s in samples if dict(s[1]).get("resource") == "leases")
    assert samples[series] == 1500.0
    assert dict(series[1]) == {
        "code": "200",
        "component": "apiserver",
        "dry_run": "",
        "group": "",
        "resource": "leases",
        "scope": "resource",
        "subresource": "",
        "verb": "PUT",
        "version": "v1",
    }


def test_parse_unescapes_label_values_and_skips_malformed_lines():
    text = (
        'apiserver_request_total{verb="GET",resource="a\\"b",subresource="x\\\\y"} 4\n'
        'apiserver_request_total{verb="GET"} not-a-number\n'
        "apiserver_request_total 9 1700000000000\n"
    )
    samples = metrics.parse(text, [metrics.REQUESTS])
    assert samples[(metrics.REQUESTS, (("resource", 'a"b'), ("subresource", "x\\y"), ("verb", "GET")))] == 4
    assert samples[(metrics.REQUESTS, ())] == 9  # a timestamp after the value is ignored
    assert len(samples) == 2


def test_delta_keeps_what_grew_and_treats_a_lower_value_as_a_reset():
    a = ("m", (("verb", "GET"),))
    b = ("m", (("verb", "LIST"),))
    c = ("m", (("verb", "PUT"),))
    new = ("m", (("verb", "POST"),))
    assert metrics.delta({a: 5, b: 7, c: 100}, {a: 5, b: 10, c: 3, new: 2}) == {b: 3, c: 3, new: 2}


def test_a_step_is_the_tools_requests_by_verb_plus_dry_runs_and_the_whole_server():
    step = metrics.step_requests(metrics.parse(SAMPLE_BEFORE), metrics.parse(SAMPLE_AFTER), PREFIX)
    # The tool's own, from its flow schemas only (the `exempt` schema, everyone else's, is not counted).
    assert step.client == {"LIST": 3, "POST": 100, "GET": 100, "PUT": 50, "DISCOVERY": 2}
    assert step.dry_run == {"PUT": 50}
    # Every client, the harness's own /metrics scrape excluded; the lease renewals are someone else's.
    assert step.server == {"LIST": 3, "POST": 100, "GET": 100, "PUT": 54}
    top = step.detail[0]
    assert (top.verb, top.resource, top.code, top.count) in {
        ("POST", "configmaps", "201", 100),
        ("GET", "configmaps", "404", 100),
    }
    assert sum(d.count for d in step.detail) == sum(step.server.values())


def test_detail_sums_series_that_differ_only_in_version_or_component():
    text_after = (
        'apiserver_request_total{verb="LIST",resource="hpa",version="v1",component="apiserver",code="200"} 2\n'
        'apiserver_request_total{verb="LIST",resource="hpa",version="v2",component="apiserver",code="200"} 3\n'
    )
    detail = metrics.server_detail(metrics.delta({}, metrics.parse(text_after)))
    assert [(d.verb, d.resource, d.count) for d in detail] == [("LIST", "hpa", 5)]


def test_every_flow_schema_maps_to_a_verb_and_matches_only_the_bench_service_account():
    for schema in flow_schemas():
        name = schema["metadata"]["name"]  # type: ignore[index]
        assert name.startswith(PREFIX)
        assert name[len(PREFIX) :] in metrics.CLIENT_VERBS
        spec = schema["spec"]
        assert spec["priorityLevelConfiguration"] == {"name": "exempt"}  # type: ignore[index]
        for rule in spec["rules"]:  # type: ignore[index]
            assert [s["kind"] for s in rule["subjects"]] == ["ServiceAccount"]


def test_verbs_are_ordered_discovery_reads_writes_then_the_unexpected():
    assert metrics.ordered_verbs({"ZZZ", "PATCH", "LIST", "DISCOVERY", "GET", "OTHER"}) == [
        "DISCOVERY",
        "LIST",
        "GET",
        "PATCH",
        "OTHER",
        "ZZZ",
    ]


# ---------------------------------------------------------------- statistics


def test_median_and_spread():
    s = report.spread([3.0, 1.0, 2.0, 10.0])
    assert s == report.Spread(median=2.5, low=1.0, high=10.0, count=4)
    assert report.fmt_spread(s) == "2.50 (1.00–10.00)"
    assert report.fmt_spread(report.spread([1.234])) == "1.23"  # one repetition: no spread to show
    assert report.fmt_spread(report.spread([40.0, 40.001])) == "40.00"  # none at this precision either
    assert report.spread([]) is None
    assert report.fmt_spread(None) == "-"


def test_ratio_is_kapply_over_kapp():
    assert report.ratio(report.spread([1.0]), report.spread([4.0])) == 0.25
    assert report.ratio(None, report.spread([4.0])) is None
    assert report.ratio(report.spread([1.0]), report.spread([0.0])) is None


# ---------------------------------------------------------------- manifests


def test_the_mix_is_80_10_10_and_the_change_touches_one_in_ten_with_the_same_mix():
    w = workloads.Workload("mix", 100)
    docs = w.documents()
    kinds = [d["kind"] for d in docs]
    assert (kinds.count("ConfigMap"), kinds.count("Secret"), kinds.count("Service")) == (80, 10, 10)
    changed = [d for d, c in zip(docs, w.documents(change=True), strict=True) if d != c]
    assert len(changed) == 10
    assert [d["kind"] for d in changed].count("ConfigMap") == 8
    assert {d["kind"] for d in changed} == {"ConfigMap", "Secret", "Service"}


@pytest.mark.parametrize("kind", workloads.KINDS)
def test_manifests_are_yaml_of_the_named_namespace(kind):
    w = workloads.Workload(kind, 20)
    docs = list(yaml.safe_load_all(workloads.for_namespace(w.manifest(change=True), "ns-1")))
    assert len(docs) == 20
    assert {d["metadata"]["namespace"] for d in docs} == {"ns-1"}
    assert len({(d["kind"], d["metadata"]["name"]) for d in docs}) == 20


def test_workloads_run_mix_then_deployments_then_custom_resources():
    names = [w.name for w in workloads.parse_workloads([100, 10], [50], [1000])]
    assert names == ["mix-100", "mix-10", "deploy-50", "crd-1000"]
    assert sidebyside.csv_ints("100,1000 5_000") == [100, 1000, 5000]
    assert sidebyside.csv_ints("") == []


# ---------------------------------------------------------------- the harness's pure helpers


def test_both_tools_get_the_same_command_line():
    flags = ["-y", "--tty=false", "--wait-check-interval=1s"]
    kapp = sidebyside.command(Path("/x/kapp"), "diff-run", "ns", Path("/m.yaml"), flags)
    kapply = sidebyside.command(Path("/y/kapply"), "diff-run", "ns", Path("/m.yaml"), flags)
    assert kapp[1:] == kapply[1:]
    assert kapp[1:] == ["deploy", "-a", "bench", "-n", "ns", "-f", "/m.yaml", *flags, "--diff-run"]
    assert sidebyside.command(Path("/x/kapp"), "delete", "ns", None, flags)[1:] == [
        "delete",
        "-a",
        "bench",
        "-n",
        "ns",
        *flags,
    ]


def test_a_tool_named_by_its_variable_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("KAPPLY_KAPP", str(tmp_path / "missing"))
    with pytest.raises(SystemExit, match="KAPPLY_KAPP names"):
        sidebyside.find_tool("kapp", None, "KAPPLY_KAPP")
    monkeypatch.delenv("KAPPLY_KAPP")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SystemExit, match="kapp not found"):
        sidebyside.find_tool("kapp", None, "KAPPLY_KAPP")


def test_run_measured_reports_the_childs_exit_cpu_and_memory():
    code = "import sys; x = bytearray(60 * 1024 * 1024); sum(range(10**6)); print('bye', file=sys.stderr); sys.exit(3)"
    proc = sidebyside.run_measured([sys.executable, "-c", code], {}, timeout=60)
    assert proc.exit_code == 3
    assert proc.output_tail == "bye"
    assert 60 * 1024 < proc.max_rss_kb < 120 * 1024
    assert proc.cpu_user_s + proc.cpu_sys_s > 0
    assert proc.wall_s >= proc.cpu_user_s * 0.5


def test_peak_rss_is_the_tools_own_not_the_harness_at_spawn_time():
    ballast = bytearray(150 * 1024 * 1024)
    for i in range(0, len(ballast), 4096):  # touch every page: the harness is now above 150 MB
        ballast[i] = 1
    proc = sidebyside.run_measured(["/bin/true"], {"PATH": "/usr/bin:/bin"}, timeout=60)
    assert proc.exit_code == 0
    assert proc.max_rss_kb < 50 * 1024  # spawned straight from here, it would report the 150 MB
    del ballast


def test_a_tool_past_its_timeout_is_stopped_and_reported():
    proc = sidebyside.run_measured([sys.executable, "-c", "import time; time.sleep(30)"], {}, timeout=0.5)
    assert proc.timed_out
    assert proc.exit_code != 0


# ---------------------------------------------------------------- results.md


def _run(tool: str, step: str, rep: int, wall: float, *, ok: bool = True, client: dict[str, int] | None = None) -> dict:
    return {
        "workload": "mix-100",
        "kind": "mix",
        "n": 100,
        "tool": tool,
        "rep": rep,
        "position": 0,
        "step": step,
        "ok": ok,
        "exit_code": 0 if ok else 1,
        "wall_s": wall,
        "cpu_user_s": wall / 2,
        "cpu_sys_s": 0.1,
        "max_rss_kb": 40 * 1024,
        "namespace": "ns",
        "argv": [],
        "requests": {"client": client or {"LIST": 5, "PUT": 1}, "dry_run": {}, "server": {"LIST": 9}, "detail": []},
        "error": "" if ok else "kapp: Error: boom",
    }


def _doc(runs: list[dict]) -> dict:
    return {
        "meta": {
            "note": "smoke run",
            "started": "2026-11-23T20:00:00+00:00",
            "finished": "2026-11-23T20:01:00+00:00",
            "machine": {"cpu": "AMD EPYC", "cores": 2, "memory_gb": 23.5, "os": "Debian 12"},
            "versions": {"kapp": "kapp version 0.60.0", "kapply": "kapply version 0.1.0", "kubernetes": "v1.34.4"},
            "config": {"repeat": 3, "deploy_flags": ["-y", "--tty=false", "--wait-check-interval=1s"]},
        },
        "runs": runs,
    }


def test_results_md_has_medians_spreads_ratios_requests_and_failures():
    runs = [_run("kapp", "deploy", r, w) for r, w in enumerate([2.0, 4.0, 3.0])]
    runs += [_run("kapply", "deploy", r, w, client={"LIST": 2, "POST": 100}) for r, w in enumerate([1.0, 1.5, 1.2])]
    runs += [_run("kapp", "noop", 0, 1.0), _run("kapply", "noop", 0, 0.5, ok=False)]
    text = report.render(_doc(runs))
    assert "> **smoke run**" in text
    assert "AMD EPYC, 2 cores, 23.5 GB memory, Debian 12" in text
    assert "`-y --tty=false --wait-check-interval=1s`" in text
    row = next(line for line in text.splitlines() if line.startswith("| initial deploy | 3.00"))
    assert row.startswith("| initial deploy | 3.00 (2.00–4.00) | 1.20 (1.00–1.50) | 0.40 |")
    assert "| initial deploy | kapply | 102 | 2 | 100 | 0 | 0 | 9 |" in text
    noop = next(line for line in text.splitlines() if line.startswith("| no-change redeploy | 1.00"))
    assert "**failed 1/1**" in noop
    assert "kapp: Error: boom" in text
    assert "| mix-100 |" in text  # the ratio summary has a column per workload


def test_results_md_renders_a_one_tool_run_without_ratios():
    text = report.render(_doc([_run("kapply", "deploy", 0, 1.0)]))
    assert "kapply/kapp" not in text.split("## mix-100")[1]


def test_results_md_checks_issue_14s_targets_at_the_target_sizes():
    def at(run: dict, rss_mb: int = 40) -> dict:
        return run | {"workload": "mix-1000", "n": 1000, "max_rss_kb": rss_mb * 1024}

    runs = [at(_run("kapp", "deploy", 0, 10.0), 60), at(_run("kapply", "deploy", 0, 7.0), 50)]
    runs += [at(_run("kapp", "noop", 0, 1.0)), at(_run("kapply", "noop", 0, 0.6))]
    runs += [_run("kapp", "noop", 0, 1.0), _run("kapply", "noop", 0, 0.1)]  # mix-100: not a target size
    text = report.render(_doc(runs))
    section = text.split("## Issue 14's targets")[1].split("\n## ")[0]
    assert "| mix-1000 | initial deploy | ≤ 0.8 | 0.70 | met |" in section
    assert f"| mix-1000 | no-change redeploy | ≤ 0.3 | 0.60 | **missed** ({report.WHY}) |" in section
    assert "| mix-1000 | peak RSS, initial deploy | ≤ kapp | 50 MB vs 60 MB | met |" in section
    assert "mix-100 |" not in section
    assert "## Issue 14's targets" not in report.render(_doc([_run("kapp", "noop", 0, 1.0)]))


class _Version:
    def version(self) -> str:
        return "v1.34.4"


@pytest.mark.parametrize(
    ("first_line", "expected"),
    [
        ("#!/bin/sh", f"{sys.version_info.major}.{sys.version_info.minor}"),  # a wrapper: the harness's own Python
        (f"#!{sys.executable}", f"{sys.version_info.major}.{sys.version_info.minor}"),
    ],
)
def test_the_python_named_is_an_interpreter_never_a_shell_wrappers(tmp_path, first_line, expected):
    kapply = tmp_path / "kapply"
    kapply.write_text(f"{first_line}\necho kapply version 0.1.0\n")
    kapply.chmod(0o755)
    found = sidebyside.versions(_Version(), {"kapply": kapply})  # type: ignore[arg-type]
    assert found["python"].startswith(expected + "."), found
