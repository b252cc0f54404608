"""`kapply dashboard` with 1,000 Apps: how long its list takes to load, and how many watches it holds.

    .venv/bin/python -m bench.dashboard_bench                     # 1000 Apps (the controller bench's), 3 pages
    .venv/bin/python -m bench.dashboard_bench --apps 50 --pages 1  # quick

Against the local control plane (or the cluster of --kubeconfig): the Apps are the controller bench's
(bench/controller_bench.py's app_manifest: 20 inline resources each), created in the namespace kapply-dbench-apps,
each given the status a reconciled App has (conditions, friendly description, the stages' output of the size the
controller writes) through the status subresource, so that no controller has to run. Then one `kapply dashboard`
process (the admin kubeconfig) and, measured:

1. ready: from the process's start until its `Dashboard:` line, and until its list holds every App (its one
   list-then-watch per kind has listed them);
2. the list as the page loads it: `GET api/apps` (the JSON of every row), the first server-sent event of `events`
   (the snapshot the list page renders), and with headless Chromium (when installed) the list page itself, from
   navigation until its table has a row per App; each `--repeat` times;
3. watches: the API server's `apiserver_longrunning_requests{verb="WATCH"}` per resource before the dashboard starts
   and with `--pages` list pages open (their event streams held): the dashboard's own watches, per kind;
4. live: one App's label changed (`--repeat` times), timed until an open event stream says so.

Results: bench/dashboard_results.{json,md}. Everything is created in kapply-dbench-apps and removed at the end
(and on Ctrl-C); kapply's App and packaging CRDs are installed when the cluster has none (then removed at the end).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

if __package__ in (None, ""):  # run as a script: bench/dashboard_bench.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.controller_bench import app_manifest
from bench.kube import Kube, KubeError
from bench.metrics import parse
from bench.sidebyside import default_kubeconfig, machine

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "kapply-dbench-apps"
LABELS = {"app.kubernetes.io/managed-by": "kapply-dbench"}
APPS_PATH = f"/apis/kapply.dev/v1alpha1/namespaces/{NAMESPACE}/apps"
WATCHERS = "apiserver_longrunning_requests"
CRD_SETTLE = 35.0  # seconds: the garbage collector's discovery resync (30 s), and a margin
GOAL_S = 2.0  # the issue's: the list loads in under 2 s
URL_LINE = re.compile(r"^Dashboard: (http://\S+)$", re.M)
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRD_FILES = ("config/controller/crd.yml", "config/packaging/crds.yml")
# the kinds the dashboard lists (kapply.dashboard.board.served_kinds): kapply's and kapp-controller's
LISTED = (
    "apps.kapply.dev",
    "packageinstalls.packaging.kapply.dev",
    "apps.kappctrl.k14s.io",
    "packageinstalls.packaging.carvel.dev",
)


# ----------------------------------------------------------- pure helpers (tests/unit/test_dashboard_bench.py)


def reconciled_status(app: str, resources: int, now: str) -> dict[str, Any]:
    """The status the controller writes after a successful reconcile of an App of `resources` ConfigMaps and
    Secrets: its size is what the dashboard lists and sends (the stages' output lines as kapp prints them)."""
    lines = [f"{now[11:19]}UTC create configmap/{app}-r{i:02d} (v1) namespace: {NAMESPACE}" for i in range(resources)]
    stage = {"exitCode": 0, "updatedAt": now}
    return {
        "conditions": [{"type": "ReconcileSucceeded", "status": "True"}],
        "friendlyDescription": "Reconcile succeeded",
        "observedGeneration": 1,
        "consecutiveReconcileSuccesses": 1,
        "fetch": {**stage, "startedAt": now, "stdout": ""},
        "template": {**stage, "stderr": ""},
        "deploy": {**stage, "startedAt": now, "finished": True, "stdout": "\n".join(lines) + "\nSucceeded\n"},
        "inspect": {**stage, "stdout": f"Resources in app '{app}.app'\n" + "\n".join(lines)},
    }


def watches(metrics_text: str) -> dict[str, float]:
    """The API server's open WATCH requests per `<resource>.<group>` (`<resource>` for the core group)."""
    out: dict[str, float] = {}
    for (_, labels), value in parse(metrics_text, (WATCHERS,)).items():
        found = dict(labels)
        if found.get("verb") == "WATCH" and not found.get("subresource"):
            key = ".".join(filter(None, (found.get("resource", ""), found.get("group", ""))))
            out[key] = out.get(key, 0.0) + value
    return out


def added(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """The watches `after` holds beyond `before`, per resource (the ones that did not change left out)."""
    return {
        k: after.get(k, 0.0) - before.get(k, 0.0) for k in sorted({*before, *after}) if after.get(k) != before.get(k)
    }


def spread(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"median": statistics.median(values), "max": max(values), "min": min(values), "n": len(values)}


def _s(found: Mapping[str, float] | None) -> str:
    if found is None:
        return "not measured"
    return f"{found['median']:.3f} s median, {found['max']:.3f} s max ({int(found['n'])} runs)"


def render(doc: Mapping[str, Any]) -> str:
    """bench/dashboard_results.md from the run's JSON."""
    apps, r = doc["apps"], doc["results"]
    loads = [r["page"], r["snapshot"], r["api_apps"]]
    worst = max((x["max"] for x in loads if x is not None), default=None)
    verdict = "met" if worst is not None and worst < GOAL_S else "NOT met"
    kinds = ", ".join(f"`{k}`" for k in r["kinds"]) or "(none)"
    watch_lines = [f"| `{k}` | {v:+.0f} |" for k, v in r["watches_added"].items()] or ["| (none) | 0 |"]
    return "\n".join(
        [
            f"# `kapply dashboard` with {apps} Apps",
            "",
            f"Run {doc['date']} on {doc['machine'].get('cores', '?')} cores ({doc['machine'].get('cpu', '')}), "
            f"the local control plane; {doc['pages']} list page(s) open. Made by `python -m bench.dashboard_bench "
            f"--apps {apps}` (bench/dashboard_bench.py says what each line measures).",
            "",
            f"Goal: the list loads in under {GOAL_S:.0f} s with {apps} Apps, with one watch per kind: **{verdict}** "
            f"(slowest load {worst:.3f} s)."
            if worst is not None
            else "Goal: not measured.",
            "",
            "| Measure | Time |",
            "| --- | --- |",
            f"| process start to its `Dashboard:` line | {r['url_s']:.3f} s |",
            f"| process start to its list holding all {apps} Apps | {r['complete_s']:.3f} s |",
            f"| the list page in headless Chromium, navigation to {apps} table rows | {_s(r['page'])} |",
            f"| `events`: its first event (the snapshot of {apps} rows) | {_s(r['snapshot'])} |",
            f"| `GET api/apps` (the JSON of {apps} rows, {r['api_apps_bytes']} bytes) | {_s(r['api_apps'])} |",
            f"| an App's label changed, until an open event stream says so | {_s(r['live'])} |",
            "",
            f"Watches the API server holds beyond those before the dashboard started, with {doc['pages']} list "
            'page(s) open (`apiserver_longrunning_requests{verb="WATCH"}`):',
            "",
            "| Resource | Watches added |",
            "| --- | --- |",
            *watch_lines,
            "",
            "Once the dashboard stopped, the watches beyond those before it: "
            + (", ".join(f"`{k}` {v:+.0f}" for k, v in r["watches_left"].items()) or "none (all were its own)")
            + ".",
            "",
            f"Kinds the dashboard lists that the cluster serves: {kinds}.",
            "",
        ]
    )


# ----------------------------------------------------------- the run


def log(msg: str) -> None:
    print(f"[dbench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _timed_get(url: str) -> tuple[float, bytes]:
    start = time.monotonic()
    with urllib.request.urlopen(url, timeout=60) as answer:
        body = answer.read()
    return time.monotonic() - start, body


def _first_event(url: str) -> float:
    start = time.monotonic()
    with urllib.request.urlopen(url, timeout=60) as answer:
        while answer.readline() not in (b"\n", b""):
            pass
    return time.monotonic() - start


@contextlib.contextmanager
def _stream(url: str) -> Iterator[Any]:
    with urllib.request.urlopen(url, timeout=60) as answer:
        while answer.readline() not in (b"\n", b""):  # the snapshot
            pass
        yield answer


def _wait_for_row(answer: Any, key: str) -> None:
    event = b""
    while True:
        line = answer.readline()
        if line == b"":
            raise RuntimeError("the event stream ended")
        event += line
        if line == b"\n":
            if event.startswith(b"event: row\n") and key.encode() in event:
                return
            event = b""


class DashboardBench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.kube = Kube(args.kubeconfig)
        self.crds_created: list[str] = []
        self.process: subprocess.Popen[str] | None = None

    def setup(self) -> None:
        for path in CRD_FILES:
            for crd in yaml.safe_load_all((REPO / path).read_text()):
                if crd and crd.get("kind") == "CustomResourceDefinition" and not self.kube.exists(self._crd(crd)):
                    log(f"no {crd['metadata']['name']} CRD: installing it from {path} (removed at the end)")
                    self.kube.apply(self._crd(crd), crd)
                    self.crds_created.append(self._crd(crd))
        for crd_path in self.crds_created:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                conditions = self.kube.json("GET", crd_path).get("status", {}).get("conditions") or []
                if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                    break
                time.sleep(0.5)
        self.kube.create_namespace(NAMESPACE, LABELS)
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        start = time.monotonic()

        def create(index: int) -> None:
            name = f"a{index:03d}"
            made = self.kube.json("POST", APPS_PATH, app_manifest(name, NAMESPACE, self.args.resources, "30s"))
            made["status"] = reconciled_status(name, self.args.resources, now)
            self.kube.json("PUT", f"{APPS_PATH}/{name}/status", made)

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(create, range(self.args.apps)))
        log(f"{self.args.apps} Apps created with a reconciled status in {time.monotonic() - start:.1f} s")

    def _stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(10)

    def cleanup(self) -> None:
        self._stop()
        with contextlib.suppress(KubeError):
            self.kube.delete(f"/api/v1/namespaces/{NAMESPACE}")
        self.kube.wait_gone([f"/api/v1/namespaces/{NAMESPACE}"], timeout=300)
        for crd_path in self.crds_created:
            with contextlib.suppress(KubeError):
                self.kube.delete(crd_path)
        log(f"cleaned up {NAMESPACE}")

    @staticmethod
    def _crd(crd: Mapping[str, Any]) -> str:
        return f"{CRDS}/{crd['metadata']['name']}"

    def served(self) -> list[str]:
        """The kinds the dashboard lists that the cluster serves (`<plural>.<group>`)."""
        return [name for name in LISTED if self.kube.exists(f"{CRDS}/{name}")]

    def _start(self) -> tuple[str, float, str]:
        env = {**os.environ, "KUBECONFIG": str(self.args.kubeconfig), "PYTHONUNBUFFERED": "1"}
        start = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kapply", "dashboard"], env=env, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        seen = ""
        while not (found := URL_LINE.search(seen)):
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"kapply dashboard ended before its URL:\n{seen}")
            seen += line
        return found.group(1), time.monotonic() - start, seen

    def run(self) -> dict[str, Any]:
        repeat, n = self.args.repeat, self.args.apps
        if self.crds_created:  # the controller manager's garbage collector watches a new kind within ~30 s: not ours
            log(f"waiting {CRD_SETTLE:.0f} s for the cluster's own watches of the new CRDs")
            time.sleep(CRD_SETTLE)
        before = watches(self.kube.text("/metrics"))
        start = time.monotonic()
        url, url_s, _ = self._start()
        while len(json.loads(_timed_get(url + "api/apps")[1])["rows"]) < n:
            time.sleep(0.05)
        complete_s = time.monotonic() - start
        log(f"URL after {url_s:.2f} s, all {n} Apps listed after {complete_s:.2f} s")
        api_apps, size = [], 0
        for _ in range(repeat):
            took, body = _timed_get(url + "api/apps")
            api_apps.append(took)
            size = len(body)
        snapshot = [_first_event(url + "events") for _ in range(repeat)]
        page, kinds, after = self._pages(url, n)
        live = self._live(url)
        self._stop()
        time.sleep(1)
        left = added(before, watches(self.kube.text("/metrics")))
        return {
            "url_s": url_s,
            "complete_s": complete_s,
            "api_apps": spread(api_apps),
            "api_apps_bytes": size,
            "snapshot": spread(snapshot),
            "page": spread(page),
            "live": spread(live),
            "kinds": kinds,
            "watches_added": added(before, after),
            "watches_left": left,
        }

    def _pages(self, url: str, n: int) -> tuple[list[float], list[str], dict[str, float]]:
        """The list page's loads in Chromium (when there is one), with `--pages` pages left open while the watches
        are counted; without a browser, as many event streams held open."""
        kinds = self.served()
        chromium = os.environ.get("KAPPLY_CHROMIUM") or "/usr/bin/chromium"
        if not Path(chromium).exists():
            log("no Chromium: the page's load is not measured; the watches are counted with event streams open")
            with contextlib.ExitStack() as held:
                for _ in range(self.args.pages):
                    held.enter_context(_stream(url + "events"))
                time.sleep(1)
                return [], kinds, watches(self.kube.text("/metrics"))
        from playwright.sync_api import sync_playwright

        loads = []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, headless=True)
            context = browser.new_context(viewport={"width": 1280, "height": 860})
            opened = []
            for i in range(max(self.args.repeat, self.args.pages)):
                tab = context.new_page()
                start = time.monotonic()
                tab.goto(url)
                tab.locator("#apps tbody tr").nth(n - 1).wait_for(state="attached", timeout=60_000)  # no eval: CSP
                loads.append(time.monotonic() - start)
                if i < self.args.pages:
                    opened.append(tab)
                else:
                    tab.close()
            time.sleep(1)
            after = watches(self.kube.text("/metrics"))
            browser.close()
        return loads, kinds, after

    def _live(self, url: str) -> list[float]:
        took = []
        key = f"App.kapply.dev/{NAMESPACE}/a000"
        with _stream(url + "events?" + urllib.parse.urlencode({"key": key})) as answer:
            for i in range(self.args.repeat):
                start = time.monotonic()
                self.kube.json(
                    "PATCH",
                    f"{APPS_PATH}/a000",
                    {"metadata": {"labels": {"dbench-change": str(i)}}},
                    content_type="application/merge-patch+json",
                )
                _wait_for_row(answer, key)
                took.append(time.monotonic() - start)
        return took


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--resources", type=int, default=20, help="resources per App (their status's size)")
    parser.add_argument("--pages", type=int, default=3, help="list pages held open while the watches are counted")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--kubeconfig", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "dashboard_results.json")
    args = parser.parse_args(argv)
    args.kubeconfig = args.kubeconfig or default_kubeconfig()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    bench = DashboardBench(args)
    try:
        bench.setup()
        results = bench.run()
    finally:
        bench.cleanup()
    doc = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "apps": args.apps,
        "pages": args.pages,
        "machine": machine(),
        "results": results,
    }
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(render(doc))
    print(render(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
