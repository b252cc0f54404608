"""No tenant can starve the others (issue 28, reproduction 3): a tenant's Apps and PackageRepositories fetch from an
http server of the test's own that trickles (a byte every fraction of a second, or one every few seconds, and never
the end), while another tenant's Apps and the global namespace's repository carry on.

The controller runs with `--concurrency=4` (half its default, so that the hog could take every worker) and the
default share of it for one namespace (2), and with the fetch deadline and minimum rate lowered so that the test is
short (`--fetch-timeout=25s`, `--fetch-min-rate=1` over `--fetch-min-rate-window=5s`): a trickle that keeps up with
the rate holds its worker for the whole 25 s, longer than the other tenant's App may wait (its sync period, 10 s,
+ 10 s), so what keeps that App on time is fairness, not the deadline. The test checks that

- the other tenant's App is reconciled again within 20 s of its last reconcile, all the while the trickles hold
  their workers (its reconciles, read from the controller's JSON log),
- a new App of the other tenant is reconciled at once, and so is a spec change of the global namespace's repository,
- the trickling fetches end ReconcileFailed, naming the minimum rate or the fetch deadline.

Before the fix (one queue in due order, four App workers any namespace could take, one PackageRepository worker for
the whole cluster, 300 s per download as long as a byte came every 60 s), the new App and the global repository's
change waited for the trickles' 300 s, and so did the other tenant's periodic sync.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.resources.core_v1 import Namespace
from lightkube.types import PatchType

from kapply.packaging import names
from tests.e2e.controller_harness import (
    App,
    admin_identity,
    condition,
    config_map,
    create_if_missing,
    delete_apps,
    deployer,
    inline_app,
    log_lines,
    running_controller,
    status,
)
from tests.e2e.harness import Cluster, eventually
from tests.e2e.packaging_harness import (
    PackageRepository,
    config_map_package,
    delete_and_wait,
    install_crds,
    package_names,
)
from tests.e2e.packaging_harness import condition as packaging_condition
from tests.e2e.packaging_harness import status as packaging_status

pytestmark = pytest.mark.e2e

IDENTITY_NAMESPACE = "kapply-fairness-tests"
SYNC_PERIOD = 10  # seconds: the other tenant's App
ALLOWANCE = SYNC_PERIOD + 10  # seconds it may go without a reconcile
FETCH_TIMEOUT = 25  # seconds: --fetch-timeout, longer than ALLOWANCE
MIN_RATE, WINDOW = 1, 5  # --fetch-min-rate (bytes/s) over --fetch-min-rate-window (s)
KEEPS_UP = 0.25  # seconds between two bytes of a trickle that keeps up with the minimum rate (4 bytes/s)
STALLS = 3.0  # seconds between two bytes of one that does not (1 byte in 3 s)
SERVED_AT_MOST = 150.0  # seconds any one response trickles, whatever happens
PROMPTLY = 30  # seconds: a new App of the other tenant, or the global repository's change, reconciled
HOG_APPS = 8


# --- the trickling server ---------------------------------------------------------------------------------------------


class Trickler:
    """An http server on 127.0.0.1: `/keeps-up/...` and `/stalls/...` promise 100,000 bytes and send one every
    KEEPS_UP or STALLS seconds, for SERVED_AT_MOST seconds at most and until `stop`; `open` counts the responses
    trickling now."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.open = 0
        self._lock = threading.Lock()
        trickler = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                interval = KEEPS_UP if self.path.startswith("/keeps-up/") else STALLS
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                with trickler._lock:
                    trickler.open += 1
                try:
                    ends = time.monotonic() + SERVED_AT_MOST
                    while time.monotonic() < ends and not trickler.stopping.wait(interval):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                except OSError:  # the controller gave up on it
                    pass
                finally:
                    with trickler._lock:
                        trickler.open -= 1

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def __enter__(self) -> Trickler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.stopping.is_set():
            return
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


# --- fixtures ---------------------------------------------------------------------------------------------------------


@dataclass
class Setting:
    process: subprocess.Popen[bytes]
    trickler: Trickler
    global_namespace: str


@pytest.fixture(scope="module")
def controller_kubeconfig(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with admin_identity(cluster.kubeconfig, kube, IDENTITY_NAMESPACE, tmp_path_factory.mktemp("identity")) as path:
        yield path


def _namespace(kube: Client, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    kube.create(Namespace.from_dict({"metadata": {"name": name}}))
    return name


@pytest.fixture
def setting(cluster: Cluster, kube: Client, controller_kubeconfig: Path, tmp_path: Path) -> Iterator[Setting]:
    install_crds(cluster, kube)
    global_namespace = _namespace(kube, "t-fair-global")
    flags = (
        "--log-format=json",
        "--concurrency=4",
        f"--packaging-global-namespace={global_namespace}",
        f"--fetch-timeout={FETCH_TIMEOUT}s",
        f"--fetch-min-rate={MIN_RATE}",
        f"--fetch-min-rate-window={WINDOW}s",
    )
    try:
        with Trickler() as trickler, running_controller(cluster, kube, controller_kubeconfig, tmp_path, *flags) as p:
            yield Setting(p, trickler, global_namespace)
    finally:
        kube.delete(Namespace, global_namespace)


def tenant(kube: Client, prefix: str) -> str:
    """A namespace with the `deployer` ServiceAccount its Apps use."""
    namespace = _namespace(kube, prefix)
    for doc in yaml.safe_load_all(deployer(namespace)):
        create_if_missing(kube, from_dict(doc))
    return namespace


# --- what is observed -------------------------------------------------------------------------------------------------


def reconciles(log: Path, namespace: str, name: str) -> list[float]:
    """When each reconcile of an App that deployed ended (Unix times), from the controller's JSON log."""
    times = []
    for line in log.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if (entry.get("kind"), entry.get("namespace"), entry.get("name")) != ("App", namespace, name):
            continue
        message = entry.get("message", "")
        if message.startswith(f"{namespace}/{name}: ") and ("no changes" in message or "deployed" in message):
            times.append(datetime.fromisoformat(entry["time"]).timestamp())
    return times


def useful_error(kube: Client, namespace: str, name: str) -> str:
    return str(status(kube, namespace, name).get("usefulErrorMessage", ""))


def repository(name: str, fetch: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": "PackageRepository",
        "metadata": {"name": name},
        "spec": {"syncPeriod": "30s", "fetch": fetch},
    }


def inline_packages(*versions: str) -> dict[str, Any]:
    paths = {f"packages/{v}.yml": yaml.safe_dump(config_map_package("fair.example.com", v)) for v in versions}
    return {"inline": {"paths": paths}}


def create_repository(kube: Client, namespace: str, body: dict[str, Any]) -> None:
    kube.create(PackageRepository(**{**body, "metadata": {**body["metadata"], "namespace": namespace}}))


def reconciled(kube: Client, namespace: str, name: str) -> bool:
    return packaging_condition(kube, PackageRepository, namespace, name) == "ReconcileSucceeded"


# --- the test ---------------------------------------------------------------------------------------------------------

MINIMUM_RATE = f"slower than the minimum rate of {MIN_RATE} bytes/s over {WINDOW} s"
DEADLINE = f"not done within {FETCH_TIMEOUT} s (the fetch deadline: the controller's --fetch-timeout)"


def test_a_tenants_trickling_sources_never_keep_another_tenant_or_the_global_repository_waiting(
    kube: Client, setting: Setting
) -> None:
    log = setting.process.log  # type: ignore[attr-defined]
    other, hog = tenant(kube, "t-fair-other"), tenant(kube, "t-fair-hog")
    try:
        files = {"cm.yml": config_map("steady", hello="world")}
        kube.create(App(**inline_app("steady", other, files, syncPeriod=f"{SYNC_PERIOD}s")))
        create_repository(kube, setting.global_namespace, repository("global", inline_packages("1.0.0")))
        eventually(lambda: condition(kube, other, "steady") == "ReconcileSucceeded", timeout=90, what="steady")
        eventually(lambda: reconciled(kube, setting.global_namespace, "global"), timeout=90, what="global repo")

        # The hog: one App on a trickle that stalls, the others on one that keeps up with the rate (each holds a worker
        # until the deadline: more than the workers there are); its repositories, one of each.
        started = time.time()
        for i in range(HOG_APPS):
            url = setting.trickler.url(f"/{'stalls' if i == 0 else 'keeps-up'}/app-{i}")
            body = inline_app(f"hog-{i}", hog, {}, syncPeriod=f"{SYNC_PERIOD}s", fetch=[{"http": {"url": url}}])
            kube.create(App(**body))
        for i, path in enumerate(("keeps-up", "stalls")):
            create_repository(kube, hog, repository(f"hog-{i}", {"http": {"url": setting.trickler.url(f"/{path}/r")}}))
        eventually(lambda: setting.trickler.open >= 4, timeout=30, what="the hog's fetches under way")

        # Another tenant's new App, and a change of the global namespace's repository: served at once.
        files = {"cm.yml": config_map("newcomer", hello="world")}
        kube.create(App(**inline_app("newcomer", other, files, syncPeriod=f"{SYNC_PERIOD}s")))
        generation = kube.patch(
            PackageRepository,
            "global",
            {"spec": {"fetch": inline_packages("1.0.0", "2.0.0")}},
            namespace=setting.global_namespace,
            patch_type=PatchType.MERGE,
        ).metadata.generation
        asked = time.monotonic()
        eventually(
            lambda: condition(kube, other, "newcomer") == "ReconcileSucceeded", timeout=PROMPTLY, what="the newcomer"
        )
        eventually(
            lambda: (
                packaging_status(kube, PackageRepository, setting.global_namespace, "global").get("observedGeneration")
                == generation
                and reconciled(kube, setting.global_namespace, "global")
            ),
            timeout=max(1.0, PROMPTLY - (time.monotonic() - asked)),
            what="the global repository's change deployed",
        )
        assert package_names(kube, setting.global_namespace) == [
            "fair.example.com.1.0.0",
            "fair.example.com.2.0.0",
        ]

        # The other tenant's App stays on its sync period while the hog's trickles hold their workers: it is never
        # left more than ALLOWANCE s without a reconcile, until one full period has passed under the hog's load.
        def steady_on_time() -> bool:
            times = reconciles(log, other, "steady")
            late = time.time() - times[-1]
            assert late <= ALLOWANCE, f"steady not reconciled for {late:.0f} s (its reconciles: {times})"
            return times[-1] > started + SYNC_PERIOD

        eventually(steady_on_time, timeout=2 * ALLOWANCE, what="steady reconciled a period after the hog started")
        times = [t for t in reconciles(log, other, "steady") if t > started - SYNC_PERIOD - 5]
        gaps = [round(b - a, 1) for a, b in zip(times, times[1:], strict=False)]
        assert gaps and max(gaps) <= ALLOWANCE, f"steady's reconciles came {gaps} s apart"

        # The hog's fetches end, naming what stopped them.
        def ended(name: str, expected: str, namespace: str = hog) -> bool:
            return condition(kube, namespace, name) == "ReconcileFailed" and expected in useful_error(
                kube, namespace, name
            )

        eventually(lambda: ended("hog-0", MINIMUM_RATE), timeout=30, what="a stalling App stopped by the rate")
        eventually(lambda: ended("hog-1", DEADLINE), timeout=FETCH_TIMEOUT + 30, what="an App at the deadline")

        def repository_ended(name: str, expected: str) -> bool:
            reported = packaging_status(kube, PackageRepository, hog, name)
            return expected in str(reported.get("usefulErrorMessage", ""))

        eventually(lambda: repository_ended("hog-1", MINIMUM_RATE), timeout=30, what="the stalling repository")
        eventually(lambda: repository_ended("hog-0", DEADLINE), timeout=FETCH_TIMEOUT + 30, what="the other one")
    finally:
        setting.trickler.stop()  # the fetches still running end at once
        for namespace in (hog, other):
            try:
                delete_and_wait(kube, PackageRepository, namespace, timeout=90)
                delete_apps(kube, namespace, timeout=90)
            finally:
                print(log_lines(log, namespace))
                kube.delete(Namespace, namespace)
        delete_and_wait(kube, PackageRepository, setting.global_namespace, timeout=90)
