"""`kapply app` against the real kctrl's `app` commands (issue 31): the same commands, in file order, each client in
its own namespace with its own controller in carvel mode (tests/compat/kctrl_harness.py), comparing the exit status,
stdout and stderr (`--json` too); and `version --controller`. Each namespace has the same Apps (an inline ConfigMap
through ytt, a long sync period so that only the commands start reconciles): `simple`, `kept` (deleted with
`--noop`) and `broken` (its template fails; paused once it has failed, so that it is not retried meanwhile)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap, Namespace
from lightkube.types import PatchType

from tests.compat.kctrl_harness import CarvelApp, Clients, Result, kctrl_clients
from tests.e2e.controller_harness import deployer
from tests.e2e.faults import http_client
from tests.e2e.harness import Cluster, eventually, external_tool
from tests.e2e.packaging_harness import condition, get

pytestmark = [pytest.mark.compat, pytest.mark.e2e, pytest.mark.timeout(300)]
WAIT = "--wait-check-interval=0.5s"
SUCCEEDED = "ReconcileSucceeded"
GENERATION = re.compile(r"^TIME: Waiting for generation \d+ to be observed$")
INFORMER_RACE = "PROG: Error: Timed out waiting for caches to sync"
# Said when the deploy's status.updatedAt (whole seconds) moved past its startedAt, i.e. whether a short deploy
# crossed a second boundary: each client watches its own controller, so the two differ by chance.
SECOND_BOUNDARY = "TIME: Deploying"
STARTED = "TIME: Fetching"  # the first line of a reconcile seen from its start
HOLD = "kapply.test/hold"  # a finalizer of the test's: an App being deleted stays until both tails watch it
JSON_AGE = re.compile(r'": "(\d+[smhd])+"')  # an age in a --json row (the harness's own pattern wants spaces around)
CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-cm\ndata:\n  a: '1'\n"


def carvel_app(name: str, namespace: str, template: str) -> dict[str, Any]:
    return {
        "apiVersion": "kappctrl.k14s.io/v1alpha1",
        "kind": "App",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "serviceAccountName": "deployer",
            "syncPeriod": "1h",
            "fetch": [{"inline": {"paths": {"cm.yml": template}}}],
            "template": [{"ytt": {}}],
            "deploy": [{"kapp": {}}],
        },
    }


@dataclass(frozen=True)
class Apps:
    """`kapply app` and `kctrl app` beside each other (the harness's clients, run with `app`; kapply told to speak
    kapp-controller's groups, whatever else the cluster serves)."""

    clients: Clients

    def run_one(self, tool: str, args: Sequence[str], command: str = "app") -> Result:
        env = {**os.environ, "KUBECONFIG": str(self.clients.kubeconfig)}
        for variable in ("KAPP_NAMESPACE", "KCTRL_NAMESPACE", "KCTRL_KUBECONFIG", "KAPP_KUBECONFIG"):
            env.pop(variable, None)
        argv = [*self.clients.command(tool), command, *(a.replace("{ns}", self.clients.ns[tool]) for a in args)]
        if tool == "kapply" and command == "app":
            argv.append("--api-groups=carvel")
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        return Result(tool, done.returncode, JSON_AGE.sub('": "AGE"', done.stdout), done.stderr)

    def run(self, *args: str, command: str = "app") -> tuple[Result, Result]:
        """The command with each client at once (each against its own namespace and controller), kctrl's first."""
        with ThreadPoolExecutor(2) as pool:
            theirs, ours = (pool.submit(self.run_one, tool, args, command) for tool in ("kctrl", "kapply"))
            return theirs.result(), ours.result()

    def same(self, *args: str) -> None:
        self.clients.same(self.run(*args))

    def tailed(self, *args: str, attempts: int = 1) -> None:
        """A command that tails an App (kick, delete): the same, but for what the cluster's timing decides in kctrl's
        informer. How many `Waiting for generation N to be observed` lines a tail says depends on how many status
        writes of the controller land before the App's new generation is observed, after the tail's list (kctrl's
        own runs differ), so they are left out. And kctrl's informer may give up (`Timed out waiting for caches to
        sync`, exit 1: docs/compatibility.md, Known differences). That happens when the reconcile has ended before
        its informer's first list (a fast controller): its handler stops the informer before the cache reports synced,
        and its lines so far are a part of kapply's, in order (the listed state's last lines, or the stages seen
        before it gave up). Whether `Deploying` is said depends on a second boundary (SECOND_BOUNDARY).
        A kick's reconcile can end before kctrl's informer lists (it then says only `Deploy succeeded`, or gives up):
        with `attempts`, such a run is repeated while kapply's tail saw the reconcile from its start, so that the two
        are compared on the same story whenever kctrl can tell it."""
        for attempt in range(1, attempts + 1):
            theirs, ours = (
                [line for line in self.clients.seen(result) if not GENERATION.search(line) and line != SECOND_BOUNDARY]
                for result in self.run(*args)
            )
            late = INFORMER_RACE in theirs or (STARTED in ours and STARTED not in theirs)
            if not late or attempt == attempts:
                break
        if INFORMER_RACE in theirs:
            told, rest = theirs[1 : theirs.index("== stderr")], iter(ours[1:])
            in_order = all(any(line == seen for seen in rest) for line in told)
            assert ours[0] == "exit 0" and in_order, "\n".join(("kctrl:", *theirs, "", *ours))
            return
        assert ours == theirs, "\n".join(("kctrl:", *theirs, "", "kapply:", *ours))


def _reached(kube: Client, namespace: str, name: str, wanted: str) -> bool:
    return condition(kube, CarvelApp, namespace, name) == wanted


def _paused(kube: Client, namespace: str, name: str) -> bool:
    found = get(kube, CarvelApp, namespace, name) or {}
    return (
        _reached(kube, namespace, name, "ReconcileFailed")
        and (found.get("status") or {}).get("friendlyDescription") == "Canceled/paused"
    )


@pytest.fixture(scope="module")
def apps(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apps]:
    kctrl = external_tool("kctrl", "KAPPLY_KCTRL")
    with kctrl_clients(cluster, kube, kctrl, tmp_path_factory.mktemp("kctrl-app")) as clients:
        for namespace in clients.ns.values():
            for doc in yaml.safe_load_all(deployer(namespace)):
                kube.create(from_dict(doc))
            for name, template in (
                ("simple", CONFIG_MAP.format(name="simple")),
                ("kept", CONFIG_MAP.format(name="kept")),
                ("broken", "#@ this is not ytt\n"),
            ):
                kube.create(CarvelApp.from_dict(carvel_app(name, namespace, template)))
        for namespace in clients.ns.values():
            for name, wanted in (("simple", SUCCEEDED), ("kept", SUCCEEDED), ("broken", "ReconcileFailed")):
                eventually(partial(_reached, kube, namespace, name, wanted), timeout=60, what=f"{name}: {wanted}")
            # a failed App is retried (2, 4, 8 ... s later): paused, so that each client sees it failed, not retrying
            kube.patch(CarvelApp, "broken", {"spec": {"paused": True}}, namespace=namespace, patch_type=PatchType.MERGE)
        for namespace in clients.ns.values():
            eventually(partial(_paused, kube, namespace, "broken"), timeout=60, what="broken paused")
        yield Apps(clients)


def test_list(apps: Apps) -> None:
    apps.same("list", "-n", "{ns}")
    apps.same("list", "-n", "{ns}", "--json")


def test_get(apps: Apps) -> None:
    apps.same("get", "-a", "simple", "-n", "{ns}")
    apps.same("get", "-a", "broken", "-n", "{ns}", "--json")


def test_status(apps: Apps) -> None:
    apps.same("status", "-a", "simple", "-n", "{ns}")
    apps.same("status", "-a", "simple", "-n", "{ns}", "--json")
    apps.same("status", "-a", "broken", "-n", "{ns}")
    apps.same("status", "-a", "missing", "-n", "{ns}")


def test_pause(apps: Apps) -> None:
    apps.same("pause", "-a", "simple", "-n", "{ns}", "-y")
    apps.same("pause", "-a", "simple", "-n", "{ns}", "-y")


def test_kick(apps: Apps) -> None:
    apps.tailed("kick", "-a", "simple", "-n", "{ns}", "-y", WAIT, attempts=3)
    apps.same("kick", "-a", "missing", "-n", "{ns}", "-y")


@contextmanager
def held_until_both_watch(apps: Apps, kube: Client, cluster: Cluster, name: str) -> Iterator[None]:
    """The App `name` in each client's namespace kept (a finalizer of the test's) while the block runs, until both
    clients' tails watch it (the API server's count of watches on Apps in a namespace or by name rose by two): a
    controller that deletes faster than kctrl's informer starts would otherwise leave kctrl waiting for a DELETED
    event that came before its watch (kctrl hangs, or says `not found`)."""
    for namespace in apps.clients.ns.values():
        hold = [{"op": "add", "path": "/metadata/finalizers/-", "value": HOLD}]
        kube.patch(CarvelApp, name, hold, namespace=namespace, patch_type=PatchType.JSON)
    before = _app_watches(cluster)

    def release() -> None:
        try:
            eventually(lambda: _app_watches(cluster) >= before + 2, timeout=60, what="both tails watching")
        finally:  # never an App left held, whatever happened
            for namespace in apps.clients.ns.values():
                eventually(partial(_unhold, kube, namespace, name), timeout=30, what=f"{HOLD} removed")

    with ThreadPoolExecutor(1) as pool:
        releasing = pool.submit(release)
        yield
        releasing.result()


def _unhold(kube: Client, namespace: str, name: str) -> bool:
    """The test's finalizer removed, by index with a test of it (the controller removes its own meanwhile)."""
    finalizers = ((get(kube, CarvelApp, namespace, name) or {}).get("metadata") or {}).get("finalizers") or []
    if HOLD not in finalizers:
        return True
    at = f"/metadata/finalizers/{finalizers.index(HOLD)}"
    try:
        unhold = [{"op": "test", "path": at, "value": HOLD}, {"op": "remove", "path": at}]
        kube.patch(CarvelApp, name, unhold, namespace=namespace, patch_type=PatchType.JSON)
    except ApiError:
        return False  # the list changed between the read and the patch: again
    return True


def _app_watches(cluster: Cluster) -> int:
    """Watches of kapp-controller's Apps open now in one namespace or on one App (not the controllers' own, which
    watch every namespace)."""
    with http_client(cluster.kubeconfig) as http:
        text = http.get("/metrics").raise_for_status().text
    return int(
        sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("apiserver_longrunning_requests{")
            and 'group="kappctrl.k14s.io"' in line
            and 'resource="apps"' in line
            and 'verb="WATCH"' in line
            and ('scope="namespace"' in line or 'scope="resource"' in line)
        )
    )


def test_delete_noop_keeps_what_the_app_deployed(apps: Apps, kube: Client, cluster: Cluster) -> None:
    with held_until_both_watch(apps, kube, cluster, "kept"):
        apps.tailed("delete", "-a", "kept", "-n", "{ns}", "-y", "--noop", WAIT)
    for namespace in apps.clients.ns.values():
        assert kube.get(ConfigMap, "kept-cm", namespace=namespace).data == {"a": "1"}


def test_delete(apps: Apps, kube: Client, cluster: Cluster) -> None:
    with held_until_both_watch(apps, kube, cluster, "simple"):
        apps.tailed("delete", "-a", "simple", "-n", "{ns}", "-y", WAIT)
    for namespace in apps.clients.ns.values():
        with pytest.raises(ApiError):
            kube.get(ConfigMap, "simple-cm", namespace=namespace)


KAPP_CONTROLLER = """
apiVersion: v1
kind: Namespace
metadata:
  name: kapp-controller
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: kapp-controller
  namespace: kapp-controller
  annotations:
    kapp-controller.carvel.dev/version: v0.53.1
spec:
  replicas: 0
  selector:
    matchLabels: {app: kapp-controller}
  template:
    metadata:
      labels: {app: kapp-controller}
    spec:
      containers:
      - name: kapp-controller
        image: ghcr.io/carvel-dev/kapp-controller:v0.53.1
"""


def test_version_controller(apps: Apps, kube: Client) -> None:
    """kctrl reads kapp-controller's Deployment (its version annotation); kapply too, where its own controller is not
    installed (kapply-system/kapply-controller, which it would name first)."""
    try:
        kube.get(Deployment, "kapply-controller", namespace="kapply-system")
        pytest.skip("kapply's controller is installed: kapply version --controller names it")
    except ApiError:
        pass
    documents = [from_dict(doc) for doc in yaml.safe_load_all(KAPP_CONTROLLER)]
    for doc in documents:
        kube.create(doc)
    try:
        apps.clients.same(apps.run("--controller", "--json", command="version"))
    finally:  # not waited for: no other test makes a namespace of that name
        kube.delete(Namespace, "kapp-controller")
