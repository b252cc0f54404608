"""kapp and kapply side by side on the same cluster: same manifests, same flags, alternating, repeated.

    make bench                                             # everything (hours at N = 5,000: see below)
    KAPPLY_KAPP=../shared/tools/kapp .venv/bin/python -m bench.sidebyside --sizes 100 --deployments '' --crs '' \\
        --repeat 1 --out /tmp/bench                        # a small run

Workloads (bench/workloads.py): the mix (ConfigMaps 80 %, Secrets 10 %, Services 10 %) at each `--sizes`,
Deployments at each `--deployments`, custom resources at each `--crs`. Steps, in this order, each a separate run of
the tool as a user would type it: initial deploy, no-change redeploy, `--diff-run` of the 10 % change (before it is
applied), the 10 % change, delete. Each tool deploys each workload into a fresh namespace per repetition; the order of
the tools alternates from one repetition to the next. A step that fails is recorded with the last lines of its output
and the tool's remaining steps of that repetition are skipped; the run goes on.

Per step: wall time and the client's CPU time and peak RSS (`os.wait4` of the child), and the requests the API
server counted (bench/metrics.py, bench/identity.py), from /metrics before and after the step.

At a distance: `--rtt 0,20,50` runs every workload at each round-trip time, the tools reaching the API server
through bench/delay_proxy.py (each direction delayed by RTT/2; TLS passes through, only the kubeconfig's port
differs) for every RTT above 0, and over loopback at 0. Through the proxy, each step also records the round trips on
its critical path as the proxy saw them (bench/why.md, "Round trips on the critical path"). Raw measurements go
to results.json after every step, the summary to results.md and results.png at the end (and on Ctrl-C).

kapp is found through --kapp, $KAPPLY_KAPP or PATH; kapply through --kapply, $KAPPLY_KAPPLY, the `kapply` next to
this interpreter, or PATH. Both are run as subprocesses; nothing of kapply is imported here.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: bench/sidebyside.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import identity, report
from bench.delay_proxy import DelayProxy, critical_path
from bench.kube import Kube, KubeError
from bench.metrics import DISPATCHED, REQUESTS, Series, StepRequests, parse, step_requests
from bench.workloads import CRD_NAME, NS, Workload, crd, for_namespace, parse_workloads

REPO = Path(__file__).resolve().parents[1]
APP = "bench"
STEPS = report.STEPS
RUN_LABEL = "kapply-bench-run"
TAIL_LINES = 15


class Interrupted(Exception):
    """Ctrl-C while a tool ran: the tool was stopped."""


class HarnessError(Exception):
    """The harness's own set-up on the cluster failed (not a tool's step)."""


# What makes the harness give up on one app or workload and go on with the next (URLError is an OSError).
HARNESS_ERRORS = (KubeError, OSError, HarnessError)


# ---------------------------------------------------------------- running a tool


@dataclass(frozen=True)
class Process:
    """One finished client process as measured: wall time from spawn to reaping, and its own resource usage."""

    exit_code: int
    wall_s: float
    cpu_user_s: float
    cpu_sys_s: float
    max_rss_kb: int
    output_tail: str
    timed_out: bool = False


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


# Peak RSS needs a go-between. Linux records, when a process calls exec, the high-water RSS of the memory it had
# before (a copy of its parent's) into the `ru_maxrss` its parent will read: a tool spawned straight from this harness
# would report at least the harness's own RSS (measured: /bin/true "used" 212 MB when spawned from a 212 MB
# process). So a fresh, small interpreter (about 8 MB) spawns the tool, reaps it, and reports the tool's own rusage
# and its spawn-to-reap wall time; 8 MB is the floor of the peak RSS this can report.
_SPAWNER = """
import os, sys, time
out, argv = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
pid = os.posix_spawnp(argv[0], argv, os.environ)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - start
import json
with open(out, "w") as f:
    json.dump({"wall": wall, "status": status, "utime": ru.ru_utime, "stime": ru.ru_stime, "maxrss": ru.ru_maxrss}, f)
"""


def run_measured(argv: Sequence[str], env: dict[str, str], timeout: float) -> Process:
    """Run argv to completion and measure it: wall time from spawn to reaping, and the process's own user and system
    CPU time and peak RSS (`os.wait4`, through `_SPAWNER`). It runs in its own session, so a terminal's Ctrl-C
    reaches only the harness, which then stops it (and raises Interrupted)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp, "rusage.json")
        spawner = [sys.executable, "-I", "-S", "-c", _SPAWNER, str(report_path), *argv]
        start = time.perf_counter()
        proc = subprocess.Popen(
            spawner, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, start_new_session=True
        )
        timed_out = False
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop(proc)
        except KeyboardInterrupt:
            _stop(proc)
            raise Interrupted from None
        outer_wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        output = tail(err.read().decode(errors="replace")) or tail(out.read().decode(errors="replace"))
        try:
            usage = json.loads(report_path.read_text())
        except (OSError, ValueError):  # the spawner itself was stopped or could not start the tool
            return Process(proc.returncode or -1, outer_wall, 0.0, 0.0, 0, output, timed_out)
        return Process(
            exit_code=os.waitstatus_to_exitcode(usage["status"]),
            wall_s=usage["wall"],
            cpu_user_s=usage["utime"],
            cpu_sys_s=usage["stime"],
            max_rss_kb=usage["maxrss"],  # KiB on Linux
            output_tail=output,
            timed_out=timed_out,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group of the spawner and the tool; SIGKILL to whatever is left of it 10 s later."""
    deadline = time.monotonic() + 10
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)  # reaps the spawner: a zombie still counts as a member of the group
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def find_tool(name: str, explicit: str | None, env_var: str, extra: Sequence[Path] = ()) -> Path:
    """The named tool: an explicit path, else $env_var, else the extra candidates, else PATH. Exits with a message
    naming every place looked at when none is an executable file."""
    looked: list[str] = []
    for label, candidate in ((f"--{name}", explicit), (f"${env_var}", os.environ.get(env_var))):
        if candidate:
            path = Path(candidate).expanduser()
            if path.is_file() and os.access(path, os.X_OK):
                return path.resolve()
            raise SystemExit(f"sidebyside: {label} names {candidate}, which is not an executable file")
        looked.append(f"{label} (not set)")
    for path in extra:
        if path.is_file() and os.access(path, os.X_OK):
            return path
        looked.append(str(path))
    found = shutil.which(name)
    if found:
        return Path(found)
    looked.append("PATH")
    raise SystemExit(
        f"sidebyside: {name} not found (looked at {', '.join(looked)}). "
        f"Set {env_var}=/path/to/{name}, e.g. {env_var}=../shared/tools/{name}"
    )


# KUBECONFIG is the bench's own; PYTHONDONTWRITEBYTECODE (set on some build machines) would make every kapply run
# compile its modules and dataclasses' methods again, which a user's second run never does.
NOT_PASSED = frozenset({"KUBECONFIG", "PYTHONDONTWRITEBYTECODE"})


def tool_env(kubeconfig: Path) -> dict[str, str]:
    """The environment both tools run in: the harness's, without anything that would point them elsewhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAPP_") and k not in NOT_PASSED}
    env["KUBECONFIG"] = str(kubeconfig)
    return env


# ---------------------------------------------------------------- what one run records


@dataclass
class StepRun:
    """One measured step of one tool in one repetition: a row of results.json's `runs`."""

    workload: str
    kind: str
    n: int
    tool: str
    rep: int
    position: int  # 0: this tool ran first in this repetition
    step: str
    ok: bool
    exit_code: int
    wall_s: float
    cpu_user_s: float
    cpu_sys_s: float
    max_rss_kb: int
    namespace: str
    argv: list[str]
    requests: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    started: str = ""
    rtt_ms: int = 0
    path: dict[str, int] = field(default_factory=dict)  # delay_proxy.PathCount, through the proxy only


@dataclass(frozen=True)
class Config:
    workloads: list[Workload]
    steps: list[str]
    tools: list[str]
    repeat: int
    wait_check_interval: str
    settle_s: float
    step_timeout_s: float
    rtts_ms: list[int] = field(default_factory=lambda: [0])

    @property
    def deploy_flags(self) -> list[str]:
        return ["-y", "--tty=false", f"--wait-check-interval={self.wait_check_interval}"]


WARM_UP = f"""apiVersion: v1
kind: ConfigMap
metadata:
  name: warm-up
  namespace: {NS}
data:
  a: b
"""


def command(tool: Path, step: str, namespace: str, manifest: Path | None, flags: Sequence[str]) -> list[str]:
    """The command line of a step, the same for both tools but for the program."""
    if step == "delete":
        return [str(tool), "delete", "-a", APP, "-n", namespace, *flags]
    assert manifest is not None
    extra = ["--diff-run"] if step == "diff-run" else []
    return [str(tool), "deploy", "-a", APP, "-n", namespace, "-f", str(manifest), *flags, *extra]


# ---------------------------------------------------------------- the run


class Bench:
    def __init__(self, config: Config, kube: Kube, tools: dict[str, Path], out: Path, meta: dict[str, Any]) -> None:
        self.config = config
        self.kube = kube
        self.tools = tools
        self.out = out
        self.meta = meta
        self.runs: list[StepRun] = []
        self.run_id = uuid.uuid4().hex[:5]
        self.namespaces: set[str] = set()  # made and not yet deleted
        self.crd_made = False
        self.workdir = Path(tempfile.mkdtemp(prefix="kapply-bench-"))
        self.env: dict[str, str] = {}
        self.envs: dict[int, dict[str, str]] = {}  # per RTT
        self.proxies: dict[int, DelayProxy] = {}  # per RTT above 0
        self.rtt_ms = 0

    # -- bookkeeping

    def scrape(self) -> dict[Series, float]:
        return parse(self.kube.text("/metrics"), (REQUESTS, DISPATCHED))

    def save(self) -> None:
        doc = self.document()
        tmp = self.out / "results.json.tmp"
        tmp.write_text(json.dumps(doc, indent=1))
        tmp.replace(self.out / "results.json")

    def document(self) -> dict[str, Any]:
        return {"meta": self.meta, "runs": [dataclasses.asdict(r) for r in self.runs]}

    def log(self, msg: str) -> None:
        print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)

    # -- cluster objects of the harness

    def make_namespace(self, workload: Workload, tool: str, rep: int) -> str:
        name = f"bench-{self.run_id}-{workload.name}-{tool}-{self.rtt_ms}ms-r{rep + 1}"
        self.kube.create_namespace(name, {RUN_LABEL: self.run_id, "app.kubernetes.io/managed-by": "kapply-bench"})
        self.namespaces.add(name)
        return name

    def drop_namespace(self, name: str, wait: bool = True) -> None:
        """Delete the namespace and (outside any measured step) wait until it is gone, so that the namespace
        controller's work of emptying it never lands in a later step's counts."""
        self.kube.delete(f"/api/v1/namespaces/{name}")
        if wait:
            left = self.kube.wait_gone([f"/api/v1/namespaces/{name}"], timeout=600)
            if left:
                self.log(f"namespace {name} still terminating after 600 s; going on")
        self.namespaces.discard(name)

    def ensure_crd(self) -> None:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
        self.kube.apply(path, crd())
        self.crd_made = True
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            conditions = self.kube.json("GET", path).get("status", {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                return
            time.sleep(0.2)
        raise HarnessError(f"CRD {CRD_NAME} not established after 60 s")

    def drop_crd(self, wait: bool = True) -> None:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
        self.kube.delete(path)
        if wait:
            self.kube.wait_gone([path], timeout=300)
        self.crd_made = False

    # -- steps

    def measure(
        self, workload: Workload, tool: str, rep: int, position: int, step: str, argv: list[str], ns: str
    ) -> StepRun:
        time.sleep(self.config.settle_s)
        started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        before = self.scrape()
        proxy = self.proxies.get(self.rtt_ms)
        if proxy:
            proxy.take()  # what went before (an unmeasured step) is not this step's
        proc = run_measured(argv, self.env, self.config.step_timeout_s)
        path = dataclasses.asdict(critical_path(proxy.take())) if proxy else {}
        after = self.scrape()
        requests: StepRequests = step_requests(before, after, identity.PREFIX)
        ok = proc.exit_code == 0 and not proc.timed_out
        error = ""
        if not ok:
            why = f"timed out after {self.config.step_timeout_s:.0f} s\n" if proc.timed_out else ""
            error = why + proc.output_tail
        run = StepRun(
            workload=workload.name,
            kind=workload.kind,
            n=workload.n,
            tool=tool,
            rep=rep,
            position=position,
            step=step,
            ok=ok,
            exit_code=proc.exit_code,
            wall_s=round(proc.wall_s, 4),
            cpu_user_s=round(proc.cpu_user_s, 4),
            cpu_sys_s=round(proc.cpu_sys_s, 4),
            max_rss_kb=proc.max_rss_kb,
            namespace=ns,
            argv=argv,
            requests=dataclasses.asdict(requests),
            error=error,
            started=started,
            rtt_ms=self.rtt_ms,
            path=path,
        )
        self.runs.append(run)
        self.save()
        total = sum(requests.client.values())
        status = "ok" if ok else f"FAILED (exit {proc.exit_code})"
        trips = f", {path['round_trips']} round trips on the critical path" if path else ""
        self.log(
            f"{workload.name} {self.rtt_ms}ms r{rep + 1} {tool:6} {step:8} {status}: {proc.wall_s:7.2f} s wall, "
            f"{proc.cpu_user_s + proc.cpu_sys_s:6.2f} s CPU, {proc.max_rss_kb / 1024:5.0f} MB, {total} requests" + trips
        )
        return run

    def one_app(self, workload: Workload, tool: str, rep: int, position: int, manifests: dict[bool, str]) -> None:
        """Every step of one tool on one workload, in its own namespace; the namespace goes afterwards."""
        ns = self.make_namespace(workload, tool, rep)
        self.steps(workload, tool, rep, position, manifests, ns)
        # Not in a `finally`: after a Ctrl-C or an error, cleanup() deletes it without waiting.
        for path in self.workdir.glob(f"{ns}*.yaml"):
            path.unlink()
        self.drop_namespace(ns)

    def steps(
        self, workload: Workload, tool: str, rep: int, position: int, manifests: dict[bool, str], ns: str
    ) -> None:
        """The selected steps in order (the initial deploy runs unmeasured when not selected, as the others need
        it). A failed step ends this tool's repetition: the later steps depend on it."""
        files: dict[bool, Path] = {}
        for change, text in manifests.items():
            files[change] = self.workdir / f"{ns}{'-changed' if change else ''}.yaml"
            files[change].write_text(for_namespace(text, ns))
        for step in STEPS:
            if step not in self.config.steps and step != "deploy":
                continue
            manifest = None if step == "delete" else files[step in ("diff-run", "change")]
            argv = command(self.tools[tool], step, ns, manifest, self.config.deploy_flags)
            if step in self.config.steps:
                run = self.measure(workload, tool, rep, position, step, argv, ns)
                if not run.ok:
                    self.log(f"{workload.name} r{rep + 1} {tool}: skipping the remaining steps")
                    return
            else:
                proc = run_measured(argv, self.env, self.config.step_timeout_s)
                if proc.exit_code != 0:
                    self.log(f"{workload.name} r{rep + 1} {tool}: unmeasured initial deploy failed\n{proc.output_tail}")
                    return

    def harness_error(self, message: str) -> None:
        self.log(message)
        self.meta.setdefault("harness_errors", []).append(message)

    def run(self) -> None:
        kubeconfig = identity.setup(self.kube, self.workdir / "bench.kubeconfig")
        for rtt in self.config.rtts_ms:
            if rtt == 0:
                self.envs[rtt] = tool_env(kubeconfig)
                continue
            upstream = urllib.parse.urlsplit(self.kube.endpoint.server)
            proxy = DelayProxy(upstream.hostname or "127.0.0.1", upstream.port or 443, rtt / 1000)
            self.proxies[rtt] = proxy
            port = proxy.start()
            self.envs[rtt] = tool_env(via_proxy(kubeconfig, self.workdir / f"bench-{rtt}ms.kubeconfig", port))
        self.warm_up()
        for workload in self.config.workloads:
            try:
                self.run_workload(workload)
            except HARNESS_ERRORS as e:
                self.harness_error(f"{workload.name}: harness request failed: {e}; going on with the next workload")

    def warm_up(self) -> None:
        """An unmeasured deploy and delete of a one-ConfigMap app per tool, so that what a tool's first run leaves
        for the next (Python's bytecode and kapply's compiled dataclass methods, the binaries in the page cache) is
        there before the first measured run, as it is on a user's machine after their first deploy."""
        for tool in self.config.tools:
            ns = f"bench-{self.run_id}-warm-up-{tool}"
            self.kube.create_namespace(ns, {RUN_LABEL: self.run_id, "app.kubernetes.io/managed-by": "kapply-bench"})
            self.namespaces.add(ns)
            manifest = self.workdir / f"{ns}.yaml"
            manifest.write_text(for_namespace(WARM_UP, ns))
            for step in ("deploy", "delete"):
                argv = command(
                    self.tools[tool], step, ns, manifest if step == "deploy" else None, self.config.deploy_flags
                )
                proc = run_measured(argv, self.envs[self.config.rtts_ms[0]], self.config.step_timeout_s)
                if proc.exit_code != 0:
                    self.harness_error(f"warm-up {step} of {tool} failed\n{proc.output_tail}")
            self.drop_namespace(ns)

    def run_workload(self, workload: Workload) -> None:
        self.log(f"{workload.name}: writing manifests")
        manifests = {False: workload.manifest(), True: workload.manifest(change=True)}
        if not {"diff-run", "change"} & set(self.config.steps):
            del manifests[True]
        if workload.kind == "crd":
            self.ensure_crd()
        for rtt in self.config.rtts_ms:
            self.rtt_ms, self.env = rtt, self.envs[rtt]
            for rep in range(self.config.repeat):
                order = self.config.tools if rep % 2 == 0 else list(reversed(self.config.tools))
                for position, tool in enumerate(order):
                    try:
                        self.one_app(workload, tool, rep, position, manifests)
                    except HARNESS_ERRORS as e:
                        self.harness_error(f"{workload.name} {rtt}ms r{rep + 1} {tool}: harness request failed: {e}")
        if workload.kind == "crd":
            self.drop_crd()

    def cleanup(self, wait: bool) -> None:
        """Remove whatever the run still has on the cluster; after an interruption, without waiting."""
        for ns in sorted(self.namespaces):
            try:
                self.drop_namespace(ns, wait=wait)
            except (KubeError, OSError) as e:
                self.log(f"could not delete namespace {ns}: {e}")
        if self.crd_made:
            with contextlib.suppress(KubeError, OSError):
                self.drop_crd(wait=wait)
        with contextlib.suppress(KubeError, OSError):
            identity.teardown(self.kube)
        for proxy in self.proxies.values():
            proxy.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def via_proxy(kubeconfig: Path, out: Path, port: int) -> Path:
    """A copy of the bench kubeconfig (identity.setup's, JSON) whose server is the proxy on 127.0.0.1:port: the same
    scheme and trust, so TLS still checks the API server's certificate (issued for 127.0.0.1)."""
    doc = json.loads(kubeconfig.read_text())
    for entry in doc["clusters"]:
        server = urllib.parse.urlsplit(entry["cluster"]["server"])
        entry["cluster"]["server"] = server._replace(netloc=f"127.0.0.1:{port}").geturl()
    out.touch(mode=0o600)
    out.write_text(json.dumps(doc, indent=2))
    return out


# ---------------------------------------------------------------- describing the run


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory_gb = 0.0
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gb = int(line.split()[1]) / 1024 / 1024
    os_name = platform.platform()
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = f"{line.split('=', 1)[1].strip(chr(34))} ({platform.system()} {platform.release()})"
    return {"cpu": cpu, "cores": os.cpu_count() or 0, "memory_gb": memory_gb, "os": os_name}


def first_line(argv: Sequence[str]) -> str:
    """The first line a command prints (a version), or '?'."""
    try:
        out = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"? ({e})"
    text = (out.stdout.strip() or out.stderr.strip()).splitlines()
    return text[0] if text else "?"


def versions(kube: Kube, tools: dict[str, Path]) -> dict[str, str]:
    found: dict[str, str] = {"kubernetes": kube.version()}
    if "kapp" in tools:
        found["kapp"] = first_line([str(tools["kapp"]), "version"])
    if "kapply" in tools:
        found["kapply"] = first_line([str(tools["kapply"]), "version"])
        interpreter = sys.executable
        with contextlib.suppress(OSError, UnicodeDecodeError):
            shebang = tools["kapply"].read_text().splitlines()[0]
            named = shebang[2:].strip().split()[:1] if shebang.startswith("#!") else []
            if named and Path(named[0]).name.startswith("python"):  # not a shell wrapper's /bin/sh
                interpreter = named[0]
        found["python"] = first_line([interpreter, "-c", "import platform; print(platform.python_version())"])
    commit = first_line(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"])
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout.strip()
    found["kapply_commit"] = commit + (" + uncommitted changes" if dirty else "")
    return found


def default_kubeconfig() -> Path:
    if os.environ.get("KUBECONFIG"):
        return Path(os.environ["KUBECONFIG"].split(os.pathsep)[0])
    cache = Path(os.environ.get("KAPPLY_CACHE", Path.home() / ".cache" / "kapply"))
    return Path(os.environ.get("KAPPLY_CLUSTER_DIR", cache / "cluster")) / "kubeconfig"


def csv_ints(text: str) -> list[int]:
    """'100,1000 5000' -> [100, 1000, 5000]; '' -> [] (to leave a kind of workload out)."""
    return [int(x.replace("_", "")) for x in text.replace(",", " ").split()]


def csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="sidebyside", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sizes", type=csv_ints, default=[100, 1000, 5000], help="mix sizes (default 100,1000,5000)")
    p.add_argument(
        "--deployments", type=csv_ints, default=[50, 500], help="Deployment counts (default 50,500; '' none)"
    )
    p.add_argument("--crs", type=csv_ints, default=[1000], help="custom resource counts (default 1000; '' none)")
    p.add_argument("--steps", type=csv, default=list(STEPS), help=f"steps to measure (default {','.join(STEPS)})")
    p.add_argument("--tools", type=csv, default=["kapp", "kapply"], help="tools (default kapp,kapply)")
    p.add_argument("--repeat", type=int, default=3, help="repetitions per workload and tool (default 3)")
    p.add_argument(
        "--rtt",
        type=csv_ints,
        default=[0],
        help="round-trip times in ms to the API server, through bench/delay_proxy.py above 0 (default 0)",
    )
    p.add_argument(
        "--wait-check-interval",
        default="1s",
        help="passed to both tools (default 1s: waiting is quantised to at most 1 s, for kapp's 3 s default)",
    )
    p.add_argument("--settle", type=float, default=1.0, help="seconds of quiet before each measured step (default 1)")
    p.add_argument("--step-timeout", type=float, default=1800, help="seconds before a step is stopped (default 1800)")
    p.add_argument(
        "--kubeconfig", type=Path, default=None, help="admin kubeconfig (default $KUBECONFIG or the local cluster's)"
    )
    p.add_argument("--kapp", default=None, help="kapp binary (default $KAPPLY_KAPP, else PATH)")
    p.add_argument("--kapply", default=None, help="kapply command (default $KAPPLY_KAPPLY, the venv's, else PATH)")
    p.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent, help="where results.* go (default bench/)"
    )
    p.add_argument("--note", default="", help="a line shown at the top of results.md, e.g. 'smoke run'")
    p.add_argument("--render", type=Path, default=None, help="only re-render results.md/png from this results.json")
    p.add_argument(
        "--cleanup",
        action="store_true",
        help="only delete what earlier runs left (namespaces, CRD, bench identity), e.g. after a cluster restart",
    )
    args = p.parse_args(argv)
    unknown = set(args.steps) - set(STEPS)
    if unknown:
        p.error(f"unknown steps {sorted(unknown)}; steps are {', '.join(STEPS)}")
    bad_tools = set(args.tools) - set(report.TOOLS)
    if bad_tools or not args.tools:
        p.error(f"--tools takes kapp and/or kapply, not {sorted(bad_tools)}")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    if not args.rtt or any(r < 0 for r in args.rtt):
        p.error("--rtt takes round-trip times in ms, 0 or more, e.g. 0,20,50")
    return args


def write_summary(doc: dict[str, Any], out: Path) -> None:
    why_not = report.plot(doc, out / "results.png")
    doc["meta"]["plot"] = None if why_not else "results.png"
    if why_not:
        print(f"[bench] no plot: {why_not}", file=sys.stderr)
    (out / "results.md").write_text(report.render(doc))


def cleanup_leftovers(kube: Kube) -> int:
    """Delete every namespace an earlier run labelled as the bench's, the bench CRD and the bench identity."""
    selector = "app.kubernetes.io/managed-by%3Dkapply-bench"
    names = [n["metadata"]["name"] for n in kube.json("GET", f"/api/v1/namespaces?labelSelector={selector}")["items"]]
    names = [n for n in names if n != identity.NAMESPACE]
    for name in names:
        kube.delete(f"/api/v1/namespaces/{name}")
    kube.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}")
    identity.teardown(kube)
    print(f"[bench] deleted {len(names)} namespace(s){': ' + ', '.join(names) if names else ''}, the CRD, the identity")
    return 0


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        doc = json.loads(args.render.read_text())
        write_summary(doc, args.render.parent)
        return 0
    tools: dict[str, Path] = {}  # found before anything touches the cluster: no kapp, no run
    if "kapp" in args.tools and not args.cleanup:
        tools["kapp"] = find_tool("kapp", args.kapp, "KAPPLY_KAPP")
    if "kapply" in args.tools and not args.cleanup:
        tools["kapply"] = find_tool("kapply", args.kapply, "KAPPLY_KAPPLY", [Path(sys.executable).parent / "kapply"])
    kubeconfig = args.kubeconfig or default_kubeconfig()
    if not kubeconfig.is_file():
        raise SystemExit(f"sidebyside: no kubeconfig at {kubeconfig} (start the cluster: make cluster-up)")
    kube = Kube(kubeconfig, retry_s=10)
    try:
        k8s = kube.version()
    except (KubeError, OSError) as e:
        raise SystemExit(f"sidebyside: the cluster of {kubeconfig} does not answer: {e}") from None
    kube.retry_s = 120
    if args.cleanup:
        return cleanup_leftovers(kube)
    config = Config(
        workloads=parse_workloads(args.sizes, args.deployments, args.crs),
        steps=[s for s in STEPS if s in args.steps],
        tools=[t for t in report.TOOLS if t in args.tools],
        repeat=args.repeat,
        wait_check_interval=args.wait_check_interval,
        settle_s=args.settle,
        step_timeout_s=args.step_timeout,
        rtts_ms=sorted(set(args.rtt)),
    )
    if not config.workloads:
        raise SystemExit("sidebyside: no workloads (--sizes, --deployments and --crs are all empty)")
    args.out.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {
        "note": args.note,
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join(shlex.quote(a) for a in [sys.argv[0], *(argv if argv is not None else sys.argv[1:])]),
        "machine": machine(),
        "versions": {**versions(kube, tools), "kubernetes": k8s},
        "tools": {name: str(path) for name, path in tools.items()},
        "config": {
            "workloads": [w.name for w in config.workloads],
            "steps": config.steps,
            "tools": config.tools,
            "repeat": config.repeat,
            "deploy_flags": config.deploy_flags,
            "settle_s": config.settle_s,
            "step_timeout_s": config.step_timeout_s,
            "rtts_ms": config.rtts_ms,
        },
    }
    previous_sigterm = signal.signal(signal.SIGTERM, _terminate)  # `kill`, or make stopped: as Ctrl-C
    bench = Bench(config, kube, tools, args.out, meta)
    meta["run_id"] = bench.run_id
    interrupted = False
    try:
        bench.run()
    except (KeyboardInterrupt, Interrupted):
        interrupted = True
        bench.log("interrupted: stopping, cleaning up, writing what was measured")
    except HARNESS_ERRORS as e:  # setting up the bench identity failed
        bench.harness_error(f"harness request failed: {e}")
    finally:
        meta["finished"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        meta["interrupted"] = interrupted
        try:
            bench.cleanup(wait=not interrupted)
        except KeyboardInterrupt:
            print(
                f"[bench] cleanup interrupted: namespaces labelled {RUN_LABEL}={bench.run_id} and the "
                f"{identity.PREFIX}* flow schemas may be left; `sidebyside.py --cleanup` deletes them",
                file=sys.stderr,
            )
        write_summary(bench.document(), args.out)
        bench.save()
        signal.signal(signal.SIGTERM, previous_sigterm)
    bench.log(f"wrote {args.out / 'results.md'}, results.json" + (" (partial)" if interrupted else ""))
    failed = sum(1 for r in bench.runs if not r.ok) + len(meta.get("harness_errors", []))
    return 130 if interrupted else (1 if failed else 0)


if __name__ == "__main__":
    sys.exit(main())
