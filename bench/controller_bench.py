"""The App controller at scale: N Apps of M resources each, reconciled by one `kapply controller` process.

    make bench-controller                                            # 200 Apps x 20 resources, 30 s sync period
    .venv/bin/python -m bench.controller_bench --apps 20 --resources 5 --sync-period 10s --drift-trials 3  # quick

Phases, in order, against the local control plane (or the cluster of --kubeconfig):

1. initial: every App is created at once (the controller already running and watching); timed until all are
   ReconcileSucceeded for their generation.
2. steady: `--steady-periods` sync periods of an unchanged set of Apps: the requests per sync by verb, the writes
   (an unchanged App must cost none), the objects whose resourceVersion moved, and the time between two syncs of one
   App (the sync period, if the controller keeps up).
3. drift: `--drift-trials` times, one ConfigMap of one App is changed by an outside writer (a merge PATCH as another
   field manager) and timed until the controller has set it back.
4. delete: every App is deleted at once; timed until all are gone (their finalizers processed).

The controller runs as a subprocess (`python -m kapply controller -n kapply-cbench-apps --leader-elect=false`) with
a kubeconfig of its own ServiceAccount (bench/identity.py), so that API Priority and Fairness counts its requests
by verb; the Apps deploy with their ServiceAccount `deployer` (TokenRequest tokens the controller asks for), counted
by a second set of flow schemas. Its CPU time (own, and its children's: ytt) and peak RSS come from /proc/PID/stat
and /proc/PID/status at the end of each phase, and os.wait4 when it stops. Everything is created in namespaces
named kapply-cbench-*, and removed at the end, on Ctrl-C and with --cleanup. The CRD is installed only when the
cluster has none (then removed at the end if no App is left anywhere).

Results: bench/controller_results.json (raw) and bench/controller_results.md; the controller's log is kept in the
work directory printed at the start. `--baseline` names an earlier run's controller_results.json (the committed one:
`git show HEAD:bench/controller_results.json > /tmp/base.json`), shown side by side with this run against the goals
of the watch-fed cache (docs/design.md, "The controller at scale"): per idle sync no LIST and no GET and at most 5 ms
of controller CPU, drift set back within 2 s (p90); with the delete's time and requests per App, the controller's
peak RSS and what its cache holds (from the log's `cache:` lines).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

if __package__ in (None, ""):  # run as a script: bench/controller_bench.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import identity
from bench.kube import Kube, KubeError
from bench.metrics import Series, client_requests, delta, ordered_verbs, parse, server_detail, server_requests
from bench.sidebyside import default_kubeconfig, machine, versions

REPO = Path(__file__).resolve().parents[1]
APPS_NS = "kapply-cbench-apps"
IDENTITY_NS = "kapply-cbench-identity"
CONTROLLER_SA = "controller"
DEPLOYER = "deployer"
CTL_PREFIX = "kapply-cbench-ctl-"  # flow schemas of the controller's own requests
DEP_PREFIX = "kapply-cbench-dep-"  # flow schemas of the Apps' deploys (ServiceAccount `deployer`)
LABELS = {"app.kubernetes.io/managed-by": "kapply-cbench"}
CRD_NAME = "apps.kapply.dev"
CRD_PATH = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
APPS_PATH = f"/apis/kapply.dev/v1alpha1/namespaces/{APPS_NS}/apps"
DRIFT_MANAGER = "kapply-cbench-drift"
WRITE_VERBS = ("POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION")
SECRET_EVERY = 10  # every 10th resource of an App is a Secret, the others ConfigMaps


# ---------------------------------------------------------------- pure helpers (tests/unit/test_bench_harness.py)


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(text: str) -> float:
    """A Go-style duration ('30s', '1m30s', '500ms') or a number of seconds, in seconds."""
    text = text.strip()
    with contextlib.suppress(ValueError):
        return float(text)
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text!r}")
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def app_name(index: int) -> str:
    return f"a{index:03d}"


def resource_name(app: str, index: int) -> str:
    """Names are unique across Apps: all Apps deploy into the one namespace."""
    return f"{app}-r{index:02d}"


def resources(app: str, count: int) -> list[dict[str, Any]]:
    """An App's resources: ConfigMaps, and a Secret (stringData) every SECRET_EVERY-th."""
    docs: list[dict[str, Any]] = []
    for i in range(count):
        meta = {"name": resource_name(app, i), "labels": {"bench": "kapply-cbench", "app-index": app}}
        if i % SECRET_EVERY == SECRET_EVERY - 1:
            docs.append({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "stringData": {"token": f"s-{i}"}})
        else:
            data = {"key": f"value-{i}", "settings.yaml": f"name: {app}\nindex: {i}\nreplicas: 3\nlevel: info\n"}
            docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})
    return docs


def app_manifest(app: str, namespace: str, count: int, sync_period: str) -> dict[str, Any]:
    """An App of `count` inline resources. The template step is required (`Expected at least one template
    option`); ytt with no arguments is the cheapest one (it copies the YAML through, ~15 ms per run)."""
    return {
        "apiVersion": "kapply.dev/v1alpha1",
        "kind": "App",
        "metadata": {"name": app, "namespace": namespace, "labels": LABELS},
        "spec": {
            "serviceAccountName": DEPLOYER,
            "syncPeriod": sync_period,
            "fetch": [{"inline": {"paths": {"resources.yml": yaml.safe_dump_all(resources(app, count))}}}],
            "template": [{"ytt": {}}],
            "deploy": [{"kapp": {}}],
        },
    }


def deployer_objects(namespace: str) -> list[dict[str, Any]]:
    """The Apps' ServiceAccount with a Role over its namespace (as docs/reconciler.md installs one)."""
    meta = {"name": DEPLOYER, "namespace": namespace, "labels": LABELS}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta,
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": DEPLOYER},
            "subjects": [{"kind": "ServiceAccount", "name": DEPLOYER, "namespace": namespace}],
        },
    ]


def app_state(app: Mapping[str, Any]) -> tuple[str, str]:
    """('ready' | 'failed' | 'pending', message) of an App: ready when ReconcileSucceeded for its generation."""
    status = app.get("status") or {}
    conditions = status.get("conditions") or [{}]
    kind = str(conditions[0].get("type", ""))
    current = status.get("observedGeneration") == (app.get("metadata") or {}).get("generation")
    if kind == "ReconcileSucceeded" and current:
        return "ready", ""
    if kind in ("ReconcileFailed", "DeleteFailed"):
        return "failed", str(conditions[0].get("message", ""))
    return "pending", ""


@dataclass(frozen=True)
class ProcSample:
    """A process's CPU time (own and its reaped children's, seconds) and memory (KiB) at one moment."""

    t: float
    cpu_s: float
    children_cpu_s: float
    rss_kb: int
    hwm_kb: int


def parse_proc(stat: str, status: str, clock_ticks: int, t: float) -> ProcSample:
    """/proc/PID/stat (utime, stime, cutime, cstime: fields 14-17) and /proc/PID/status (VmRSS, VmHWM)."""
    fields = stat[stat.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    memory = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            memory[key] = int(value.split()[0])
    return ProcSample(
        t,
        (utime + stime) / clock_ticks,
        (cutime + cstime) / clock_ticks,
        memory.get("VmRSS", 0),
        memory.get("VmHWM", 0),
    )


def parse_cpu_times(proc_stat: str) -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs together from /proc/stat's `cpu` line: idle and iowait are not busy."""
    line = next(line for line in proc_stat.splitlines() if line.startswith("cpu "))
    values = [float(x) for x in line.split()[1:9]]  # user nice system idle iowait irq softirq steal
    total = sum(values)
    return total - values[3] - values[4], total


@dataclass(frozen=True)
class Sync:
    """One reconcile of an App as the controller logged it."""

    t: float  # epoch seconds
    app: str  # namespace/name
    outcome: str  # unchanged | deployed | failed
    message: str


_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\w+) kapply\.controller: ([^/\s]+/[^:\s]+): (.*)$")


def parse_log(text: str, namespace: str) -> list[Sync]:
    """The reconciles of the namespace's Apps in the controller's log (its format: `%(asctime)s %(levelname)s
    %(name)s: %(message)s`, the App as `ns/name: ...`; asctime is local time)."""
    syncs = []
    for line in text.splitlines():
        m = _LOG_LINE.match(line)
        if not m or not m.group(3).startswith(namespace + "/"):
            continue
        stamp, level, app, message = m.groups()
        t = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if level == "INFO" and message.startswith("no changes"):
            outcome = "unchanged"
        elif level == "INFO" and message.startswith("deployed"):
            outcome = "deployed"
        elif level == "INFO":
            continue  # e.g. another deploy of the App is running: retried, not a reconcile
        else:
            outcome = "failed"
        syncs.append(Sync(t, app, outcome, message))
    return syncs


_CACHE_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO kapply\.controller: cache: (\d+) objects, ([\d.]+) MB of JSON, "
    r"in (\d+) stores(?:; (\d+) events in (\d+)s)?"
)


def parse_cache_log(text: str) -> list[dict[str, float]]:
    """The controller's reports of its cache (`cache: N objects, X MB of JSON, in K stores; E events in 60s`, every
    minute while it changes), in order: time (epoch seconds), objects, MB of JSON, stores, watch events a minute."""
    found = []
    for line in text.splitlines():
        m = _CACHE_LINE.match(line)
        if m:
            t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            found.append(
                {
                    "t": t,
                    "objects": int(m.group(2)),
                    "json_mb": float(m.group(3)),
                    "stores": int(m.group(4)),
                    "events_per_min": int(m.group(5)) * 60 / int(m.group(6)) if m.group(5) else 0,
                }
            )
    return found


def in_window(syncs: Iterable[Sync], start: float, end: float) -> list[Sync]:
    return [s for s in syncs if start <= s.t < end]


def sync_intervals(syncs: Iterable[Sync]) -> list[float]:
    """The time between two consecutive reconciles of the same App, for every App."""
    last: dict[str, float] = {}
    out = []
    for s in sorted(syncs, key=lambda s: s.t):
        if s.app in last:
            out.append(s.t - last[s.app])
        last[s.app] = s.t
    return out


def stats(values: Sequence[float]) -> dict[str, float] | None:
    """count, min, median, p90, max (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, max(0, round(0.9 * len(ordered)) - 1))]
    return {
        "count": len(ordered),
        "min": ordered[0],
        "median": statistics.median(ordered),
        "p90": p90,
        "max": ordered[-1],
    }


def writes(counts: Mapping[str, int | float]) -> float:
    return sum(v for k, v in counts.items() if k in WRITE_VERBS)


def per_sync(counts: Mapping[str, int], syncs: int) -> dict[str, float]:
    return {verb: counts[verb] / syncs for verb in ordered_verbs(counts)} if syncs else {}


def moved(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, list[str]]:
    """Objects (key -> resourceVersion) created, updated and deleted between two snapshots."""
    return {
        "created": sorted(set(after) - set(before)),
        "updated": sorted(k for k in set(after) & set(before) if after[k] != before[k]),
        "deleted": sorted(set(before) - set(after)),
    }


# ---------------------------------------------------------------- results.md


def _fmt_counts(counts: Mapping[str, float], digits: int = 0) -> str:
    if not counts:
        return "none"
    return ", ".join(f"{verb} {counts[verb]:.{digits}f}" for verb in ordered_verbs(counts))


def _fmt_s(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f} s"


def _fmt_stats(s: Mapping[str, float] | None, digits: int = 1) -> str:
    if not s:
        return "-"
    return (
        f"median {s['median']:.{digits}f} s, p90 {s['p90']:.{digits}f} s, max {s['max']:.{digits}f} s "
        f"(n = {int(s['count'])})"
    )


def _fmt_pct(fraction: float | None) -> str:
    return "-" if fraction is None else f"{fraction * 100:.0f} %"


def _mb(kb: float) -> str:
    return f"{kb / 1024:.0f} MB"


GOALS = {  # the watch-fed cache's (docs/design.md, "The controller at scale")
    "idle_list": ("LIST per App per idle sync", 0.0),
    "idle_get": ("GET per App per idle sync", 0.0),
    "idle_cpu_ms": ("controller CPU per idle sync (ms)", 5.0),
    "drift_p90_s": ("drift set back, p90 (s)", 2.0),
}


def summary(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The headline numbers of a run (None where a phase is missing): requests per idle sync (both identities,
    by verb), controller CPU per idle sync, drift p90, delete time and requests per App, initial time, peak RSS and
    the cache's size at the end of the steady state."""
    phases, apps = doc["phases"], doc["meta"]["config"]["apps"]
    out: dict[str, Any] = dict.fromkeys(
        ("idle", "idle_list", "idle_get", "idle_cpu_ms", "drift_p90_s", "delete_s", "delete_per_app", "initial_s"),
    )
    steady = phases.get("steady")
    if steady and steady.get("syncs"):
        both = {
            v: steady["controller"].get(v, 0) + steady["deploys"].get(v, 0)
            for v in (*steady["controller"], *steady["deploys"])
        }
        out["idle"] = per_sync(both, steady["syncs"])
        out["idle_list"] = both.get("LIST", 0) / steady["syncs"]
        out["idle_get"] = both.get("GET", 0) / steady["syncs"]
        out["idle_cpu_ms"] = steady["cpu_s"] / steady["syncs"] * 1000
    if (phases.get("drift") or {}).get("revert"):
        out["drift_p90_s"] = phases["drift"]["revert"]["p90"]
    delete = phases.get("delete")
    if delete:
        both = {
            v: delete["controller"].get(v, 0) + delete["deploys"].get(v, 0)
            for v in (*delete["controller"], *delete["deploys"])
        }
        out["delete_s"] = delete.get("all_gone_s")
        out["delete_per_app"] = per_sync(both, apps)
    if phases.get("initial"):
        out["initial_s"] = phases["initial"].get("all_ready_s")
    end = doc.get("controller_exit") or {}
    out["peak_rss_mb"] = end["max_rss_kb"] / 1024 if end.get("max_rss_kb") else None
    out["cache"] = (steady or {}).get("cache")
    return out


def _goal_met(key: str, value: float | None) -> str:
    if key not in GOALS or value is None:
        return ""
    return " (met)" if round(value, 2) <= GOALS[key][1] else " (**not met**)"


def _side_by_side(doc: Mapping[str, Any]) -> list[str]:
    """The goals table: this run, the baseline run when given, the goal."""
    now = summary(doc)
    base = (doc.get("baseline") or {}).get("summary") or {}
    meta = doc.get("baseline") or {}
    before = f"before ({meta.get('started', '?')[:10]}, {meta.get('commit', '?')})" if meta else "before"

    def num(value: Any, digits: int) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    def counts(value: Any) -> str:
        return "-" if value is None else _fmt_counts(value, 2)

    def cache(value: Any) -> str:
        return (
            "-"
            if not value
            else f"{value['objects']} objects, {value['json_mb']:.1f} MB of JSON, {value['stores']} stores"
        )

    rows = [
        ("requests per App per idle sync", counts(now["idle"]), counts(base.get("idle")), "no LIST, no GET"),
        *((GOALS[k][0], num(now[k], 2) + _goal_met(k, now[k]), num(base.get(k), 2), f"{GOALS[k][1]:g}") for k in GOALS),
        ("delete: all Apps gone (s)", num(now["delete_s"], 1), num(base.get("delete_s"), 1), ""),
        ("delete: requests per App", counts(now["delete_per_app"]), counts(base.get("delete_per_app")), ""),
        ("initial: all ReconcileSucceeded (s)", num(now["initial_s"], 1), num(base.get("initial_s"), 1), ""),
        ("controller peak RSS (MB)", num(now["peak_rss_mb"], 0), num(base.get("peak_rss_mb"), 0), ""),
        ("the cache, end of steady state", cache(now["cache"]), cache(base.get("cache")), ""),
    ]
    lines = ["## Against the goals", "", f"| | this run | {before} | goal |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    if meta:
        lines += ["", f"Before: `{meta.get('command', '')}`, {meta.get('started', '')}."]
    return [*lines, ""]


def render(doc: Mapping[str, Any]) -> str:
    """controller_results.md from controller_results.json's document."""
    meta, phases = doc["meta"], doc["phases"]
    cfg, m, v = meta["config"], meta["machine"], meta["versions"]
    lines = [
        "# The controller at scale",
        "",
        f"`{meta.get('command', '')}`, {meta.get('started', '')} to {meta.get('finished', '')}"
        + (" (**interrupted**: partial results)" if meta.get("interrupted") else ""),
        "",
    ]
    if meta.get("note"):
        lines += [f"> **{meta['note']}**", ""]
    lines += [
        f"- **{cfg['apps']} Apps x {cfg['resources']} resources** (ConfigMaps, a Secret every {SECRET_EVERY}th), all "
        f"in namespace `{APPS_NS}`, inline sources, template `ytt: {{}}`, deploy `kapp: {{}}`; syncPeriod "
        f"{cfg['sync_period']}, `--min-sync-period={cfg['sync_period']} --concurrency {cfg['concurrency']} "
        "--leader-elect=false`.",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']:.1f} GB memory, {m['os']}. The API server, etcd, "
        "kube-controller-manager and the controller all run on this machine, and other engineers' tests may have "
        "used the same cluster at the same time (their requests are in no count below but the server-wide ones).",
        f"- Versions: Kubernetes {v.get('kubernetes', '?')}, {v.get('kapply', '?')}, Python {v.get('python', '?')}, "
        f"commit {v.get('kapply_commit', '?')}, ytt {v.get('ytt', '?')}.",
        "- Requests are counted by the API server (API Priority and Fairness flow schemas per identity, "
        "bench/identity.py): **controller** = the controller's own ServiceAccount (App watch and reads, status "
        "writes, Events, TokenRequests, the drift watches), **deploys** = the Apps' ServiceAccount `deployer` "
        "(everything kapply's deploy and delete do). CPU: the controller process's own user+system time, and "
        "separately its children's (ytt). The API server's and etcd's CPU are sampled from /proc too "
        "(every client's load, not the controller's alone); machine busy: all cores together, from /proc/stat "
        "(100 % = every core busy for the whole phase).",
        "",
        "| phase | wall | controller CPU | children CPU (ytt) | API server CPU | etcd CPU | machine busy | "
        "peak RSS so far | controller requests | deploy requests |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("initial", "steady", "drift", "delete"):
        p = phases.get(name)
        if not p:
            continue
        lines.append(
            f"| {name} | {_fmt_s(p['wall_s'])} | {_fmt_s(p['cpu_s'])} ({p['cpu_s'] / p['wall_s'] * 100:.0f} % of a "
            f"core) | {_fmt_s(p['children_cpu_s'])} | {_fmt_s(p.get('apiserver_cpu_s'))} | "
            f"{_fmt_s(p.get('etcd_cpu_s'))} | {_fmt_pct(p.get('machine_busy'))} | {_mb(p['hwm_kb'])} | "
            f"{_fmt_counts(p['controller'])} | {_fmt_counts(p['deploys'])} |"
        )
    lines.append("")
    lines += _side_by_side(doc)
    initial = phases.get("initial")
    if initial:
        lines += [
            "## 1. Creating every App",
            "",
            f"- All {cfg['apps']} created in {_fmt_s(initial['create_s'])} (one POST each, by the harness).",
            f"- **All ReconcileSucceeded {_fmt_s(initial.get('all_ready_s'))} after the first create** "
            + (
                f"({_fmt_s(initial['all_ready_s'] - initial['create_s'])} after the last)"
                if initial.get("all_ready_s") is not None
                else f"— **not all ready** after {_fmt_s(initial['wall_s'])}: {initial['not_ready']} left"
            )
            + ".",
            f"- Each App's time to ready (from the first create): {_fmt_stats(initial.get('ready_times'))}.",
            *(
                [
                    f"- Throughput: {cfg['apps'] / ready:.1f} Apps/s, "
                    f"{cfg['apps'] * cfg['resources'] / ready:.0f} resources/s."
                ]
                if (ready := initial.get("all_ready_s"))
                else []
            ),
            f"- Reconciles logged: {_fmt_counts(initial['outcomes'])}.",
            f"- Controller CPU per App deployed: {initial['cpu_s'] / cfg['apps'] * 1000:.0f} ms "
            f"(+ {initial['children_cpu_s'] / cfg['apps'] * 1000:.0f} ms of ytt).",
            f"- Requests per App: controller {_fmt_counts(per_sync(initial['controller'], cfg['apps']), 1)}; "
            f"deploy {_fmt_counts(per_sync(initial['deploys'], cfg['apps']), 1)}.",
            "",
        ]
    steady = phases.get("steady")
    if steady:
        syncs = steady["syncs"]
        expected = steady["expected_syncs"]
        lines += [
            "## 2. Steady state (nothing changes)",
            "",
            f"- Window: {_fmt_s(steady['wall_s'])} ({steady['periods']} sync periods of {cfg['sync_period']}); "
            f"**{syncs} reconciles logged** ({_fmt_counts(steady['outcomes'])}), {expected} expected "
            f"({cfg['apps']} Apps x {steady['wall_s'] / cfg['sync_period_s']:.2f} periods).",
            f"- Time between two syncs of one App: {_fmt_stats(steady.get('intervals'))} (the sync period is "
            f"{cfg['sync_period']}; more means the controller does not keep up).",
            f"- Controller CPU: {steady['cpu_s'] / max(syncs, 1) * 1000:.0f} ms per sync, "
            f"{steady['cpu_s'] / steady['wall_s'] * 100:.0f} % of one core; ytt "
            f"{steady['children_cpu_s'] / max(syncs, 1) * 1000:.0f} ms per sync.",
            f"- **Requests per sync**: controller {_fmt_counts(per_sync(steady['controller'], syncs), 2)}; deploy "
            f"{_fmt_counts(per_sync(steady['deploys'], syncs), 2)}.",
            f"- **Writes in the window**: controller {writes(steady['controller']):.0f}, deploys "
            f"{writes(steady['deploys']):.0f} (PUT, PATCH, POST, DELETE).",
            f"- Objects whose resourceVersion moved in `{APPS_NS}` (Apps, ConfigMaps including app records and "
            f"app-changes, Secrets): {_moved_text(steady['moved'])}; Events created: {steady['events_created']}.",
            *(
                [
                    f"- The controller's cache (its last report before the end of the window): "
                    f"{c['objects']:.0f} objects, {c['json_mb']:.1f} MB of JSON, in {c['stores']:.0f} stores, "
                    f"{c.get('events_per_min', 0):.0f} watch events applied in the last minute (every kapp app's "
                    "objects of the watched types count, other tests' included: their events cost the controller CPU "
                    f"too); controller RSS {_mb(steady['rss_kb'])}."
                ]
                if (c := steady.get("cache"))
                else []
            ),
            "",
        ]
    drift = phases.get("drift")
    if drift:
        lines += [
            "## 3. Drift",
            "",
            "One ConfigMap's `data.key` changed by a merge PATCH as field manager "
            f"`{DRIFT_MANAGER}`, during steady state; timed from the PATCH until a GET (every 0.1 s) shows the "
            "desired value again.",
            "",
            f"- **Reverted: {_fmt_stats(drift.get('revert'), 2)}**"
            + (f"; not reverted in time: {drift['not_reverted']}" if drift.get("not_reverted") else "")
            + ".",
            f"- Reconciles logged during the phase: {_fmt_counts(drift['outcomes'])}.",
            "",
            "| trial | App | ConfigMap | reverted after |",
            "|---|---|---|---|",
        ]
        for t in drift["trials"]:
            lines.append(f"| {t['trial']} | {t['app']} | {t['object']} | {_fmt_s(t['revert_s'], 2)} |")
        lines.append("")
    delete = phases.get("delete")
    if delete:
        lines += [
            "## 4. Deleting every App",
            "",
            f"- One DELETE of the collection; **all {cfg['apps']} gone after {_fmt_s(delete.get('all_gone_s'))}**"
            + (f" — {delete['left']} Apps left after {_fmt_s(delete['wall_s'])}" if delete.get("left") else "")
            + ".",
            f"- Left in the namespace afterwards: {delete['objects_left']} ConfigMaps/Secrets "
            "(the namespace's kube-root-ca.crt not counted).",
            f"- Requests per App: controller {_fmt_counts(per_sync(delete['controller'], cfg['apps']), 1)}; "
            f"deploy {_fmt_counts(per_sync(delete['deploys'], cfg['apps']), 1)}.",
            "",
        ]
    end = doc.get("controller_exit")
    if end:
        lines += [
            "## The controller process",
            "",
            f"- Whole run (os.wait4 after SIGTERM): {end['cpu_user_s']:.1f} s user + {end['cpu_sys_s']:.1f} s system "
            f"CPU including children, peak RSS {_mb(end['max_rss_kb'])} (VmHWM of the controller itself: "
            f"{_mb(end['hwm_kb'])}), exit status {end['exit_code']}.",
            f"- Warnings and errors in its log: {end['problems']}" + (":" if end.get("problem_lines") else "."),
        ]
        lines += [f"  - `{line}`" for line in end.get("problem_lines", [])]
        lines.append("")
    errors = doc.get("harness_errors") or []
    if errors:
        lines += ["## Harness errors", ""] + [f"- {e}" for e in errors] + [""]
    return "\n".join(lines).rstrip() + "\n"


def _moved_text(found: Mapping[str, list[str]]) -> str:
    parts = []
    for what in ("created", "updated", "deleted"):
        items = found.get(what) or []
        if items:
            shown = ", ".join(f"`{i}`" for i in items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")
            parts.append(f"{len(items)} {what} ({shown})")
    return "; ".join(parts) or "**none**"


# ---------------------------------------------------------------- the run


def log(msg: str) -> None:
    print(f"[cbench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _die_with_parent() -> None:
    """In the controller's process before exec: SIGTERM when the harness dies (even by SIGKILL), so that no
    controller is left reconciling after the run (Linux's PR_SET_PDEATHSIG; elsewhere nothing)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1


def find_pid(command: str) -> int | None:
    """The pid of the one process whose command name is `command` (the API server, etcd), else None."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().strip() == command:
                    found.append(int(entry.name))
    return found[0] if len(found) == 1 else None


def sample(pid: int | None) -> ProcSample | None:
    if pid is None:
        return None
    try:
        return parse_proc(
            Path(f"/proc/{pid}/stat").read_text(),
            Path(f"/proc/{pid}/status").read_text(),
            os.sysconf("SC_CLK_TCK"),
            time.time(),
        )
    except OSError:
        return None


class ControllerBench:
    def __init__(self, args: argparse.Namespace, kube: Kube, doc: dict[str, Any]) -> None:
        self.args = args
        self.kube = kube
        self.doc = doc
        self.phases: dict[str, Any] = doc["phases"]
        self.workdir = Path(tempfile.mkdtemp(prefix="kapply-cbench-"))
        self.log_path = self.workdir / "controller.log"
        doc["meta"]["controller_log"] = str(self.log_path)
        self.proc: subprocess.Popen[bytes] | None = None
        self.crd_created = False
        self.names = [app_name(i) for i in range(args.apps)]
        self.others = {"apiserver": find_pid("kube-apiserver"), "etcd": find_pid("etcd")}

    # ---- observing

    def scrape(self) -> dict[Series, float]:
        return parse(self.kube.text("/metrics"))

    def controller_sample(self) -> ProcSample:
        assert self.proc is not None
        got = sample(self.proc.pid)
        if got is None or self.proc.poll() is not None:
            raise RuntimeError(f"the controller exited (status {self.proc.poll()}); its log: {self.log_path}")
        return got

    def mark(self) -> dict[str, Any]:
        return {
            "metrics": self.scrape(),
            "controller": self.controller_sample(),
            "others": {name: sample(pid) for name, pid in self.others.items()},
            "machine": parse_cpu_times(Path("/proc/stat").read_text()),
            "t": time.time(),
        }

    def measure(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
        grew = delta(before["metrics"], after["metrics"])
        c0, c1 = before["controller"], after["controller"]
        out: dict[str, Any] = {
            "wall_s": after["t"] - before["t"],
            "controller": client_requests(grew, CTL_PREFIX),
            "deploys": client_requests(grew, DEP_PREFIX),
            "server": server_requests(grew),
            # Every client's requests by resource and code (the 40 most frequent), for drilling down: the flow
            # schemas count by verb only.
            "server_detail": [asdict(row) for row in server_detail(grew)[:40]],
            "cpu_s": c1.cpu_s - c0.cpu_s,
            "children_cpu_s": c1.children_cpu_s - c0.children_cpu_s,
            "rss_kb": c1.rss_kb,
            "hwm_kb": c1.hwm_kb,
        }
        (busy0, total0), (busy1, total1) = before["machine"], after["machine"]
        out["machine_busy"] = (busy1 - busy0) / (total1 - total0) if total1 > total0 else None
        for name in self.others:
            o0, o1 = before["others"][name], after["others"][name]
            out[f"{name}_cpu_s"] = (o1.cpu_s - o0.cpu_s) if o0 and o1 else None
        return out

    def syncs(self, start: float, end: float) -> list[Sync]:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return in_window(parse_log(text, APPS_NS), start, end)

    def cache_at(self, t: float) -> dict[str, float] | None:
        """The controller's last report of its cache before `t`."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        reports = [r for r in parse_cache_log(text) if r["t"] <= t]
        return reports[-1] if reports else None

    def apps(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.kube.json("GET", APPS_PATH)["items"]
        return items

    def versions_of(self, path: str) -> dict[str, str]:
        items = self.kube.json("GET", path)["items"]
        return {f"{path.rsplit('/', 1)[-1]}/{o['metadata']['name']}": o["metadata"]["resourceVersion"] for o in items}

    def snapshot(self) -> dict[str, str]:
        ns = f"/api/v1/namespaces/{APPS_NS}"
        return {
            **self.versions_of(APPS_PATH),
            **self.versions_of(f"{ns}/configmaps"),
            **self.versions_of(f"{ns}/secrets"),
        }

    def event_names(self) -> set[str]:
        items = self.kube.json("GET", f"/api/v1/namespaces/{APPS_NS}/events")["items"]
        return {e["metadata"]["name"] for e in items}

    # ---- setting up

    def setup(self) -> None:
        try:
            self.kube.json("GET", CRD_PATH)
        except KubeError as e:
            if e.status != 404:
                raise
            log(f"no {CRD_NAME} CRD on the cluster: installing config/controller/crd.yml (removed at the end)")
            crd = yaml.safe_load((REPO / "config" / "controller" / "crd.yml").read_text())
            crd["metadata"]["labels"] = LABELS
            self.kube.apply(CRD_PATH, crd)
            self.crd_created = True
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                conditions = self.kube.json("GET", CRD_PATH).get("status", {}).get("conditions") or []
                if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                    break
                time.sleep(0.5)
        self.kubeconfig = identity.setup(
            self.kube,
            self.workdir / "controller.kubeconfig",
            namespace=IDENTITY_NS,
            account=CONTROLLER_SA,
            prefix=CTL_PREFIX,
            labels=LABELS,
        )
        identity.apply_flow_schemas(self.kube, self.deploy_flow_schemas())
        ns_path = f"/api/v1/namespaces/{APPS_NS}"
        with contextlib.suppress(KubeError):  # an earlier run's namespace still terminating
            if self.kube.json("GET", ns_path)["metadata"].get("deletionTimestamp"):
                log(f"waiting for an earlier run's {APPS_NS} to go")
                self.kube.wait_gone([ns_path], timeout=300)
        self.kube.create_namespace(APPS_NS, LABELS)
        for obj in deployer_objects(APPS_NS):
            group = "api/v1" if obj["apiVersion"] == "v1" else "apis/" + obj["apiVersion"]
            plural = {"ServiceAccount": "serviceaccounts", "Role": "roles", "RoleBinding": "rolebindings"}[obj["kind"]]
            self.kube.apply(f"/{group}/namespaces/{APPS_NS}/{plural}/{DEPLOYER}", obj)

    @staticmethod
    def deploy_flow_schemas() -> list[dict[str, object]]:
        return identity.flow_schemas(DEP_PREFIX, [identity.subject(APPS_NS, DEPLOYER)], LABELS)

    def start_controller(self) -> None:
        profile = ["-m", "cProfile", "-o", str(self.args.controller_profile)] if self.args.controller_profile else []
        argv = [
            sys.executable,
            *profile,
            "-m",
            "kapply",
            "controller",
            "--kubeconfig",
            str(self.kubeconfig),
            "-n",
            APPS_NS,
            "--leader-elect=false",
            f"--min-sync-period={self.args.sync_period}",
            f"--default-sync-period={self.args.sync_period}",
            "--concurrency",
            str(self.args.concurrency),
            *(["--debug"] if self.args.controller_debug else []),
        ]
        env = {k: v for k, v in os.environ.items() if k not in ("KAPP_KUBECONFIG", "KUBECONFIG")}
        self.doc["meta"]["controller_argv"] = argv
        before = self.scrape()
        with self.log_path.open("ab") as out:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # a terminal's Ctrl-C reaches the harness only, which stops it
                preexec_fn=_die_with_parent,
            )
        log(f"controller pid {self.proc.pid}, log {self.log_path}")
        deadline = time.monotonic() + 60  # ready: its App watch is open
        while time.monotonic() < deadline:
            self.controller_sample()
            if client_requests(delta(before, self.scrape()), CTL_PREFIX).get("WATCH"):
                return
            time.sleep(0.5)
        raise RuntimeError(f"the controller opened no watch in 60 s; its log: {self.log_path}")

    # ---- phases

    def initial(self) -> None:
        log(f"creating {len(self.names)} Apps")
        start = self.mark()
        for name in self.names:
            manifest = app_manifest(name, APPS_NS, self.args.resources, self.args.sync_period)
            self.kube.json("POST", APPS_PATH, manifest)
        created = time.time()
        ready_at: dict[str, float] = {}
        failures: dict[str, str] = {}
        deadline = time.monotonic() + self.args.timeout
        last_print = 0.0
        while len(ready_at) < len(self.names) and time.monotonic() < deadline:
            now = time.time()
            for app in self.apps():
                state, message = app_state(app)
                name = app["metadata"]["name"]
                if state == "ready":
                    ready_at.setdefault(name, now - start["t"])
                elif state == "failed":
                    failures[name] = message
            if time.monotonic() - last_print > 15:
                log(f"  {len(ready_at)}/{len(self.names)} ReconcileSucceeded, {len(failures)} have failed once")
                last_print = time.monotonic()
            if len(ready_at) < len(self.names):
                self.controller_sample()
                time.sleep(1.0)
        end = self.mark()
        phase = self.measure(start, end)
        phase |= {
            "create_s": created - start["t"],
            "all_ready_s": max(ready_at.values()) if len(ready_at) == len(self.names) else None,
            "not_ready": len(self.names) - len(ready_at),
            "ready_times": stats(list(ready_at.values())),
            "failed_once": dict(sorted(failures.items())[:10]),
            "failed_once_count": len(failures),
            "outcomes": self.outcomes(self.syncs(start["t"], end["t"])),
        }
        self.phases["initial"] = phase
        log(f"initial: all ready after {_fmt_s(phase['all_ready_s'])}")
        if phase["all_ready_s"] is None:
            raise RuntimeError(f"{phase['not_ready']} Apps not ReconcileSucceeded after {self.args.timeout:.0f} s")

    @staticmethod
    def outcomes(syncs: Iterable[Sync]) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in syncs:
            out[s.outcome] = out.get(s.outcome, 0) + 1
        return out

    def steady(self) -> None:
        period = parse_duration(self.args.sync_period)
        length = self.args.steady_periods * period
        log(f"steady state: settling {self.args.settle:.0f} s, then {length:.0f} s of observation")
        time.sleep(self.args.settle)
        objects_before, events_before = self.snapshot(), self.event_names()
        start = self.mark()
        deadline = start["t"] + length
        while time.time() < deadline:
            self.controller_sample()
            time.sleep(min(5.0, max(0.0, deadline - time.time())))
        end = self.mark()
        objects_after, events_after = self.snapshot(), self.event_names()
        syncs = self.syncs(start["t"], end["t"])
        phase = self.measure(start, end)
        phase |= {
            "periods": self.args.steady_periods,
            "syncs": len(syncs),
            "expected_syncs": round(len(self.names) * phase["wall_s"] / period),
            "outcomes": self.outcomes(syncs),
            "intervals": stats(sync_intervals(syncs)),
            "moved": moved(objects_before, objects_after),
            "events_created": len(events_after - events_before),
            "cache": self.cache_at(end["t"]),
        }
        self.phases["steady"] = phase
        log(
            f"steady: {len(syncs)} syncs, controller {_fmt_counts(phase['controller'])}, "
            f"deploys {_fmt_counts(phase['deploys'])}"
        )

    def drift(self) -> None:
        trials = self.args.drift_trials
        if not trials:
            return
        period = parse_duration(self.args.sync_period)
        log(f"drift: {trials} trials")
        start = self.mark()
        results = []
        for trial in range(trials):
            app = self.names[(trial * len(self.names)) // trials]
            cm = resource_name(app, 0)
            path = f"/api/v1/namespaces/{APPS_NS}/configmaps/{cm}"
            desired = self.kube.json("GET", path)["data"]["key"]
            query = urllib.parse.urlencode({"fieldManager": DRIFT_MANAGER})
            t0 = time.monotonic()
            self.kube.json(
                "PATCH",
                f"{path}?{query}",
                {"data": {"key": f"drifted-{trial}"}},
                content_type="application/merge-patch+json",
            )
            reverted: float | None = None
            limit = t0 + 2 * period + 60
            while time.monotonic() < limit:
                if self.kube.json("GET", path)["data"].get("key") == desired:
                    reverted = time.monotonic() - t0
                    break
                time.sleep(0.1)
            results.append({"trial": trial + 1, "app": app, "object": cm, "revert_s": reverted})
            log(f"  trial {trial + 1}: {app} {cm} reverted after {_fmt_s(reverted, 2)}")
            self.controller_sample()
            time.sleep(self.args.drift_pause)
        end = self.mark()
        done = [r["revert_s"] for r in results if r["revert_s"] is not None]
        phase = self.measure(start, end)
        phase |= {
            "trials": results,
            "revert": stats(done),
            "not_reverted": len(results) - len(done),
            "outcomes": self.outcomes(self.syncs(start["t"], end["t"])),
        }
        self.phases["drift"] = phase

    def delete(self) -> None:
        log(f"deleting all {len(self.names)} Apps")
        start = self.mark()
        self.kube.json("DELETE", APPS_PATH, {"kind": "DeleteOptions", "apiVersion": "v1"})
        deadline = time.monotonic() + self.args.timeout
        left = len(self.names)
        gone_at: float | None = None
        last_print = time.monotonic()
        while time.monotonic() < deadline:
            left = len(self.apps())
            if not left:
                gone_at = time.time()
                break
            if time.monotonic() - last_print > 15:
                log(f"  {left} Apps left")
                last_print = time.monotonic()
            self.controller_sample()
            time.sleep(0.5)
        end = self.mark()
        remaining = [
            k
            for k in self.snapshot()
            if k.startswith(("configmaps/", "secrets/")) and k != "configmaps/kube-root-ca.crt"
        ]
        phase = self.measure(start, end)
        phase |= {
            "all_gone_s": None if gone_at is None else gone_at - start["t"],
            "left": left,
            "objects_left": len(remaining),
            "objects_left_names": remaining[:20],
        }
        self.phases["delete"] = phase
        log(f"delete: all gone after {_fmt_s(phase['all_gone_s'])}, {len(remaining)} objects left")

    def run(self) -> None:
        self.setup()
        self.start_controller()
        self.initial()
        self.steady()
        self.drift()
        self.delete()
        self.stop_controller()

    # ---- ending

    def stop_controller(self) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        last = sample(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        result = None
        while time.monotonic() < deadline:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                result = (status, usage)
                break
            time.sleep(0.1)
        if result is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            _, status, usage = os.wait4(proc.pid, 0)
            result = (status, usage)
        status, usage = result
        proc.returncode = os.waitstatus_to_exitcode(status)
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        problems = [
            line for line in text.splitlines() if " WARNING " in line or " ERROR " in line or "Traceback" in line
        ]
        self.doc["controller_exit"] = {
            "exit_code": proc.returncode,
            "cpu_user_s": usage.ru_utime,
            "cpu_sys_s": usage.ru_stime,
            "max_rss_kb": usage.ru_maxrss,
            "hwm_kb": last.hwm_kb if last else 0,
            "problems": len(problems),
            "problem_lines": problems[:15],
        }

    def cleanup(self, wait: bool) -> None:
        """Stop the controller, drop the finalizers it can no longer process, delete what the run made."""
        with contextlib.suppress(Exception):
            self.stop_controller()
        cleanup_cluster(self.kube, wait=wait, crd=self.crd_created)


def cleanup_cluster(kube: Kube, *, wait: bool, crd: bool = False) -> None:
    """Delete the Apps namespace (after removing the Apps' finalizers: no controller processes them any more), the
    identity and flow schemas, and the CRD when this run installed it and no App is left anywhere."""
    with contextlib.suppress(KubeError):
        for app in kube.json("GET", APPS_PATH)["items"]:
            if app["metadata"].get("finalizers"):
                with contextlib.suppress(KubeError):
                    kube.json(
                        "PATCH",
                        f"{APPS_PATH}/{app['metadata']['name']}",
                        {"metadata": {"finalizers": None}},
                        content_type="application/merge-patch+json",
                    )
    ns_paths = [f"/api/v1/namespaces/{APPS_NS}", f"/api/v1/namespaces/{IDENTITY_NS}"]
    with contextlib.suppress(KubeError):
        kube.delete(ns_paths[0])
    identity.delete_flow_schemas(kube, ControllerBench.deploy_flow_schemas())
    identity.teardown(kube, namespace=IDENTITY_NS, prefix=CTL_PREFIX)
    if wait:
        left = kube.wait_gone(ns_paths, timeout=300)
        if left:
            log(f"still terminating after 300 s: {', '.join(left)}")
    if crd:
        with contextlib.suppress(KubeError):
            if not kube.json("GET", "/apis/kapply.dev/v1alpha1/apps")["items"]:
                kube.delete(CRD_PATH)
    log(f"cleaned up ({APPS_NS}, {IDENTITY_NS}, {CTL_PREFIX}*, {DEP_PREFIX}*)")


# ---------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="controller_bench",
        description=__doc__.split("\n\n")[0] if __doc__ else "",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--apps", type=int, default=200, help="Apps (default 200)")
    p.add_argument("--resources", type=int, default=20, help="resources per App (default 20)")
    p.add_argument("--sync-period", default="30s", help="the Apps' syncPeriod and --min-sync-period (default 30s)")
    p.add_argument("--steady-periods", type=int, default=4, help="sync periods of steady state observed (default 4)")
    p.add_argument("--settle", type=float, default=5.0, help="seconds between all ready and steady state (default 5)")
    p.add_argument("--drift-trials", type=int, default=10, help="drift trials (default 10; 0: none)")
    p.add_argument("--drift-pause", type=float, default=3.0, help="seconds between drift trials (default 3)")
    p.add_argument("--concurrency", type=int, default=4, help="the controller's --concurrency (default 4)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds to wait for all ready / all gone (3600)")
    p.add_argument(
        "--controller-debug", action="store_true", help="run the controller with --debug (every request in its log)"
    )
    p.add_argument(
        "--controller-profile",
        type=Path,
        default=None,
        help="run the controller under cProfile, writing its profile here when it stops (read it with pstats)",
    )
    p.add_argument("--kubeconfig", type=Path, default=None, help="admin kubeconfig (default $KUBECONFIG)")
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="where results go (bench/)")
    p.add_argument("--note", default="", help="a line shown at the top of the results, e.g. 'smoke run'")
    p.add_argument("--render", type=Path, default=None, help="only re-render the .md from this controller_results.json")
    p.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="an earlier run's controller_results.json, shown side by side (e.g. the committed one, from git show)",
    )
    p.add_argument("--cleanup", action="store_true", help="only delete what an earlier run left")
    args = p.parse_args(argv)
    try:
        parse_duration(args.sync_period)
    except ValueError as e:
        p.error(f"--sync-period: {e}")
    if args.apps < 1 or args.resources < 1 or args.drift_trials < 0 or args.steady_periods < 1:
        p.error("--apps, --resources and --steady-periods must be at least 1, --drift-trials at least 0")
    return args


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def tool_versions(kube: Kube) -> dict[str, str]:
    kapply = Path(sys.executable).parent / "kapply"
    found = versions(kube, {"kapply": kapply} if kapply.exists() else {})
    ytt = os.environ.get("KAPPLY_YTT") or shutil.which("ytt") or ""
    text = subprocess.run([ytt, "version"], capture_output=True, text=True).stdout.strip() if ytt else "?"
    found["ytt"] = text.removeprefix("ytt version ")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out_json, out_md = args.out / "controller_results.json", args.out / "controller_results.md"
    if args.render:
        args.render.with_suffix(".md").write_text(render(json.loads(args.render.read_text())))
        return 0
    kube = Kube(args.kubeconfig or default_kubeconfig(), retry_s=10)
    try:
        k8s = kube.version()
    except (KubeError, OSError) as e:
        raise SystemExit(f"controller_bench: the cluster does not answer: {e}") from None
    kube.retry_s = 120
    if args.cleanup:
        cleanup_cluster(kube, wait=True)
        return 0
    ytt = os.environ.get("KAPPLY_YTT") or shutil.which("ytt")
    if not ytt or not os.access(ytt, os.X_OK):
        raise SystemExit("controller_bench: the controller needs ytt: set $KAPPLY_YTT or put ytt on PATH")
    args.out.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {
        "meta": {
            "note": args.note,
            "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "command": " ".join(
                shlex.quote(a) for a in ["controller_bench", *(argv if argv is not None else sys.argv[1:])]
            ),
            "machine": machine(),
            "versions": {**tool_versions(kube), "kubernetes": k8s},
            "config": {
                "apps": args.apps,
                "resources": args.resources,
                "sync_period": args.sync_period,
                "sync_period_s": parse_duration(args.sync_period),
                "steady_periods": args.steady_periods,
                "drift_trials": args.drift_trials,
                "concurrency": args.concurrency,
            },
        },
        "phases": {},
    }
    if args.baseline:
        base = json.loads(args.baseline.read_text())
        doc["baseline"] = {
            "command": base["meta"].get("command", ""),
            "started": base["meta"].get("started", ""),
            "commit": base["meta"].get("versions", {}).get("kapply_commit", "?"),
            "summary": summary(base),
        }
    previous_sigterm = signal.signal(signal.SIGTERM, _terminate)
    bench = ControllerBench(args, kube, doc)
    log(f"work directory {bench.workdir}")
    interrupted = False
    failed = False
    try:
        bench.run()
    except KeyboardInterrupt:
        interrupted = True
        log("interrupted: stopping the controller, cleaning up, writing what was measured")
    except (KubeError, OSError, RuntimeError) as e:
        failed = True
        doc.setdefault("harness_errors", []).append(str(e))
        log(f"failed: {e}")
    finally:
        doc["meta"]["finished"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        doc["meta"]["interrupted"] = interrupted
        try:
            bench.cleanup(wait=not interrupted)
        except KeyboardInterrupt:
            log("cleanup interrupted: `python -m bench.controller_bench --cleanup` removes what is left")
        out_json.write_text(json.dumps(doc, indent=2, default=_json_default) + "\n")
        out_md.write_text(render(doc))
        signal.signal(signal.SIGTERM, previous_sigterm)
    log(f"wrote {out_md} and {out_json.name}; controller log {bench.log_path}")
    return 130 if interrupted else (1 if failed else 0)


def _json_default(value: object) -> object:
    if isinstance(value, ProcSample):
        return asdict(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


if __name__ == "__main__":
    sys.exit(main())
