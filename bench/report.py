"""Summaries of the raw measurements: median and spread, bench/results.md and bench/results.png.

Everything here works on the JSON document `sidebyside.py` writes (`{"meta": {...}, "runs": [...]}`), so a
results.json from any earlier run renders the same way (`sidebyside.py --render results.json`).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.metrics import ordered_verbs

STEPS = ("deploy", "noop", "diff-run", "change", "delete")
STEP_TITLES = {
    "deploy": "initial deploy",
    "noop": "no-change redeploy",
    "diff-run": "`--diff-run` of the 10 % change",
    "change": "10 % changed",
    "delete": "delete",
}
TOOLS = ("kapp", "kapply")

Run = dict[str, Any]  # one measured step of one tool in one repetition (see sidebyside.StepRun)


@dataclass(frozen=True)
class Spread:
    median: float
    low: float
    high: float
    count: int


def spread(values: Iterable[float]) -> Spread | None:
    """Median and min-max of the values; None when there are none."""
    data = sorted(values)
    if not data:
        return None
    return Spread(statistics.median(data), data[0], data[-1], len(data))


def fmt_spread(s: Spread | None, digits: int = 2, scale: float = 1.0) -> str:
    if s is None:
        return "-"
    m, lo, hi = (f"{v * scale:.{digits}f}" for v in (s.median, s.low, s.high))
    return m if lo == hi else f"{m} ({lo}–{hi})"


def ratio(kapply: Spread | None, kapp: Spread | None) -> float | None:
    """kapply's median over kapp's: below 1 means kapply is faster."""
    if kapply is None or kapp is None or kapp.median <= 0:
        return None
    return kapply.median / kapp.median


def select(
    runs: Sequence[Run], *, workload: str, tool: str, step: str, ok: bool | None = True, rtt: int = 0
) -> list[Run]:
    """The runs of one workload, tool and step at one RTT (0: over loopback, as every run before `--rtt`)."""
    return [
        r
        for r in runs
        if r["workload"] == workload
        and r["tool"] == tool
        and r["step"] == step
        and (ok is None or r["ok"] == ok)
        and r.get("rtt_ms", 0) == rtt
    ]


def rtts_in(runs: Sequence[Run], workload: str) -> list[int]:
    return sorted({r.get("rtt_ms", 0) for r in runs if r["workload"] == workload})


def round_trips(runs: Sequence[Run], key: str = "round_trips") -> Spread | None:
    """The proxy's count (delay_proxy.PathCount's `key`) over the runs that went through it."""
    return spread(float(r["path"][key]) for r in runs if r.get("path"))


def metric(runs: Sequence[Run], key: str) -> Spread | None:
    return spread(float(r[key]) for r in runs if r.get(key) is not None)


def cpu(runs: Sequence[Run]) -> Spread | None:
    return spread(r["cpu_user_s"] + r["cpu_sys_s"] for r in runs)


def median_counts(runs: Sequence[Run], source: str) -> dict[str, float]:
    """Per verb, the median over the runs of the request count (0 where a run made none of that verb)."""
    verbs = {v for r in runs for v in r["requests"][source]}
    return {v: statistics.median(r["requests"][source].get(v, 0) for r in runs) for v in verbs} if runs else {}


def fmt_count(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def workloads_in(runs: Sequence[Run]) -> list[str]:
    seen: dict[str, tuple[int, int]] = {}
    kinds = {"mix": 0, "deploy": 1, "crd": 2}
    for r in runs:
        seen.setdefault(r["workload"], (kinds.get(r["kind"], 9), r["n"]))
    return sorted(seen, key=lambda w: seen[w])


def steps_in(runs: Sequence[Run], workload: str) -> list[str]:
    present = {r["step"] for r in runs if r["workload"] == workload}
    return [s for s in STEPS if s in present]


def tools_in(runs: Sequence[Run]) -> list[str]:
    present = {r["tool"] for r in runs}
    return [t for t in TOOLS if t in present] + sorted(present - set(TOOLS))


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> list[str]:
    aligns = [("---:" if (align[i : i + 1] or "r") == "r" else "---") for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(aligns) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def timing_table(runs: Sequence[Run], workload: str, tools: Sequence[str], rtt: int = 0) -> list[str]:
    header = ["step"]
    header += [f"{t} wall s" for t in tools]
    both = "kapp" in tools and "kapply" in tools
    if both:
        header.append("kapply/kapp")
    header += [f"{t} CPU s" for t in tools] + [f"{t} peak RSS MB" for t in tools]
    rows = []
    for step in steps_in(runs, workload):
        ok = {t: select(runs, workload=workload, tool=t, step=step, rtt=rtt) for t in tools}
        failed = {t: len(select(runs, workload=workload, tool=t, step=step, ok=False, rtt=rtt)) for t in tools}
        row = [STEP_TITLES[step]]
        for t in tools:
            cell = fmt_spread(metric(ok[t], "wall_s"))
            if failed[t]:
                cell += f" **failed {failed[t]}/{failed[t] + len(ok[t])}**"
            row.append(cell)
        if both:
            r = ratio(metric(ok["kapply"], "wall_s"), metric(ok["kapp"], "wall_s"))
            row.append("-" if r is None else f"{r:.2f}")
        row += [fmt_spread(cpu(ok[t])) for t in tools]
        row += [fmt_spread(metric(ok[t], "max_rss_kb"), 0, 1 / 1024) for t in tools]
        rows.append(row)
    return _table(header, rows, "l")


def requests_table(runs: Sequence[Run], workload: str, tools: Sequence[str], rtt: int = 0) -> list[str]:
    """Requests by verb; through the proxy (rtt above 0) also the round trips on the critical path and the client's
    flights (requests and TLS handshake flights) the proxy saw."""
    ok_runs = [r for r in runs if r["workload"] == workload and r["ok"] and r.get("rtt_ms", 0) == rtt]
    verbs = ordered_verbs({v for r in ok_runs for v in r["requests"]["client"]})
    proxied = any(r.get("path") for r in ok_runs)
    extra = ["round trips on the critical path", "client flights", "connections"] if proxied else []
    header = ["step", "tool", "total", *verbs, "of which dry-run", "server-wide, all clients", *extra]
    rows = []
    for step in steps_in(runs, workload):
        for t in tools:
            ok = select(runs, workload=workload, tool=t, step=step, rtt=rtt)
            if not ok:
                rows.append([STEP_TITLES[step], t, "failed", *["-"] * (len(verbs) + 2 + len(extra))])
                continue
            client = median_counts(ok, "client")
            dry = median_counts(ok, "dry_run")
            server = median_counts(ok, "server")
            dry_text = ", ".join(f"{v} {fmt_count(dry[v])}" for v in ordered_verbs(dry) if dry[v]) or "0"
            rows.append(
                [
                    STEP_TITLES[step],
                    t,
                    fmt_count(statistics.median(sum(r["requests"]["client"].values()) for r in ok)),
                    *[fmt_count(client.get(v, 0)) for v in verbs],
                    dry_text,
                    fmt_count(sum(server.values())),
                    *[fmt_spread(round_trips(ok, key), 0) for key in ("round_trips", "flights", "connections")][
                        : len(extra)
                    ],
                ]
            )
    return _table(header, rows, "ll")


def distance_table(runs: Sequence[Run], workload: str) -> list[str]:
    """Each step at every RTT side by side: median wall of kapp and kapply and their ratio, the round trips on the
    critical path the proxy counted, and the round trips the wall time grew by (median wall at the largest RTT less
    the one at the smallest, over the RTT difference): the two views of how far the step feels the distance."""
    rtts = rtts_in(runs, workload)
    proxied = [r for r in rtts if r > 0]
    header = ["step"]
    for rtt in rtts:
        header += [f"{rtt} ms: kapp / kapply s", "ratio"]
    header += [f"round trips at {rtt} ms, kapp / kapply" for rtt in proxied]
    if len(rtts) > 1:
        header.append(f"wall growth {rtts[0]}→{rtts[-1]} ms in round trips, kapp / kapply")
    rows = []
    for step in steps_in(runs, workload):
        row = [STEP_TITLES[step]]
        walls = {
            (t, rtt): metric(select(runs, workload=workload, tool=t, step=step, rtt=rtt), "wall_s")
            for t in TOOLS
            for rtt in rtts
        }
        for rtt in rtts:
            kapp, kapply = walls["kapp", rtt], walls["kapply", rtt]
            row.append(f"{_median(kapp)} / {_median(kapply)}")
            r = ratio(kapply, kapp)
            row.append("-" if r is None else f"{r:.2f}")
        for rtt in proxied:
            counts = [round_trips(select(runs, workload=workload, tool=t, step=step, rtt=rtt)) for t in TOOLS]
            row.append(" / ".join(_median(c, 0) for c in counts))
        if len(rtts) > 1:
            growth = []
            for t in TOOLS:
                low, high = walls[t, rtts[0]], walls[t, rtts[-1]]
                growth.append(
                    "-"
                    if low is None or high is None
                    else f"{(high.median - low.median) * 1000 / (rtts[-1] - rtts[0]):.0f}"
                )
            row.append(" / ".join(growth))
        rows.append(row)
    return _table(header, rows, "l")


def _at(rtt: int) -> str:
    return f" at {rtt} ms RTT" if rtt else ""


def _median(s: Spread | None, digits: int = 2) -> str:
    return "-" if s is None else f"{s.median:.{digits}f}"


def ratio_summary(runs: Sequence[Run]) -> list[str]:
    """kapply/kapp median wall-time ratio, one row per step, one column per workload."""
    names = workloads_in(runs)
    rows = []
    for step in STEPS:
        row = [STEP_TITLES[step]]
        for w in names:
            r = ratio(
                metric(select(runs, workload=w, tool="kapply", step=step), "wall_s"),
                metric(select(runs, workload=w, tool="kapp", step=step), "wall_s"),
            )
            row.append("-" if r is None else f"{r:.2f}")
        if any(c != "-" for c in row[1:]):
            rows.append(row)
    return _table(["step", *names], rows, "l")


# Issue 14's targets: the kapply/kapp wall-time ratio each step must reach on the mix at these sizes.
TARGETS = {"deploy": 0.8, "noop": 0.3, "diff-run": 0.3, "change": 0.5, "delete": 0.5}
TARGET_SIZES = ("mix-1000", "mix-5000")
WHY = "bench/why.md"


def targets_table(runs: Sequence[Run]) -> list[str]:
    """Each target of issue 14 against the measured ratio (met or missed), and peak RSS at the largest mix; empty
    when the run measured none of the target sizes."""
    names = [w for w in TARGET_SIZES if w in workloads_in(runs)]
    rows = []
    for w in names:
        for step, target in TARGETS.items():
            r = ratio(
                metric(select(runs, workload=w, tool="kapply", step=step), "wall_s"),
                metric(select(runs, workload=w, tool="kapp", step=step), "wall_s"),
            )
            if r is not None:
                verdict = "met" if r <= target else f"**missed** ({WHY})"
                rows.append([w, STEP_TITLES[step], f"≤ {target:.1f}", f"{r:.2f}", verdict])
        rss = {t: metric(select(runs, workload=w, tool=t, step="deploy"), "max_rss_kb") for t in ("kapp", "kapply")}
        if rss["kapp"] and rss["kapply"]:
            verdict = "met" if rss["kapply"].median <= rss["kapp"].median else f"**missed** ({WHY})"
            measured = f"{rss['kapply'].median / 1024:.0f} MB vs {rss['kapp'].median / 1024:.0f} MB"
            rows.append([w, "peak RSS, initial deploy", "≤ kapp", measured, verdict])
    return _table(["workload", "step", "target (kapply/kapp)", "measured", ""], rows, "ll") if rows else []


def failures(runs: Sequence[Run]) -> list[str]:
    out: list[str] = []
    for r in runs:
        if r["ok"]:
            continue
        out.append(
            f"- {r['workload']}{_at(r.get('rtt_ms', 0))}, {r['tool']}, repetition {r['rep'] + 1}, "
            f"{STEP_TITLES[r['step']]}: "
            f"exit {r['exit_code']} after {r['wall_s']:.1f} s"
        )
        if r.get("error"):
            out += ["", "  ```", *("  " + line for line in r["error"].splitlines()), "  ```"]
    return out


def render(doc: dict[str, Any]) -> str:
    """bench/results.md from the results document."""
    meta = doc["meta"]
    runs: list[Run] = doc["runs"]
    tools = tools_in(runs)
    lines = [f"# kapp and kapply side by side{' — ' + meta['title'] if meta.get('title') else ''}", ""]
    if meta.get("note"):
        lines += [f"> **{meta['note']}**", ""]
    machine, versions = meta["machine"], meta["versions"]
    lines += [
        f"Run {meta['started']} – {meta.get('finished', 'unfinished')}, "
        f"{meta['config']['repeat']} repetition(s), tool order alternating per repetition"
        + (" (interrupted: partial results)" if meta.get("interrupted") else "")
        + ".",
        "",
        f"- machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gb']:.1f} GB memory, {machine['os']}",
        f"- kapp: {versions.get('kapp', '-')}",
        f"- kapply: {versions.get('kapply', '-')} (git {versions.get('kapply_commit', '?')})",
        f"- Kubernetes: {versions.get('kubernetes', '?')} (local control plane of hack/cluster.py"
        " unless said otherwise);"
        f" Python {versions.get('python', '?')}",
        f"- flags, both tools: `{' '.join(meta['config']['deploy_flags'])}` on every deploy and delete;"
        f" the diff-run step adds `--diff-run`",
        f"- command: `{meta.get('command', '')}`",
        "",
        "How to read: wall time is the client process from start to exit (process start and imports included),"
        " as median (min–max) over the repetitions; CPU is the client's user+sys time; peak RSS its maximum resident"
        " set (`ru_maxrss` of the tool's own process, read by a small spawner so that the harness's memory is not"
        " counted). Requests are the client's own, counted by the API server"
        " (`apiserver_flowcontrol_dispatched_requests_total` of flow schemas that match only the tools' ServiceAccount,"
        " one per verb; DISCOVERY is non-resource GETs: /api, /apis, /version, /openapi; PATCH includes server-side"
        ' apply). Dry-run requests come from `apiserver_request_total{dry_run="All"}`, which has no user label: on a'
        " quiet cluster only the measured tool sends dry-runs, on a busy one other users' count too;"
        " the last column is every client's requests during the step (controllers, kwok, leases, anything else on"
        " the cluster), from `apiserver_request_total`. Counts are medians over the repetitions.",
        "",
        "Each app is deployed into its own fresh namespace per tool and repetition; steps run in the order initial"
        " deploy, no-change redeploy, `--diff-run` of the 10 % change (before applying it), 10 % changed, delete."
        " The 10 % change changes one resource in every ten (rotating within each block of ten, so the same"
        " 80/10/10 mix). The CRD of the custom-resource workload is created by the harness before its runs and"
        " is not part of the measured app.",
        "",
    ]
    summary = ratio_summary(runs)
    if len(summary) > 2:
        lines += ["## kapply/kapp wall-time ratio (median over median; below 1: kapply is faster)", ""]
        lines += summary + [""]
    targets = targets_table(runs)
    if targets:
        lines += ["## Issue 14's targets", ""] + targets + [""]
    for w in workloads_in(runs):
        sample = next(r for r in runs if r["workload"] == w)
        lines += [f"## {w}: {describe(sample['kind'], sample['n'])}", ""]
        rtts = rtts_in(runs, w)
        if rtts != [0]:
            lines += [
                "At a distance (median wall; round trips on the critical path as the delaying proxy counted them,"
                " bench/why.md):",
                "",
            ]
            lines += distance_table(runs, w) + [""]
        for rtt in rtts:
            if rtts != [0]:
                lines += [f"### {w} {'over loopback' if rtt == 0 else f'at {rtt} ms RTT'}", ""]
            lines += timing_table(runs, w, tools, rtt) + [""]
            lines += ["Requests by verb (the client's own):", ""]
            lines += requests_table(runs, w, tools, rtt) + [""]
    failed = failures(runs)
    if failed:
        lines += ["## Failed steps", ""] + failed + [""]
    if meta.get("harness_errors"):
        lines += ["## Harness errors (the cluster did not answer the harness; these apps were not measured)", ""]
        lines += [f"- {e}" for e in meta["harness_errors"]] + [""]
    if meta.get("plot"):
        lines += [f"![wall time against N]({meta['plot']})", ""]
    return "\n".join(lines)


def describe(kind: str, n: int) -> str:
    if kind == "mix":
        return f"{n:,} resources (ConfigMaps 80 %, Secrets 10 %, Services 10 %)"
    if kind == "deploy":
        return f"{n:,} Deployments of 1 replica (kwok makes the pods Ready; waiting counts)"
    if kind == "crd":
        return f"{n:,} custom resources of one CRD (the CRD created beforehand by the harness)"
    return f"{kind} × {n}"


def plot(doc: dict[str, Any], path: Path) -> str | None:
    """Wall time against N of the mix workloads, one panel per step, both tools, median with min–max bars, log-log.
    Returns why no plot was written, or None."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FormatStrFormatter
    except ImportError:
        return "matplotlib is not installed (pip install -e '.[bench]')"
    runs = [r for r in doc["runs"] if r["kind"] == "mix" and r.get("rtt_ms", 0) == 0]
    if not runs:
        return "no mix workload over loopback in this run"
    steps = [s for s in STEPS if any(r["step"] == s for r in runs)]
    fig, axes = plt.subplots(1, len(steps), figsize=(3.2 * len(steps), 3.4), squeeze=False)
    for ax, step in zip(axes[0], steps, strict=True):
        for tool, style in (("kapp", "o-"), ("kapply", "s--")):
            points = []
            for n in sorted({r["n"] for r in runs}):
                s = metric(select(runs, workload=f"mix-{n}", tool=tool, step=step), "wall_s")
                if s is not None:
                    points.append((n, s))
            if points:
                xs = [n for n, _ in points]
                ys = [s.median for _, s in points]
                err = [[s.median - s.low for _, s in points], [s.high - s.median for _, s in points]]
                ax.errorbar(xs, ys, yerr=err, fmt=style, capsize=3, label=tool)
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
        ax.set_title(STEP_TITLES[step].replace("`", ""), fontsize=9)
        ax.set_xlabel("N resources")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("wall time, s")
    axes[0][0].legend(fontsize=8)
    note = doc["meta"].get("note")
    fig.suptitle(
        "kapp vs kapply, mix workload: median wall time, min–max bars" + (f"\n{note}" if note else ""), fontsize=9
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
