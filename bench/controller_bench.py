"""The App controller at scale: N Apps of M resources each, reconciled by one `kapply controller` process or shared
by several (`--replicas`).

    make bench-controller                                            # 1000 Apps x 20 resources, 30 s sync period
    make bench-controller CBENCH_ARGS="--replicas 3"                 # the same, three sharded replicas
    .venv/bin/python -m bench.controller_bench --apps 20 --resources 5 --sync-period 10s --drift-trials 3  # quick

Phases, in order, against the local control plane (or the cluster of --kubeconfig):

1. initial: every App is created at once (the controller already running and watching); timed until all are
   ReconcileSucceeded for their generation.
   first syncs: one sync period (and `--settle` seconds) in which each App has its first sync after its deploy,
   which plans in full and learns its account's rights: measured, but apart from the steady state.
2. steady: `--steady-periods` sync periods of an unchanged set of Apps: the requests per sync by verb, the writes
   (an unchanged App must cost none), the objects whose resourceVersion moved, and the time between two syncs of one
   App (the sync period, if the controller keeps up).
3. drift: `--drift-trials` times, one ConfigMap of one App is changed by an outside writer (a merge PATCH as another
   field manager) and timed until the controller has set it back.
4. delete: every App is deleted at once; timed until all are gone (their finalizers processed).

The controller runs as a subprocess (`python -m kapply controller -n kapply-cbench-apps --leader-elect=false`) with
a kubeconfig of its own ServiceAccount (bench/identity.py), so that API Priority and Fairness counts its requests
by verb; the Apps deploy with their ServiceAccount `deployer` (TokenRequest tokens the controller asks for), counted
by a second set of flow schemas. With `--replicas N` (N > 1) N such processes share the Apps, each with
`--shards=N` on Leases in kapply-cbench-identity (sharding needs leader election, so no `--leader-elect=false`);
the Apps are created once every replica holds its shard, and the replicas' Lease requests are counted apart (a third
set of flow schemas: they are no App's sync). Each process serves /metrics on a free port of its own. CPU time (own,
and children's: ytt) and RSS come from /proc/PID/stat and /proc/PID/status at the end of each phase, and os.wait4
when a process stops: CPU summed over the replicas, RSS of the largest (and of all together), each replica's kept.
Everything is created in namespaces named kapply-cbench-*, and removed at the end, on Ctrl-C and with --cleanup. The
App CRD and the packaging CRDs (config/packaging/crds.yml: the controller watches PackageRepositories,
PackageInstalls and Packages beside the Apps, and looks again every minute for a kind not served, LISTs that are no
App's sync) are installed, each only when the cluster has none (then removed at the end if none of its objects is
left anywhere).

Results: bench/controller_results.{json,md,png} (with --replicas N: controller_results_replicasN.*); the
controllers' logs are kept in the work directory printed at the start. `--baseline` names an earlier run's results
JSON (the committed one: `git show HEAD:bench/controller_results.json > /tmp/base.json`), shown side by side with
this run against the goals of the watch-fed cache (docs/design.md, "The controller at scale"): per idle sync no
LIST and no GET and at most 5 ms of controller CPU, drift set back within 2 s (p90); with the delete's time and
requests per App, the controller's peak RSS and what its cache holds (from the log's `cache:` lines). `--beside`
names another run of the same commit (the 3-replica run beside the single process's) for a third column, and
`--render X.json --beside Y.json` redraws X's md and plot with it:

    python -m bench.controller_bench --apps 1000 --baseline /tmp/base.json                 # controller_results.*
    python -m bench.controller_bench --apps 1000 --replicas 3 --baseline /tmp/base.json \
        --beside bench/controller_results.json                                             # ..._replicas3.*
    python -m bench.controller_bench --render bench/controller_results.json \
        --beside bench/controller_results_replicas3.json
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
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
import urllib.error
import urllib.parse
import urllib.request
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
LEASE_PREFIX = "kapply-cbench-lease-"  # flow schemas of the controller's requests on Leases (sharded replicas)
LEASE_NAME = "kapply-cbench"  # --lease-name of sharded replicas: their Leases are kapply-cbench-<i>, -member-<j>
LEASE_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
CTL_PRECEDENCE = 3  # of the controller's per-verb flow schemas: after its Lease ones (only `exempt` may have 1)
LABELS = {"app.kubernetes.io/managed-by": "kapply-cbench"}
CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# What the controller watches: Apps, and the packaging kinds (kapply.packaging.process); the ones installed here
CRD_FILES = ("config/controller/crd.yml", "config/packaging/crds.yml")
APPS_PATH = f"/apis/kapply.dev/v1alpha1/namespaces/{APPS_NS}/apps"
DRIFT_MANAGER = "kapply-cbench-drift"
WRITE_VERBS = ("POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION")
SECRET_EVERY = 10  # every 10th resource of an App is a Secret, the others ConfigMaps


# ----------------------------------------------------------- pure helpers (tests/unit/test_controller_bench_harness.py)


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


def bench_crds() -> list[dict[str, Any]]:
    """The CRDs of CRD_FILES, labelled as the run's objects."""
    found = []
    for name in CRD_FILES:
        for crd in yaml.safe_load_all((REPO / name).read_text()):
            if crd and crd.get("kind") == "CustomResourceDefinition":
                crd["metadata"]["labels"] = {**(crd["metadata"].get("labels") or {}), **LABELS}
                found.append(crd)
    return found


def crd_path(crd: Mapping[str, Any]) -> str:
    return f"{CRDS_PATH}/{crd['metadata']['name']}"


def one_object_path(crd: Mapping[str, Any]) -> str:
    """A LIST of at most one of the CRD's objects, in every namespace (by its storage version)."""
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("storage"))
    return f"/apis/{spec['group']}/{version}/{spec['names']['plural']}?limit=1"


def lease_flow_schemas() -> list[dict[str, object]]:
    """One FlowSchema per verb for the controller's requests on the Leases of IDENTITY_NS, matched before its
    per-verb ones (precedence 2 against their CTL_PRECEDENCE): sharded replicas renew their member and shard Leases
    every 5 s, which is no App's sync, so those requests are counted apart."""
    subjects = [identity.subject(IDENTITY_NS, CONTROLLER_SA)]
    leases = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "namespaces": [IDENTITY_NS]}
    return [
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": LEASE_PREFIX + verb, "labels": LABELS},
            "spec": {
                "priorityLevelConfiguration": {"name": "exempt"},
                "matchingPrecedence": CTL_PRECEDENCE - 1,
                "rules": [{"subjects": subjects, "resourceRules": [{"verbs": [verb], **leases}]}],
            },
        }
        for verb in LEASE_VERBS
    ]


def output_stem(replicas: int) -> str:
    """The results' file name without suffix: one process's run is the committed controller_results.*."""
    return "controller_results" if replicas == 1 else f"controller_results_replicas{replicas}"


def profile_path(base: Path, replica: int, replicas: int) -> Path:
    """--controller-profile for one of several replicas: `p.prof` becomes `p-0.prof`, `p-1.prof`, ..."""
    return base if replicas == 1 else base.with_name(f"{base.stem}-{replica}{base.suffix}")


# `python -c PROFILE_STEADY <out> controller ...`: kapply under cProfile timed by the main thread's CPU time (the
# event loop's: wall time would count its waits), recording only between SIGUSR1 and SIGUSR2 (the harness sends them
# at the start and end of the steady state), written to <out> when the process exits.
PROFILE_STEADY = """\
import cProfile, runpy, signal, sys, time
out = sys.argv.pop(1)
profile = cProfile.Profile(time.thread_time)
signal.signal(signal.SIGUSR1, lambda *_: profile.enable())
signal.signal(signal.SIGUSR2, lambda *_: profile.disable())
sys.argv[0] = "kapply"
try:
    runpy.run_module("kapply", run_name="__main__", alter_sys=True)
finally:
    profile.dump_stats(out)
"""


def controller_argv(
    kubeconfig: Path, *, sync_period: str, concurrency: int, replicas: int, debug: bool, profile: Path | None
) -> list[str]:
    """The command of one controller process. One alone runs without a Lease, as the runs before sharding did; each
    of several runs `--shards=<replicas>` on the Leases LEASE_NAME-* of IDENTITY_NS (sharding needs leader
    election, the default). Every process serves /metrics on a free port of its own, named in its log."""
    lease = (
        ["--leader-elect=false"]
        if replicas == 1
        else [f"--shards={replicas}", f"--lease-namespace={IDENTITY_NS}", f"--lease-name={LEASE_NAME}"]
    )
    return [
        sys.executable,
        *(["-c", PROFILE_STEADY, str(profile)] if profile else ["-m", "kapply"]),
        "controller",
        "--kubeconfig",
        str(kubeconfig),
        "-n",
        APPS_NS,
        *lease,
        f"--min-sync-period={sync_period}",
        f"--default-sync-period={sync_period}",
        "--concurrency",
        str(concurrency),
        "--metrics-bind-address=127.0.0.1:0",
        *(["--debug"] if debug else []),
    ]


_SERVING = re.compile(r"INFO kapply\.controller: serving /metrics, /healthz and /readyz on (http://[^,\s]+)")


def metrics_url(log_text: str) -> str | None:
    """Where a controller serves /metrics, /healthz and /readyz, from its log (the first address it names)."""
    m = _SERVING.search(log_text)
    return m.group(1) if m else None


def shards_held(metrics_text: str) -> int | None:
    """`kapply_shards_held` in a controller's /metrics (None when it does not say)."""
    found = parse(metrics_text, ("kapply_shards_held",))
    return int(found[("kapply_shards_held", ())]) if ("kapply_shards_held", ()) in found else None


def combine(before: Sequence[ProcSample], after: Sequence[ProcSample]) -> dict[str, Any]:
    """A phase's CPU and memory over the replicas (one sample of each at either end): CPU, own and children's,
    summed; RSS and peak RSS of the largest replica; and each replica's."""
    each = [
        {
            "cpu_s": a.cpu_s - b.cpu_s,
            "children_cpu_s": a.children_cpu_s - b.children_cpu_s,
            "rss_kb": a.rss_kb,
            "hwm_kb": a.hwm_kb,
        }
        for b, a in zip(before, after, strict=True)
    ]
    return {
        "cpu_s": sum(r["cpu_s"] for r in each),
        "children_cpu_s": sum(r["children_cpu_s"] for r in each),
        "rss_kb": max(r["rss_kb"] for r in each),
        "hwm_kb": max(r["hwm_kb"] for r in each),
        "replicas": each,
    }


def combine_exits(exits: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The processes' ends as one: CPU summed, peak RSS of the largest, the first non-zero exit status, every
    warning and error (the first 15 lines); and each process's."""
    return {
        "exit_code": next((e["exit_code"] for e in exits if e["exit_code"]), 0),
        "cpu_user_s": sum(e["cpu_user_s"] for e in exits),
        "cpu_sys_s": sum(e["cpu_sys_s"] for e in exits),
        "max_rss_kb": max(e["max_rss_kb"] for e in exits),
        "hwm_kb": max(e["hwm_kb"] for e in exits),
        "problems": sum(e["problems"] for e in exits),
        "problem_lines": [line for e in exits for line in e["problem_lines"]][:15],
        "replicas": list(exits),
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
    each = end.get("replicas") or [end]
    out["peak_rss_total_mb"] = sum(e["max_rss_kb"] for e in each) / 1024 if end.get("max_rss_kb") else None
    out["leases_per_min"] = (
        sum(steady["leases"].values()) / steady["wall_s"] * 60 if steady and "leases" in steady else None
    )
    out["cache"] = (steady or {}).get("cache")
    out["apps"] = apps
    out["replicas"] = doc["meta"]["config"].get("replicas", 1)
    return out


def reference(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Another run as this run's results keep it beside their own: how it was run, and its headline numbers."""
    return {
        "command": doc["meta"].get("command", ""),
        "started": doc["meta"].get("started", ""),
        "commit": doc["meta"].get("versions", {}).get("kapply_commit", "?"),
        "summary": summary(doc),
    }


def run_label(s: Mapping[str, Any]) -> str:
    """`1 process, 1000 Apps`, `3 replicas, 1000 Apps`."""
    replicas = s.get("replicas") or 1
    return f"{'1 process' if replicas == 1 else f'{replicas} replicas'}, {s.get('apps') or '?'} Apps"


def columns(doc: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], bool]]:
    """The runs side by side, as (title, summary, is a run of this commit): this run, the run `--beside` it, the
    baseline."""
    now = summary(doc)
    out: list[tuple[str, Mapping[str, Any], bool]] = [(f"this run ({run_label(now)})", now, True)]
    beside = doc.get("beside")
    if beside:
        out.append((f"{run_label(beside['summary'])} ({beside.get('started', '?')[:16]})", beside["summary"], True))
    base = doc.get("baseline")
    if base:
        before = f"before ({base.get('started', '?')[:10]}, {base.get('commit', '?')}, {run_label(base['summary'])})"
        out.append((before, base["summary"], False))
    return out


def _goal_met(key: str, value: float | None) -> str:
    if key not in GOALS or value is None:
        return ""
    return " (met)" if round(value, 2) <= GOALS[key][1] else " (**not met**)"


def _side_by_side(doc: Mapping[str, Any]) -> list[str]:
    """The goals table: this run, the run beside it and the baseline when given, the goal."""
    runs = columns(doc)

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

    def goal(key: str) -> list[str]:
        return [num(s.get(key), 2) + (_goal_met(key, s.get(key)) if mine else "") for _, s, mine in runs]

    def row(title: str, cells: Iterable[str], target: str = "") -> str:
        return f"| {title} | {' | '.join(cells)} | {target} |"

    lines = [
        "## Against the goals",
        "",
        row("", (title for title, _, _ in runs), "goal"),
        "|---|" + "---|" * (len(runs) + 1),
        row("requests per App per idle sync", (counts(s.get("idle")) for _, s, _ in runs), "no LIST, no GET"),
        *(row(GOALS[k][0], goal(k), f"{GOALS[k][1]:g}") for k in GOALS),
        row("delete: all Apps gone (s)", (num(s.get("delete_s"), 1) for _, s, _ in runs)),
        row("delete: requests per App", (counts(s.get("delete_per_app")) for _, s, _ in runs)),
        row("initial: all ReconcileSucceeded (s)", (num(s.get("initial_s"), 1) for _, s, _ in runs)),
        row("controller peak RSS (MB), largest process", (num(s.get("peak_rss_mb"), 0) for _, s, _ in runs)),
        row("controller peak RSS (MB), all processes", (num(s.get("peak_rss_total_mb"), 0) for _, s, _ in runs)),
        row(
            "Lease requests per minute (sharding's, no App sync)",
            (num(s.get("leases_per_min"), 0) for _, s, _ in runs),
        ),
        row("the cache, end of steady state", (cache(s.get("cache")) for _, s, _ in runs)),
    ]
    for key, what in (("beside", "Beside"), ("baseline", "Before")):
        ref = doc.get(key)
        if ref:
            lines += ["", f"{what}: `{ref.get('command', '')}`, {ref.get('started', '')}."]
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
    replicas = cfg.get("replicas", 1)
    processes = (
        "one controller process, `--leader-elect=false`"
        if replicas == 1
        else f"**{replicas} controller processes**, each `--shards={replicas} --lease-namespace={IDENTITY_NS} "
        f"--lease-name={LEASE_NAME}` (leader election on, as sharding needs; the Apps created once each held its "
        "shard)"
    )
    lines += [
        f"- **{cfg['apps']} Apps x {cfg['resources']} resources** (ConfigMaps, a Secret every {SECRET_EVERY}th), all "
        f"in namespace `{APPS_NS}`, inline sources, template `ytt: {{}}`, deploy `kapp: {{}}`; syncPeriod "
        f"{cfg['sync_period']}; {processes}, with `--min-sync-period={cfg['sync_period']} --concurrency "
        f"{cfg['concurrency']}` each.",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']:.1f} GB memory, {m['os']}. The API server, etcd, "
        "kube-controller-manager and the controller all run on this machine, and other engineers' tests may have "
        "used the same cluster at the same time (their requests are in no count below but the server-wide ones).",
        f"- Versions: Kubernetes {v.get('kubernetes', '?')}, {v.get('kapply', '?')}, Python {v.get('python', '?')}, "
        f"commit {v.get('kapply_commit', '?')}, ytt {v.get('ytt', '?')}.",
        "- Requests are counted by the API server (API Priority and Fairness flow schemas per identity, "
        "bench/identity.py): **controller** = the controller's own ServiceAccount (App watch and reads, status "
        "writes, Events, TokenRequests, the drift watches), **deploys** = the Apps' ServiceAccount `deployer` "
        "(everything kapply's deploy and delete do); the controller's requests on its Leases (sharded replicas only) "
        "are counted apart, as **Leases**, and in neither. CPU: the controller processes' own user+system time "
        "(summed over the replicas), and separately their children's "
        "(the sandbox: its jobs and their ytt); peak RSS: of the largest process. The "
        "API server's and etcd's CPU are sampled from /proc too (every client's load, not the controller's alone); "
        "machine busy: all cores together, from /proc/stat (100 % = every core busy for the whole phase). Everyone "
        "else's requests: every client's, as the API server counts them, less the bench identities': the harness's "
        "polls, the cluster's own controllers and other users' tests, whose load the API server and etcd carry too.",
        "",
        "| phase | wall | controller CPU | children CPU (sandbox, ytt) | API server CPU | etcd CPU | machine busy | "
        "peak RSS so far | controller requests | deploy requests | everyone else's requests |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("initial", "first", "steady", "drift", "delete"):
        p = phases.get(name)
        if not p:
            continue
        lines.append(
            f"| {name} | {_fmt_s(p['wall_s'])} | {_fmt_s(p['cpu_s'])} ({p['cpu_s'] / p['wall_s'] * 100:.0f} % of a "
            f"core) | {_fmt_s(p['children_cpu_s'])} | {_fmt_s(p.get('apiserver_cpu_s'))} | "
            f"{_fmt_s(p.get('etcd_cpu_s'))} | {_fmt_pct(p.get('machine_busy'))} | {_mb(p['hwm_kb'])} | "
            f"{_fmt_counts(p['controller'])}"
            + (f"; Leases {_fmt_counts(p['leases'])}" if p.get("leases") else "")
            + f" | {_fmt_counts(p['deploys'])} | {others_requests(p):.0f} |"
        )
    lines.append("")
    lines += _side_by_side(doc)
    if meta.get("plot"):
        lines += [f"![this run beside the others]({meta['plot']})", ""]
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
            f"(+ {initial['children_cpu_s'] / cfg['apps'] * 1000:.0f} ms in the sandbox, ytt included).",
            f"- Requests per App: controller {_fmt_counts(per_sync(initial['controller'], cfg['apps']), 1)}; "
            f"deploy {_fmt_counts(per_sync(initial['deploys'], cfg['apps']), 1)}.",
            "",
        ]
    first = phases.get("first")
    if first:
        n = max(first["syncs"], 1)
        lines += [
            f"Then {_fmt_s(first['wall_s'])} (phase `first`: a sync period and the settling time) in which each App "
            "had its first sync after its deploy, which is not yet idle: its deploy moved the objects under the "
            "cache, so it plans in full, and the first time its account lists a type it asks the API server what it "
            "may list (cluster-wide: refused, once per account and type, then in its namespace from the cache).",
            "",
            f"- {first['syncs']} reconciles logged ({_fmt_counts(first['outcomes'])}); controller CPU "
            f"{first['cpu_s'] / n * 1000:.1f} ms per sync, sandbox (ytt included) "
            f"{first['children_cpu_s'] / n * 1000:.1f} ms.",
            f"- Requests per sync: controller {_fmt_counts(per_sync(first['controller'], n), 2)}; deploy "
            f"{_fmt_counts(per_sync(first['deploys'], n), 2)}.",
            "- Refused by the API server (403, every client's): "
            + (
                ", ".join(
                    f"{r['verb']} {r['resource']} ({r['scope']}) {r['count']}" for r in first.get("refused") or []
                )
                or "none"
            )
            + ".",
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
            f"{steady['cpu_s'] / steady['wall_s'] * 100:.0f} % of one core; sandbox (ytt included) "
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
            f"- What else the cluster did meanwhile: every client's requests {sum(steady['server'].values()):.0f} "
            f"({_fmt_counts(steady['server'])}; the bench's own are above); the watch events a minute the "
            "controller's stores applied, by its minute reports covering the window: "
            + (", ".join(f"{e:.0f}" for e in steady.get("events_per_min") or []) or "-")
            + " (none from this bench's Apps when nothing moved above: other apps' objects, which cost every "
            "replica CPU).",
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
    lines += _limits(doc)
    lines += _replicas(doc)
    errors = doc.get("harness_errors") or []
    if errors:
        lines += ["## Harness errors", ""] + [f"- {e}" for e in errors] + [""]
    return "\n".join(lines).rstrip() + "\n"


def limit(phase: Mapping[str, Any], cores: int, replicas: int) -> str:
    """What held a timed phase back, from where the CPU went (in cores: CPU seconds over wall seconds): a controller
    process using most of a core (its event loop is one thread); else, on a machine busy on every core, whichever
    used most: the control plane (API server and etcd), the controller (with ytt), or everything else (the
    kube-controller-manager, kwok, the harness, other tests on the same cluster); else nothing saturated."""
    wall = phase["wall_s"]
    ours = (phase["cpu_s"] + phase["children_cpu_s"]) / wall
    plane = ((phase.get("apiserver_cpu_s") or 0) + (phase.get("etcd_cpu_s") or 0)) / wall
    busy = phase.get("machine_busy")
    rest = max(0.0, (busy or 0) * cores - plane - ours)
    widest = max((r["cpu_s"] for r in phase.get("replicas") or []), default=phase["cpu_s"]) / wall
    where = (
        f"machine {_fmt_pct(busy)} busy ({cores} cores): API server and etcd {plane:.2f} cores, the controller "
        f"{ours:.2f} with ytt ({'its busiest process ' if replicas > 1 else ''}{widest:.2f} of one core without), "
        f"everything else {rest:.2f}"
    )
    if widest >= 0.9:
        return f"{where}: **the controller's event loop** (a core of its own) is the limit"
    if busy is None or busy < 0.9:
        return f"{where}: nothing saturated; the phase waits (on watches and the API server's answers)"
    top = max((plane, "**the local control plane**, not the controller,"), (ours, "**the controller**"))
    top = max(top, (rest, "**other load on the machine**, not the controller,"))
    return f"{where}: {top[1]} is the limit"


def _limits(doc: Mapping[str, Any]) -> list[str]:
    """The timed phases' limits (the others last as long as the harness watches them)."""
    phases, cfg = doc["phases"], doc["meta"]["config"]
    lines = [
        f"- {name}: {limit(phases[name], doc['meta']['machine']['cores'], cfg.get('replicas', 1))}."
        for name in ("initial", "delete")
        if phases.get(name) and phases[name]["wall_s"] > 0
    ]
    return ["## What limits", "", *lines, ""] if lines else []


def others_requests(phase: Mapping[str, Any]) -> float:
    """Every client's requests in a phase but the bench's identities' (the controller's, its Leases', the deploys'):
    the harness's own reads (its polls of the Apps) and anyone else's on the cluster, which load the same API
    server."""
    ours = (phase["controller"], phase["deploys"], phase.get("leases") or {})
    return float(sum(phase["server"].values()) - sum(sum(c.values()) for c in ours))


def _replicas(doc: Mapping[str, Any]) -> list[str]:
    """Each of several controller processes: its share of the steady state's syncs, its CPU and its memory."""
    end = doc.get("controller_exit") or {}
    each = end.get("replicas") or []
    if len(each) < 2:
        return []
    steady = doc["phases"].get("steady") or {}
    syncs = steady.get("syncs_per_replica") or [None] * len(each)
    cpu = [r["cpu_s"] for r in steady.get("replicas") or []] or [None] * len(each)
    caches = steady.get("caches") or [None] * len(each)
    lines = [
        "## The replicas",
        "",
        "| replica | syncs in the steady state | CPU in the steady state | CPU, whole run (with ytt) | peak RSS | "
        "its cache, end of steady state | warnings and errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, (e, n, c, cache) in enumerate(zip(each, syncs, cpu, caches, strict=True)):
        held = "-" if not cache else f"{cache['objects']} objects"
        lines.append(
            f"| {i} | {'-' if n is None else n} | {_fmt_s(c)} | {_fmt_s(e['cpu_user_s'] + e['cpu_sys_s'])} | "
            f"{_mb(e['max_rss_kb'])} | {held} | {e['problems']} |"
        )
    return [*lines, ""]


def _moved_text(found: Mapping[str, list[str]]) -> str:
    parts = []
    for what in ("created", "updated", "deleted"):
        items = found.get(what) or []
        if items:
            shown = ", ".join(f"`{i}`" for i in items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")
            parts.append(f"{len(items)} {what} ({shown})")
    return "; ".join(parts) or "**none**"


# ---------------------------------------------------------------- controller_results.png

PANELS = (  # summary key, panel title, goal (a dashed line) or None
    ("initial_s", "initial: all Apps\nReconcileSucceeded (s)", None),
    ("idle_requests", "requests per App\nper idle sync", 0.0),
    ("idle_cpu_ms", "controller CPU\nper idle sync (ms)", GOALS["idle_cpu_ms"][1]),
    ("drift_p90_s", "drift set back,\np90 (s)", GOALS["drift_p90_s"][1]),
    ("delete_s", "delete: all Apps\ngone (s)", None),
    ("delete_requests", "delete: requests\nper App", None),
    ("peak_rss_mb", "controller peak RSS (MB),\nlargest process", None),
)


def plot_bars(doc: Mapping[str, Any]) -> list[tuple[str, dict[str, float | None]]]:
    """The plot's bars: for the baseline first, then this commit's runs by replicas, a label and each PANELS value
    (None: not measured)."""
    runs = columns(doc)
    ordered = [c for c in runs if not c[2]] + sorted((c for c in runs if c[2]), key=lambda c: c[1].get("replicas") or 1)
    out = []
    for _, s, mine in ordered:
        label = run_label(s).replace(", ", "\n")
        if not mine:
            label = f"before\n{s.get('apps') or '?'} Apps"
        values: dict[str, float | None] = {key: s.get(key) for key, _, _ in PANELS}
        values["idle_requests"] = None if s.get("idle") is None else sum(s["idle"].values())
        values["delete_requests"] = None if s.get("delete_per_app") is None else sum(s["delete_per_app"].values())
        out.append((label, values))
    return out


def plot(doc: Mapping[str, Any], path: Path) -> str | None:
    """One bar panel per headline number (PANELS), a bar per run (the baseline's, this run's, the run beside it),
    the goal as a dashed line. Returns why no plot was written, or None."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install -e '.[bench]')"
    bars = plot_bars(doc)
    colors = ["#999999" if label.startswith("before") else f"C{i}" for i, (label, _) in enumerate(bars)]
    fig, axes = plt.subplots(1, len(PANELS), figsize=(2.5 * len(PANELS), 3.6), squeeze=False)
    for ax, (key, title, goal) in zip(axes[0], PANELS, strict=True):
        xs = range(len(bars))
        heights = [values[key] or 0.0 for _, values in bars]
        ax.bar(xs, heights, color=colors)
        for x, (_, values) in zip(xs, bars, strict=True):
            value = values[key]
            text = "-" if value is None else f"{value:.3g}" if value < 100 else f"{value:.0f}"
            ax.annotate(text, (x, value or 0.0), ha="center", va="bottom", fontsize=7)
        if goal is not None:
            ax.axhline(goal, color="black", linestyle="--", linewidth=1)
        ax.set_xticks(list(xs), [label for label, _ in bars], fontsize=7)
        ax.set_title(title + ("" if goal is None else f"\n(goal ≤ {goal:g}, dashed)"), fontsize=8)
        ax.margins(y=0.15)
        ax.grid(True, axis="y", alpha=0.3)
    cfg = doc["meta"]["config"]
    fig.suptitle(
        f"The controller at scale: {cfg['apps']} Apps x {cfg['resources']} resources, sync period "
        f"{cfg['sync_period']}; before = the last run of the baseline commit",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


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


def _http_get(url: str) -> tuple[int, str]:
    """(status, body) of a GET of a controller's own endpoint; (0, "") when it does not answer."""
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except OSError:
        return 0, ""


def sample(pid: int | None) -> ProcSample | None:
    if pid is None:
        return None
    try:
        own = parse_proc(
            Path(f"/proc/{pid}/stat").read_text(),
            Path(f"/proc/{pid}/status").read_text(),
            os.sysconf("SC_CLK_TCK"),
            time.time(),
        )
    except OSError:
        return None
    return dataclasses.replace(own, children_cpu_s=own.children_cpu_s + live_children_cpu(pid))


def live_children_cpu(pid: int) -> float:
    """The CPU seconds of `pid`'s running children and of the children they reaped: the sandbox's zygote, whose jobs
    (and their ytt) run the Apps' fetch and template stages (kapply.controller.sandbox)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            total += sum(int(x) for x in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


class ControllerBench:
    def __init__(self, args: argparse.Namespace, kube: Kube, doc: dict[str, Any]) -> None:
        self.args = args
        self.kube = kube
        self.doc = doc
        self.phases: dict[str, Any] = doc["phases"]
        self.workdir = Path(tempfile.mkdtemp(prefix="kapply-cbench-"))
        self.replicas: int = args.replicas
        names = ["controller.log"] if self.replicas == 1 else [f"controller-{i}.log" for i in range(self.replicas)]
        self.log_paths = [self.workdir / name for name in names]
        doc["meta"]["controller_logs"] = [str(path) for path in self.log_paths]
        self.procs: list[subprocess.Popen[bytes]] = []
        self.crds_created: list[dict[str, Any]] = []
        self.names = [app_name(i) for i in range(args.apps)]
        self.others = {"apiserver": find_pid("kube-apiserver"), "etcd": find_pid("etcd")}

    # ---- observing

    def scrape(self) -> dict[Series, float]:
        return parse(self.kube.text("/metrics"))

    def controller_sample(self) -> list[ProcSample]:
        """A sample of every controller process; RuntimeError when one has exited."""
        out = []
        for proc, path in zip(self.procs, self.log_paths, strict=True):
            got = sample(proc.pid)
            if got is None or proc.poll() is not None:
                raise RuntimeError(f"a controller exited (status {proc.poll()}); its log: {path}")
            out.append(got)
        return out

    def log_texts(self) -> list[str]:
        return [path.read_text(errors="replace") if path.exists() else "" for path in self.log_paths]

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
        out: dict[str, Any] = {
            "wall_s": after["t"] - before["t"],
            "controller": client_requests(grew, CTL_PREFIX),
            "deploys": client_requests(grew, DEP_PREFIX),
            "leases": client_requests(grew, LEASE_PREFIX),
            "server": server_requests(grew),
            # Every client's requests by resource and code (the 40 most frequent), for drilling down: the flow
            # schemas count by verb only.
            "server_detail": [asdict(row) for row in server_detail(grew)[:40]],
            # What the API server refused (every client's): a namespaced account's first cluster-wide LISTs.
            "refused": [asdict(row) for row in server_detail(grew) if row.code == "403"],
            **combine(before["controller"], after["controller"]),
        }
        (busy0, total0), (busy1, total1) = before["machine"], after["machine"]
        out["machine_busy"] = (busy1 - busy0) / (total1 - total0) if total1 > total0 else None
        for name in self.others:
            o0, o1 = before["others"][name], after["others"][name]
            out[f"{name}_cpu_s"] = (o1.cpu_s - o0.cpu_s) if o0 and o1 else None
        return out

    def syncs_each(self, start: float, end: float) -> list[list[Sync]]:
        """Each controller process's reconciles in the window."""
        return [in_window(parse_log(text, APPS_NS), start, end) for text in self.log_texts()]

    def syncs(self, start: float, end: float) -> list[Sync]:
        return sorted((s for each in self.syncs_each(start, end) for s in each), key=lambda s: s.t)

    def events_during(self, start: float, end: float) -> list[float]:
        """The watch events a minute the first controller process applied, from each of its cache reports that
        covers part of the window (a report counts the minute before it)."""
        reports = parse_cache_log(self.log_texts()[0])
        return [r["events_per_min"] for r in reports if start < r["t"] and r["t"] - 60 < end]

    def caches_at(self, t: float) -> list[dict[str, float] | None]:
        """Each controller process's last report of its cache before `t`."""
        reports = [[r for r in parse_cache_log(text) if r["t"] <= t] for text in self.log_texts()]
        return [each[-1] if each else None for each in reports]

    def apps(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.kube.json("GET", APPS_PATH)["items"]
        return items

    def apps_left(self) -> int:
        """How many Apps there are, from a LIST of one (its remainingItemCount): polling the whole list of a
        thousand Apps (megabytes) twice a second would load the API server the delete is timed against."""
        page = self.kube.json("GET", f"{APPS_PATH}?limit=1")
        return len(page["items"]) + int(page["metadata"].get("remainingItemCount") or 0)

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
        self.crds_created = install_crds(self.kube)
        wait_established(self.kube, self.crds_created)
        self.kubeconfig = identity.setup(
            self.kube,
            self.workdir / "controller.kubeconfig",
            namespace=IDENTITY_NS,
            account=CONTROLLER_SA,
            prefix=CTL_PREFIX,
            labels=LABELS,
            precedence=CTL_PRECEDENCE,
        )
        identity.apply_flow_schemas(self.kube, [*self.deploy_flow_schemas(), *lease_flow_schemas()])
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
        env = {k: v for k, v in os.environ.items() if k not in ("KAPP_KUBECONFIG", "KUBECONFIG")}
        argvs = [
            controller_argv(
                self.kubeconfig,
                sync_period=self.args.sync_period,
                concurrency=self.args.concurrency,
                replicas=self.replicas,
                debug=self.args.controller_debug,
                profile=profile_path(self.args.controller_profile, i, self.replicas)
                if self.args.controller_profile
                else None,
            )
            for i in range(self.replicas)
        ]
        self.doc["meta"]["controller_argv"] = argvs[0]
        for argv, path in zip(argvs, self.log_paths, strict=True):
            with path.open("ab") as out:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,  # a terminal's Ctrl-C reaches the harness only, which stops it
                    preexec_fn=_die_with_parent,
                )
            self.procs.append(proc)
            log(f"controller pid {proc.pid}, log {path}")
        self.wait_ready()

    def wait_ready(self, timeout: float = 90) -> None:
        """Until every process answers /readyz (its App watch has listed the Apps) and, when there are several,
        each holds a shard and together they hold all: the Apps are then created into a settled division, and the
        initial phase times reconciling, not the replicas finding each other."""
        deadline = time.monotonic() + timeout
        urls: list[str | None] = [None] * self.replicas
        why = "no process serves /readyz yet"
        while time.monotonic() < deadline:
            self.controller_sample()
            texts = self.log_texts()
            urls = [url or metrics_url(text) for url, text in zip(urls, texts, strict=True)]
            ready = [url is not None and _http_get(url + "/readyz")[0] == 200 for url in urls]
            held = [shards_held(_http_get(url + "/metrics")[1]) if url else None for url in urls]
            if self.replicas == 1 and all(ready):
                return
            if all(ready) and all(held) and sum(h or 0 for h in held) == self.replicas:
                log(f"every replica ready, shards held: {held}")
                return
            why = f"ready {ready}, shards held {held}"
            time.sleep(0.5)
        raise RuntimeError(f"the controllers were not ready after {timeout:.0f} s ({why}); logs: {self.workdir}")

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

    def first_syncs(self) -> None:
        """From all ready, one sync period and --settle seconds: each App's first sync after its deploy. That sync
        plans in full (the deploy moved the objects under the cache, so nothing it read before is known unchanged)
        and, the first time its account lists a type, asks the API server what the account may list (a namespaced
        account is refused the cluster-wide LIST once, then lists in its namespace from the cache): not yet the idle
        sync the steady state measures, so measured apart."""
        period = parse_duration(self.args.sync_period)
        log(f"first syncs after the deploys: {period + self.args.settle:.0f} s")
        start = self.mark()
        deadline = start["t"] + period + self.args.settle
        while time.time() < deadline:
            self.controller_sample()
            time.sleep(min(5.0, max(0.0, deadline - time.time())))
        end = self.mark()
        syncs = self.syncs(start["t"], end["t"])
        phase = self.measure(start, end)
        phase |= {"syncs": len(syncs), "outcomes": self.outcomes(syncs)}
        self.phases["first"] = phase
        log(
            f"first syncs: {len(syncs)}, controller {_fmt_counts(phase['controller'])}, "
            f"deploys {_fmt_counts(phase['deploys'])}"
        )

    def steady(self) -> None:
        period = parse_duration(self.args.sync_period)
        length = self.args.steady_periods * period
        log(f"steady state: {length:.0f} s of observation")
        objects_before, events_before = self.snapshot(), self.event_names()
        self.profiling(signal.SIGUSR1)
        start = self.mark()
        deadline = start["t"] + length
        while time.time() < deadline:
            self.controller_sample()
            time.sleep(min(5.0, max(0.0, deadline - time.time())))
        end = self.mark()
        self.profiling(signal.SIGUSR2)
        objects_after, events_after = self.snapshot(), self.event_names()
        each = self.syncs_each(start["t"], end["t"])
        syncs = [s for one in each for s in one]
        caches = self.caches_at(end["t"])
        phase = self.measure(start, end)
        phase |= {
            "periods": self.args.steady_periods,
            "syncs": len(syncs),
            "expected_syncs": round(len(self.names) * phase["wall_s"] / period),
            "outcomes": self.outcomes(syncs),
            "intervals": stats(sync_intervals(syncs)),
            "moved": moved(objects_before, objects_after),
            "events_created": len(events_after - events_before),
            "cache": caches[0],
            "events_per_min": self.events_during(start["t"], end["t"]),
            "caches": caches,
            "syncs_per_replica": [len(one) for one in each],
        }
        self.phases["steady"] = phase
        log(
            f"steady: {len(syncs)} syncs, controller {_fmt_counts(phase['controller'])}, "
            f"deploys {_fmt_counts(phase['deploys'])}"
        )

    def profiling(self, start_or_stop: signal.Signals) -> None:
        """With --controller-profile: start (SIGUSR1) or stop (SIGUSR2) every controller's profile."""
        if self.args.controller_profile:
            for proc in self.procs:
                os.kill(proc.pid, start_or_stop)

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
            left = self.apps_left()
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
        self.first_syncs()
        self.steady()
        self.drift()
        self.delete()
        self.stop_controller()

    # ---- ending

    def stop_controller(self) -> None:
        """SIGTERM every controller process at once (SIGKILL after 15 s), and keep how each ended."""
        running = [
            (proc, path) for proc, path in zip(self.procs, self.log_paths, strict=True) if proc.returncode is None
        ]
        if not running:
            return
        last = {proc.pid: sample(proc.pid) for proc, _ in running}
        for proc, _ in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        exits = []
        for proc, path in running:
            result = None
            while result is None and time.monotonic() < deadline:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    result = (status, usage)
                else:
                    time.sleep(0.1)
            if result is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                result = (status, usage)
            status, usage = result
            proc.returncode = os.waitstatus_to_exitcode(status)
            text = path.read_text(errors="replace") if path.exists() else ""
            problems = [
                line for line in text.splitlines() if " WARNING " in line or " ERROR " in line or "Traceback" in line
            ]
            hwm = last[proc.pid]
            exits.append(
                {
                    "exit_code": proc.returncode,
                    "cpu_user_s": usage.ru_utime,
                    "cpu_sys_s": usage.ru_stime,
                    "max_rss_kb": usage.ru_maxrss,
                    "hwm_kb": hwm.hwm_kb if hwm else 0,
                    "problems": len(problems),
                    "problem_lines": problems[:15],
                }
            )
        self.doc["controller_exit"] = combine_exits(exits)

    def cleanup(self, wait: bool) -> None:
        """Stop the controller, drop the finalizers it can no longer process, delete what the run made."""
        with contextlib.suppress(Exception):
            self.stop_controller()
        cleanup_cluster(self.kube, wait=wait, crds=self.crds_created)


def install_crds(kube: Kube) -> list[dict[str, Any]]:
    """Install those of bench_crds() the cluster has not; the ones installed. Without the packaging CRDs, the
    controller's watches of their kinds are answered 404 and LIST again every minute
    (kapply.controller.main.UNSERVED_RETRY): requests the steady state would count as the Apps' syncs'."""
    created = []
    for crd in bench_crds():
        if not kube.exists(crd_path(crd)):
            log(f"no {crd['metadata']['name']} CRD on the cluster: installing it (removed at the end)")
            kube.apply(crd_path(crd), crd)
            created.append(crd)
    return created


def established(crd: Mapping[str, Any]) -> bool:
    conditions = crd.get("status", {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def wait_established(kube: Kube, crds: Sequence[Mapping[str, Any]], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    waiting = list(crds)
    while True:
        waiting = [crd for crd in waiting if not established(kube.json("GET", crd_path(crd)))]
        if not waiting:
            return
        if time.monotonic() > deadline:
            names = ", ".join(crd["metadata"]["name"] for crd in waiting)
            raise RuntimeError(f"CRDs not established after {timeout:.0f} s: {names}")
        time.sleep(0.5)


def cleanup_cluster(kube: Kube, *, wait: bool, crds: Sequence[Mapping[str, Any]] = ()) -> None:
    """Delete the Apps namespace (after removing the Apps' finalizers: no controller processes them any more), the
    identity and flow schemas, and each of `crds` (the ones this run installed) of which no object is left
    anywhere."""
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
    identity.delete_flow_schemas(kube, [*ControllerBench.deploy_flow_schemas(), *lease_flow_schemas()])
    identity.teardown(kube, namespace=IDENTITY_NS, prefix=CTL_PREFIX)
    if wait:
        left = kube.wait_gone(ns_paths, timeout=300)
        if left:
            log(f"still terminating after 300 s: {', '.join(left)}")
    for crd in crds:
        with contextlib.suppress(KubeError):
            if not kube.json("GET", one_object_path(crd))["items"]:
                kube.delete(crd_path(crd))
    log(f"cleaned up ({APPS_NS}, {IDENTITY_NS}, {CTL_PREFIX}*, {DEP_PREFIX}*, {LEASE_PREFIX}*)")


# ---------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="controller_bench",
        description=__doc__.split("\n\n")[0] if __doc__ else "",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--apps", type=int, default=1000, help="Apps (default 1000)")
    p.add_argument("--resources", type=int, default=20, help="resources per App (default 20)")
    p.add_argument("--sync-period", default="30s", help="the Apps' syncPeriod and --min-sync-period (default 30s)")
    p.add_argument("--steady-periods", type=int, default=4, help="sync periods of steady state observed (default 4)")
    p.add_argument(
        "--settle",
        type=float,
        default=5.0,
        help="seconds beyond one sync period between all ready and the steady state (default 5)",
    )
    p.add_argument("--drift-trials", type=int, default=10, help="drift trials (default 10; 0: none)")
    p.add_argument("--drift-pause", type=float, default=3.0, help="seconds between drift trials (default 3)")
    p.add_argument(
        "--concurrency",
        type=int,
        default=8,
        help="the controller's --concurrency (default 8, its default: 4 per namespace)",
    )
    p.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="controller processes (default 1); more share the Apps with --shards=N (results: ..._replicasN.*)",
    )
    p.add_argument("--timeout", type=float, default=3600, help="seconds to wait for all ready / all gone (3600)")
    p.add_argument(
        "--controller-debug", action="store_true", help="run the controller with --debug (every request in its log)"
    )
    p.add_argument(
        "--controller-profile",
        type=Path,
        default=None,
        help="profile the controller's steady state (cProfile, CPU time of its event loop's thread), written here "
        "when it stops (read it with pstats; with --replicas N: one file per replica, NAME-i.prof)",
    )
    p.add_argument("--kubeconfig", type=Path, default=None, help="admin kubeconfig (default $KUBECONFIG)")
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="where results go (bench/)")
    p.add_argument("--note", default="", help="a line shown at the top of the results, e.g. 'smoke run'")
    p.add_argument(
        "--render",
        type=Path,
        default=None,
        help="only re-render the .md and .png of this results JSON (with --baseline/--beside: kept in it too)",
    )
    p.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="an earlier run's controller_results.json, shown side by side (e.g. the committed one, from git show)",
    )
    p.add_argument(
        "--beside",
        type=Path,
        default=None,
        help="another run of this commit (e.g. the --replicas 3 run's JSON), shown side by side too",
    )
    p.add_argument("--cleanup", action="store_true", help="only delete what an earlier run left")
    args = p.parse_args(argv)
    try:
        parse_duration(args.sync_period)
    except ValueError as e:
        p.error(f"--sync-period: {e}")
    if args.apps < 1 or args.resources < 1 or args.drift_trials < 0 or args.steady_periods < 1 or args.replicas < 1:
        p.error("--apps, --resources, --steady-periods and --replicas must be at least 1, --drift-trials at least 0")
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
    if args.render:
        rerender(args)
        return 0
    out_json = args.out / f"{output_stem(args.replicas)}.json"
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
                "replicas": args.replicas,
            },
        },
        "phases": {},
    }
    attach(doc, args)
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
        write_report(doc, out_json)
        out_json.write_text(json.dumps(doc, indent=2, default=_json_default) + "\n")
        signal.signal(signal.SIGTERM, previous_sigterm)
    log(f"wrote {out_json.with_suffix('.md')}, .json and .png; controller logs in {bench.workdir}")
    return 130 if interrupted else (1 if failed else 0)


def attach(doc: dict[str, Any], args: argparse.Namespace) -> None:
    """Keep the --baseline and --beside runs' headline numbers in this run's document."""
    for key, path in (("baseline", args.baseline), ("beside", args.beside)):
        if path:
            doc[key] = reference(json.loads(path.read_text()))


def rerender(args: argparse.Namespace) -> None:
    """--render: the .md and .png of a results JSON again, with the --baseline and --beside given (then kept in it)."""
    doc = json.loads(args.render.read_text())
    if args.baseline or args.beside:
        attach(doc, args)
        args.render.write_text(json.dumps(doc, indent=2) + "\n")
    write_report(doc, args.render)


def write_report(doc: dict[str, Any], json_path: Path) -> None:
    """The .md beside the results JSON, and the .png it shows (the md says when there is none)."""
    png = json_path.with_suffix(".png")
    why_not = plot(doc, png)
    doc["meta"]["plot"] = None if why_not else png.name
    if why_not:
        log(f"no plot: {why_not}")
    json_path.with_suffix(".md").write_text(render(doc))


def _json_default(value: object) -> object:
    if isinstance(value, ProcSample):
        return asdict(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


if __name__ == "__main__":
    sys.exit(main())
