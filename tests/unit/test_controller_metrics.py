"""The controller's observability: the Prometheus exposition after reconciles of every result (counters, durations,
deploy durations), the gauges read at a scrape (queues, shards, each App's drift and ghost diffs, caches), API
requests counted by client, method and code through the cluster client's hook, the endpoints (/metrics, /healthz,
/readyz) on aiohttp, the bind address flag, and JSON log lines."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kapply.controller import logs
from kapply.controller.health import Address, parse_address, serving
from kapply.controller.main import Controller, ControllerOptions, _Recorder
from kapply.controller.shards import shard_of
from kapply.errors import ConcurrencyError, KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import REQUEST_OBSERVERS, Cluster, ResourceType
from kapply.resources.kubeconfig import KubeconfigFlags, load

KEY = ("team", "web")
CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True, frozenset({"get"}))


def samples(c: Controller) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the exposition, by name and sorted labels."""
    text = generate_latest(c.metrics.registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def controller(**options: Any) -> Controller:
    api: Any = SimpleNamespace(cluster=SimpleNamespace())
    return Controller(api, ControllerOptions(**options))


class Events:
    """Where the wrapped recorder's Events go (no cluster)."""

    def __init__(self) -> None:
        self.emitted: list[str] = []

    async def create(self, rtype: Any, body: Obj) -> Obj:
        self.emitted.append(body["reason"])
        return body


class Outcomes:
    """A reconciler whose passes end as told: a delay, an exception, or an Event emitted (as the real one does)."""

    def __init__(self, c: Controller, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.events = c.reconciler.events
        self.memory: dict[Any, Any] = {}

    async def reconcile(self, namespace: str, name: str) -> float | None:
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        if isinstance(outcome, str):  # the reason of an Event the pass emits
            app = {"metadata": {"namespace": namespace, "name": name, "uid": "u"}}
            await self.events.emit(app, outcome, "what happened", warning=True)
            return 2.0
        return float(outcome)


def reconcile(c: Controller, *outcomes: Any) -> None:
    reconciler = c.reconciler = Outcomes(c, *outcomes)  # type: ignore[assignment]

    async def run() -> None:
        worker = asyncio.create_task(c._worker())
        for left in reversed(range(len(outcomes))):
            c.queue.add(KEY)  # at once (each pass asked to come back later)
            while len(reconciler.outcomes) > left or ("App", KEY) in c._running:
                await asyncio.sleep(0.001)
        worker.cancel()

    asyncio.run(run())


def test_reconciles_are_counted_by_kind_and_result_and_timed() -> None:
    c = controller()
    events = Events()
    c.reconciler.events.cluster = events  # type: ignore[assignment]
    reconcile(
        c,
        30,
        "Deployed",
        "ReconcileFailed",
        "DeleteFailed",
        KapplyError("writing the status: 500"),
        ConcurrencyError("another deploy"),
        RuntimeError("bug"),
    )
    found = samples(c)
    results = {"success": 2.0, "failure": 2.0, "error": 2.0, "conflict": 1.0}
    for result, count in results.items():
        assert found[("kapply_reconcile_total", (("kind", "App"), ("result", result)))] == count, result
    assert found[("kapply_reconcile_duration_seconds_count", (("kind", "App"),))] == 7
    assert events.emitted == ["Deployed", "ReconcileFailed", "DeleteFailed"]  # the Events still go out
    assert isinstance(c.reconciler.events, _Recorder)


def test_an_event_outside_a_reconcile_counts_nothing() -> None:
    c = controller()
    c.reconciler.events.cluster = Events()  # type: ignore[assignment]
    asyncio.run(c.reconciler.events.emit({"metadata": {"namespace": "n", "name": "a"}}, "ReconcileFailed", "x"))
    assert not any(name == "kapply_reconcile_total" for name, _ in samples(c))


def test_a_reconcile_cancelled_with_its_shard_counts_as_canceled_and_the_worker_goes_on() -> None:
    c = controller(shards=2)
    key = next(("team", f"app-{i}") for i in range(100) if shard_of("team", f"app-{i}", 2) == 0)
    c._start_shard(0)
    started = asyncio.Event()

    class Slow:
        memory: dict[Any, Any] = {}

        async def reconcile(self, namespace: str, name: str) -> float | None:
            started.set()
            await asyncio.sleep(60)
            return None

    c.reconciler = Slow()  # type: ignore[assignment]

    async def run() -> None:
        worker = asyncio.create_task(c._worker())
        c.queue.add(key)
        await started.wait()
        assert await c._stop_shard(0)
        await asyncio.sleep(0.01)
        assert not worker.done() and not c._running
        worker.cancel()

    asyncio.run(run())
    assert samples(c)[("kapply_reconcile_total", (("kind", "App"), ("result", "canceled")))] == 1


def test_deploy_durations_come_from_the_reconcilers_hook() -> None:
    c = controller()
    c.reconciler.observe_deploy(1.5, True)
    c.reconciler.observe_deploy(0.2, False)
    found = samples(c)
    assert found[("kapply_deploy_duration_seconds_count", (("result", "success"),))] == 1
    assert found[("kapply_deploy_duration_seconds_sum", (("result", "success"),))] == 1.5
    assert found[("kapply_deploy_duration_seconds_count", (("result", "failure"),))] == 1


def app(name: str, *, drift: int = 0, ghosts: int = 0, generation: int = 1) -> Obj:
    status: Obj = {}
    if drift:
        status["drift"] = {"policy": "warn", "fields": [{"path": f"data.k{i}"} for i in range(drift)]}
    if ghosts:
        status["ghostDiffs"] = {"diffs": [{"path": f"spec.x{i}"} for i in range(ghosts)], "suggestedConfig": ""}
    return {"metadata": {"namespace": "team", "name": name, "generation": generation}, "status": status}


def test_drift_and_ghost_diffs_are_gauges_of_the_apps_that_have_any() -> None:
    c = controller()
    c._app_event("ADDED", app("web", drift=2))
    c._app_event("ADDED", app("api", ghosts=3))
    c._app_event("ADDED", app("quiet"))
    c._app_event("ADDED", {"metadata": {"namespace": "team", "name": "odd"}, "status": {"drift": "x"}})
    found = samples(c)
    assert found[("kapply_app_drift_fields", (("name", "web"), ("namespace", "team")))] == 2
    assert found[("kapply_app_ghost_diffs", (("name", "api"), ("namespace", "team")))] == 3
    per_app = {labels for name, labels in found if name.startswith("kapply_app_")}
    assert per_app == {(("name", "web"), ("namespace", "team")), (("name", "api"), ("namespace", "team"))}
    c._app_event("MODIFIED", app("web"))  # the drift ended (a status write)
    c._app_event("DELETED", app("api"))
    assert not any(name.startswith("kapply_app_") for name, _ in samples(c))


def test_a_replica_reports_the_apps_of_its_own_shards_only() -> None:
    c = controller(shards=2)
    names = [f"app-{i}" for i in range(20)]
    for name in names:
        c._app_event("ADDED", app(name, drift=1))
    c._start_shard(1)
    reported = {dict(labels)["name"] for name, labels in samples(c) if name == "kapply_app_drift_fields"}
    assert reported == {name for name in names if shard_of("team", name, 2) == 1}
    found = samples(c)
    assert found[("kapply_shards", ())] == 2 and found[("kapply_shards_held", ())] == 1
    assert found[("kapply_objects", (("kind", "App"),))] == 20


def test_queues_running_reconciles_and_caches_are_read_at_each_scrape() -> None:
    c = controller()
    c.queue.add(("team", "a"))
    c.queue.add(("team", "b"), 600)
    c.metrics.cache("apps", lambda: 7)
    found = samples(c)
    assert found[("kapply_queue_depth", (("kind", "App"),))] == 1
    assert found[("kapply_queue_scheduled", (("kind", "App"),))] == 2
    assert found[("kapply_reconciles_running", (("kind", "App"),))] == 0
    assert found[("kapply_cache_objects", (("cache", "apps"),))] == 7
    assert found[("kapply_drift_watches", ())] == 0
    assert ("process_resident_memory_bytes", ()) in found
    assert all(name.startswith(("kapply_", "process_", "python_")) for name, _ in found)


def test_api_requests_are_counted_by_client_method_and_code_through_the_cluster_hook(tmp_path: Path) -> None:
    async def handle(request: web.Request) -> web.Response:
        status = 404 if request.path.endswith("/missing") else 200
        return web.json_response({"kind": "Status"}, status=status)

    async def scenario() -> Controller:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        port = runner.addresses[0][1]
        path = tmp_path / "kubeconfig"
        path.write_text(
            json.dumps(
                {
                    "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                    "users": [{"name": "u", "user": {}}],
                    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                    "current-context": "x",
                }
            )
        )
        try:
            async with (
                Cluster(load(KubeconfigFlags(path=str(path)))) as own,
                Cluster(load(KubeconfigFlags(path=str(path)))) as apps,
            ):
                c = Controller(SimpleNamespace(cluster=own), ControllerOptions())  # type: ignore[arg-type]
                REQUEST_OBSERVERS.append(c._answered)
                try:
                    await own.request("GET", "/api/v1/namespaces")
                    await own.request("PUT", "/api/v1/namespaces/x", body={})
                    await apps.request("GET", "/api/v1/namespaces")
                    assert await own.get(CONFIGMAPS, "x", "missing") is None
                finally:
                    REQUEST_OBSERVERS.remove(c._answered)
                return c
        finally:
            await runner.cleanup()

    c = asyncio.run(scenario())
    found = samples(c)

    def count(client: str, method: str, code: str) -> float:
        return found[("kapply_api_requests_total", (("client", client), ("code", code), ("method", method)))]

    assert count("controller", "GET", "200") == 1 and count("controller", "PUT", "200") == 1
    assert count("app", "GET", "200") == 1 and count("controller", "GET", "404") == 1


# The endpoints.


def test_the_bind_address_flag() -> None:
    assert parse_address(":8080") == Address(None, 8080)
    assert parse_address("127.0.0.1:0") == Address("127.0.0.1", 0)
    assert parse_address("[::1]:9090") == Address("::1", 9090)
    assert parse_address("0") is None
    for bad in ("8080", "localhost", ":http", ":70000", ""):
        with pytest.raises(ValueError, match="--metrics-bind-address"):
            parse_address(bad)


def test_metrics_healthz_and_readyz_are_served(caplog: pytest.LogCaptureFixture) -> None:
    c = controller()
    c.queue.add(KEY)
    reason: list[str | None] = ["the App watch has not listed the Apps yet"]

    async def scenario() -> dict[str, tuple[int, str, str]]:
        got = {}
        async with (
            serving(Address("127.0.0.1", 0), c.metrics.registry, lambda: reason[0]) as urls,
            aiohttp.ClientSession() as session,
        ):
            for path in ("/metrics", "/healthz", "/readyz"):
                async with session.get(urls[0] + path) as answer:
                    got[path] = (answer.status, answer.headers["Content-Type"], await answer.text())
            reason[0] = None
            async with session.get(urls[0] + "/readyz") as answer:
                got["ready"] = (answer.status, "", await answer.text())
        return got

    with caplog.at_level(logging.INFO, logger="kapply.controller"):
        got = asyncio.run(scenario())
    status, content_type, text = got["/metrics"]
    assert status == 200 and content_type.startswith("text/plain")
    assert 'kapply_queue_depth{kind="App"} 1.0' in text
    assert got["/healthz"][0] == 200 and got["/healthz"][2] == "ok\n"
    assert got["/readyz"][0] == 503 and "has not listed" in got["/readyz"][2]
    assert got["ready"][0] == 200
    assert "serving /metrics, /healthz and /readyz on http://127.0.0.1:" in caplog.text


def test_the_controller_is_ready_when_waiting_for_the_lease_or_once_its_app_watch_listed() -> None:
    c = controller()
    assert c._unready() is None  # not leading: waiting for the Lease is ready
    c._leading = True
    assert c._unready() == "the App watch has not listed the Apps yet"
    c._apps_relisted(set())
    assert c._unready() is None


# JSON logs.


def record(message: str, *args: Any, exc: bool = False, **extra: Any) -> logging.LogRecord:
    made = logging.LogRecord("kapply.controller", logging.WARNING, __file__, 1, message, args, None)
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            made.exc_info = sys.exc_info()
    made.__dict__.update(extra)
    return made


def test_json_log_lines_parse_and_name_the_object_being_reconciled() -> None:
    formatter = logs.JsonFormatter()
    line = json.loads(formatter.format(record("lost the lease %s", "x", shard=3)))
    assert set(line) == {"time", "level", "logger", "message", "shard"}
    assert (
        line["level"] == "warning" and line["logger"] == "kapply.controller" and line["message"] == "lost the lease x"
    )
    assert line["time"].endswith("Z") and len(line["time"]) == len("2026-11-26T19:20:20.123Z")
    token = logs.RECONCILING.set(logs.Reconciling("App", "team", "web", 1_795_000_000.5))
    try:
        line = json.loads(formatter.format(record("team/web: failed", exc=True)))
    finally:
        logs.RECONCILING.reset(token)
    assert (line["kind"], line["namespace"], line["name"]) == ("App", "team", "web")
    assert line["reconcileStarted"] == "2026-11-18T11:06:40.500Z"
    assert "ValueError: boom" in line["error"]
    assert "\n" not in formatter.format(record("two\nlines", exc=True))  # one object per line


def test_the_log_format_flag_chooses_the_formatter(monkeypatch: pytest.MonkeyPatch) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    logs.configure(logging.INFO, logs.LogFormat.JSON)
    assert isinstance(root.handlers[0].formatter, logs.JsonFormatter)
    monkeypatch.setattr(root, "handlers", [])
    logs.configure(logging.INFO, logs.LogFormat.TEXT)
    assert not isinstance(root.handlers[0].formatter, logs.JsonFormatter)


def test_bad_controller_flags_are_usage_errors_before_anything_starts(capsys: pytest.CaptureFixture[str]) -> None:
    from kapply.cli.main import run

    cases = {
        "--log-format=xml": "--log-format 'xml': expected text or json",
        "--metrics-bind-address=8080": "Expected --metrics-bind-address to be [HOST]:PORT or 0, got '8080'",
        "--shards=0": "--shards=0: expected 1, or more with --leader-elect",
    }
    for flag, message in cases.items():
        assert run(["controller", flag]) == 1, flag
        assert message in capsys.readouterr().err
    assert run(["controller", "--shards=3", "--leader-elect=false"]) == 1
    assert "expected 1, or more with --leader-elect" in capsys.readouterr().err


def test_the_sandboxs_protections_are_exported_once_it_started(monkeypatch: pytest.MonkeyPatch) -> None:
    from kapply.controller import sandbox

    c = controller()
    monkeypatch.setattr(sandbox, "_SEEN", {})
    assert not any(name == "kapply_sandbox_protection" for name, _ in samples(c))
    monkeypatch.setattr(sandbox, "_SEEN", {sandbox.Protection.LIMITS: True, sandbox.Protection.TOOL_NETWORK: False})
    found = samples(c)
    assert found[("kapply_sandbox_protection", (("protection", "limits"),))] == 1
    assert found[("kapply_sandbox_protection", (("protection", "tool-network"),))] == 0
