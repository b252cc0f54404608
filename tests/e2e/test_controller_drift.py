"""Drift and ghost diffs with the real controller process (issue 12): seed 000's replicas that another actor keeps
scaling down, ended by the suggested rebase rule; seed 004's drift policies; a mutating admission webhook served by
the test; and an unchanged App that writes nothing, dry runs included, across ten syncs.

The controller runs as its own ServiceAccount, so that API Priority and Fairness can count its requests (and those
of the Apps' service accounts) apart from everyone else's: one FlowSchema per test sends them to the `exempt`
priority level, where the API server counts them by flow schema in `apiserver_flowcontrol_dispatched_requests_total`.
"""

from __future__ import annotations

import base64
import http.server
import json
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.generic_resource import create_global_resource
from lightkube.resources.core_v1 import ConfigMap, Event

from tests.e2e.controller_harness import (
    App,
    admin_identity,
    condition,
    counted,
    create_if_missing,
    delete_apps_and_show_log,
    deployer,
    dispatched,
    endpoint,
    inline_app,
    running_controller,
    status,
    wait_syncs,
)
from tests.e2e.harness import Cluster, eventually
from tests.e2e.web_drift import deployed, deployment, events, keeps_scaling, replicas, scale, set_files

pytestmark = pytest.mark.e2e

IDENTITY_NAMESPACE = "kapply-drift-tests"
MutatingWebhookConfiguration = create_global_resource(
    "admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations"
)
RAW_OPTIONS = ["--app-changes-max-to-keep=100", "--wait-check-interval=0.5s"]


@pytest.fixture(scope="module")
def controller_kubeconfig(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A kubeconfig for the ServiceAccount the controller runs as (cluster-admin, like the admin user)."""
    with admin_identity(cluster.kubeconfig, kube, IDENTITY_NAMESPACE, tmp_path_factory.mktemp("identity")) as path:
        yield path


@pytest.fixture(scope="module")
def running(
    cluster: Cluster, kube: Client, controller_kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[subprocess.Popen]:
    directory = tmp_path_factory.mktemp("controller")
    flag = f"--ghost-diff-quiet-syncs={QUIET_SYNCS}"
    with running_controller(cluster, kube, controller_kubeconfig, directory, flag) as process:
        yield process


@pytest.fixture(autouse=True)
def apps_deleted_first(running: subprocess.Popen, kube: Client, namespace: str) -> Iterator[None]:
    """Afterwards the test's Apps are deleted while the controller runs, and the controller's log lines about the
    namespace are printed (shown when the test fails)."""
    yield
    delete_apps_and_show_log(kube, namespace, running)


QUIET_SYNCS = 4  # the controller's --ghost-diff-quiet-syncs: 4 s at the tests' 1 s sync period


def create_app(kube: Client, namespace: str, name: str, files: dict[str, str], **spec: Any) -> None:
    for doc in yaml.safe_load_all(deployer(namespace)):
        create_if_missing(kube, from_dict(doc))
    # 1 s syncs (the controller's minimum) unless the test says: the tests count syncs, whose length proves nothing
    body = inline_app(
        name, namespace, files, **{"syncPeriod": "1s", "deploy": [{"kapp": {"rawOptions": RAW_OPTIONS}}], **spec}
    )
    kube.create(App(**body))
    eventually(lambda: condition(kube, namespace, name) == "ReconcileSucceeded", timeout=60, what="the first deploy")


def app_changes(kube: Client, namespace: str) -> set[str]:
    return {
        cm.metadata.name
        for cm in kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/is-app-change": ""})
        if cm.metadata.name.startswith("web.app-change-") or cm.metadata.name.startswith("cms.app-change-")
    }


def ghost(kube: Client, namespace: str, name: str, path_part: str) -> list[dict[str, Any]]:
    diffs = (status(kube, namespace, name).get("ghostDiffs") or {}).get("diffs") or []
    return [d for d in diffs if path_part in d["path"]]


def ghost_events(kube: Client, namespace: str, path: str) -> list[Event]:
    """The GhostDiff Events about a field: one per field, its message the same at every recurrence."""
    return [e for e in events(kube, namespace, "GhostDiff") if f": {path} set back to " in (e.message or "")]


def test_a_ghost_diff_stays_listed_between_its_recurrences_on_one_event_and_goes_once_fixed(
    running: subprocess.Popen, cluster: Cluster, kube: Client, namespace: str
) -> None:
    """An HPA that acts now and then: its ghost diff stays in status.ghostDiffs between recurrences, with when it was
    first and last seen and how many syncs set it back (resolved: without the live value it had then), its
    recurrences counted on one GhostDiff Event. Once the suggested rule is in the manifests, the next checked sync
    drops it, not QUIET_SYNCS syncs later (that drop of a ghost whose desired state did not change: unit tests)."""
    create_app(kube, namespace, "web", {"web.yml": deployment(2)})
    scale(kube, namespace, 1)  # once: the next sync sets it back, a ghost diff
    first = eventually(
        lambda: ghost(kube, namespace, "web", "spec.replicas"), timeout=30, what="the ghost diff on spec.replicas"
    )[0]  # type: ignore[index]
    assert first["recurrences"] == 1 and first["firstSeen"] == first["lastSeen"], first
    eventually(lambda: replicas(kube, namespace) == 2, timeout=10, what="the replicas set back")
    # Two quiet syncs after the one that set it back (which may still be writing), half of what it takes to drop it.
    wait_syncs(endpoint(running.log), namespace, "web", QUIET_SYNCS - 2)  # type: ignore[attr-defined]
    resolved = {k: v for k, v in first.items() if k != "live"}
    assert ghost(kube, namespace, "web", "spec.replicas") == [resolved], "still listed, resolved: no stale live value"
    scale(kube, namespace, 1)  # the HPA acts again
    again = eventually(
        lambda: [d for d in ghost(kube, namespace, "web", "spec.replicas") if d["recurrences"] == 2],
        timeout=30,
        what="the second recurrence counted",
    )[0]  # type: ignore[index]
    assert again["firstSeen"] == first["firstSeen"] and again["lastSeen"] > first["lastSeen"], again
    assert again["live"] == "1", again
    # Both recurrences on one Event, as `kubectl get events` shows it (the Event is written after the status).
    (event,) = eventually(
        lambda: [e for e in ghost_events(kube, namespace, "spec.replicas") if e.count == 2],
        timeout=10,
        what="one GhostDiff Event counted twice",
    )
    assert len(ghost_events(kube, namespace, "spec.replicas")) == 1
    assert event.message == (
        "Deployment web: spec.replicas set back to 2, written by kubectl (Update, scale); "
        "a rebase rule ends it: status.ghostDiffs.suggestedConfig"
    )
    assert event.type == "Warning" and event.lastTimestamp > event.firstTimestamp, event

    config = (status(kube, namespace, "web").get("ghostDiffs") or {})["suggestedConfig"]
    generation = set_files(kube, namespace, "web", {"web.yml": deployment(2), "rebase.yml": config})
    eventually(lambda: deployed(kube, namespace, "web", generation), timeout=30, what="the rule deployed")
    wait_syncs(endpoint(running.log), namespace, "web")  # type: ignore[attr-defined]  # the next sync: checked
    assert "ghostDiffs" not in status(kube, namespace, "web"), "fixed: dropped at the first checked sync"


def test_seed_000_a_scaled_deployment_is_a_ghost_diff_until_the_suggested_rule_ends_it(
    running: subprocess.Popen, cluster: Cluster, kube: Client, namespace: str
) -> None:
    # 2 s syncs: a field is held when its writer sets it again within one sync period of the revert, which a 1 s
    # period would leave shorter than a revert takes
    create_app(kube, namespace, "web", {"web.yml": deployment(2)}, syncPeriod="2s")
    with keeps_scaling(kube, namespace, 1):
        found = eventually(
            lambda: [d for d in ghost(kube, namespace, "web", "spec.replicas") if d["recurrences"] >= 1],
            timeout=60,
            what="the ghost diff on spec.replicas",
        )
        diff = found[0]  # type: ignore[index]
        assert diff["resource"] == f"deployment/web (apps/v1) namespace: {namespace}"
        assert (diff["desired"], diff["live"]) == ("2", "1")
        assert diff["writtenBy"].startswith("kubectl (Update, scale)"), diff
        assert diff["firstSeen"] <= diff["lastSeen"], diff
        eventually(lambda: ghost_events(kube, namespace, "spec.replicas"), timeout=10, what="a GhostDiff Event")
        assert len(ghost_events(kube, namespace, "spec.replicas")) == 1, "one Event, counted"
        shown = subprocess.run(
            [sys.executable, "-m", "kapply", "app", "status", "-a", "web", "-n", namespace, "--tty"],
            env={"KUBECONFIG": str(cluster.kubeconfig), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        row = next(line for line in shown.stdout.splitlines() if "spec.replicas" in line)
        assert row.split()[:6] == ["deployment/web", "(apps/v1)", "namespace:", namespace, "spec.replicas", "2"]
        # Live: the other actor's 1, or (a sync that ran between a revert and the next scale) resolved.
        assert row.split()[6] == "1" or "not seen since" in row, row
        assert "kubectl (Update, scale)" in row
        assert "rebaseRules:" in shown.stdout and "- replicas" in shown.stdout, shown.stdout
        # The other actor set it again after it was set back: a controller owns it, held after that one revert
        # (issue 30; tests/e2e/test_controller_drift_owners.py), no longer an app-change per sync.
        (held,) = eventually(lambda: fields_held(kube, namespace), timeout=10, what="the field held")  # type: ignore[misc]
        assert (held["path"], held["writtenBy"]) == ("spec.replicas", "kubectl (Update, scale)"), held
        before = app_changes(kube, namespace)
        wait_syncs(endpoint(running.log), namespace, "web", 2)  # type: ignore[attr-defined]
        assert app_changes(kube, namespace) == before and replicas(kube, namespace) == 1, "held"

        config = (status(kube, namespace, "web").get("fieldOwners") or {})["suggestedConfig"]
        rule = yaml.safe_load(config)["rebaseRules"][0]
        assert rule["path"] == ["spec", "replicas"] and rule["sources"] == ["existing", "new"], config
        generation = set_files(kube, namespace, "web", {"web.yml": deployment(2), "rebase.yml": config})
        eventually(lambda: deployed(kube, namespace, "web", generation), timeout=30, what="the rule deployed")
        url = endpoint(running.log)  # type: ignore[attr-defined]
        wait_syncs(url, namespace, "web")  # the next sync, start to end: the same desired state, checked
        # Fixed (the desired state changed since it was last seen, and the checked sync did not find it): gone at
        # once, not QUIET_SYNCS syncs later.
        assert "ghostDiffs" not in status(kube, namespace, "web"), status(kube, namespace, "web").get("ghostDiffs")
        settled = app_changes(kube, namespace)
        wait_syncs(url, namespace, "web", 4)  # four more, the other actor still at work
        assert app_changes(kube, namespace) == settled, "no new app-change once the rule is in place"
        assert "ghostDiffs" not in status(kube, namespace, "web")
    assert replicas(kube, namespace) == 1  # the cluster's value is kept


def fields_held(kube: Client, namespace: str) -> list[dict[str, Any]]:
    return list((status(kube, namespace, "web").get("fieldOwners") or {}).get("held") or [])


def test_seed_004_preserve_keeps_an_outside_change_until_the_desired_value_changes(
    running: subprocess.Popen, kube: Client, namespace: str
) -> None:
    create_app(kube, namespace, "web", {"web.yml": deployment(2)}, driftPolicy="preserve")
    scale(kube, namespace, 1)
    drift = eventually(
        lambda: (status(kube, namespace, "web").get("drift") or {}).get("fields"), timeout=30, what="drift reported"
    )
    assert drift == [  # type: ignore[comparison-overlap]
        {
            "resource": f"deployment/web (apps/v1) namespace: {namespace}",
            "path": "spec.replicas",
            "desired": "2",
            "live": "1",
            "writtenBy": "kubectl (Update, scale)",
        }
    ]
    wait_syncs(endpoint(running.log), namespace, "web", 2)  # type: ignore[attr-defined]
    assert replicas(kube, namespace) == 1
    generation = set_files(kube, namespace, "web", {"web.yml": deployment(3)})
    eventually(lambda: deployed(kube, namespace, "web", generation), timeout=30, what="the new desired state")
    assert replicas(kube, namespace) == 3
    eventually(lambda: "drift" not in status(kube, namespace, "web"), timeout=10, what="the drift report cleared")


def test_seed_004_enforce_reverts_an_outside_change_at_once(
    running: subprocess.Popen, kube: Client, namespace: str
) -> None:
    create_app(kube, namespace, "web", {"web.yml": deployment(2)}, syncPeriod="10m")
    scale(kube, namespace, 1)
    eventually(lambda: replicas(kube, namespace) == 2, timeout=5, interval=0.2, what="the replicas set back")


def test_seed_004_warn_reports_an_outside_change_and_leaves_it(
    running: subprocess.Popen, kube: Client, namespace: str
) -> None:
    create_app(kube, namespace, "web", {"web.yml": deployment(2)}, driftPolicy="warn")
    scale(kube, namespace, 1)
    eventually(lambda: events(kube, namespace, "Drift"), timeout=30, what="a Drift event")
    event = events(kube, namespace, "Drift")[0]
    assert event.type == "Warning" and "spec.replicas" in event.message and "kubectl" in event.message
    drift = (status(kube, namespace, "web").get("drift") or {})["fields"]
    assert [(f["path"], f["live"]) for f in drift] == [("spec.replicas", "1")]
    wait_syncs(endpoint(running.log), namespace, "web", 2)  # type: ignore[attr-defined]
    assert replicas(kube, namespace) == 1
    assert len(events(kube, namespace, "Drift")) == 1, "the same drift is told once"


class _Injector(http.server.BaseHTTPRequestHandler):
    """A mutating admission webhook that stamps each admitted ConfigMap with a label whose value changes on every
    request (a counter): the kind of webhook that makes a ghost diff of every deploy."""

    count = 0

    def do_POST(self) -> None:  # noqa: N802
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        _Injector.count += 1
        labels = (request["object"].get("metadata") or {}).get("labels")
        value = str(_Injector.count)
        patch = (
            [{"op": "add", "path": "/metadata/labels/injected-at", "value": value}]
            if labels
            else [{"op": "add", "path": "/metadata/labels", "value": {"injected-at": value}}]
        )
        body = json.dumps(
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {
                    "uid": request["uid"],
                    "allowed": True,
                    "patchType": "JSONPatch",
                    "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
                },
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@contextmanager
def injector_webhook(kube: Client, namespace: str, workdir: Path) -> Iterator[str]:
    """The webhook served on 127.0.0.1 with a self-signed certificate, registered for the namespace's ConfigMaps
    labeled `inject: "yes"`; yields the MutatingWebhookConfiguration's name."""
    cert, key = workdir / "cert.pem", workdir / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Injector)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    name = f"{namespace}-injector"
    hook = {
        "name": "inject.kapply.test",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 5,
        "clientConfig": {
            "url": f"https://127.0.0.1:{server.server_address[1]}/mutate",
            "caBundle": base64.b64encode(cert.read_bytes()).decode(),
        },
        "rules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
                "operations": ["CREATE", "UPDATE"],
                "scope": "Namespaced",
            }
        ],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "objectSelector": {"matchLabels": {"inject": "yes"}},
    }
    kube.create(MutatingWebhookConfiguration.from_dict({"metadata": {"name": name}, "webhooks": [hook]}))
    try:
        yield name
    finally:
        kube.delete(MutatingWebhookConfiguration, name)
        server.shutdown()


CONFIGMAPS = """apiVersion: v1
kind: ConfigMap
metadata: {name: one, labels: {inject: "yes"}}
data: {text: one}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: two, labels: {inject: "yes"}}
data: {text: two}
"""


def test_a_webhook_that_stamps_configmaps_is_named_and_its_suggested_rule_ends_the_ghost_diffs(
    running: subprocess.Popen, kube: Client, namespace: str, tmp_path: Path
) -> None:
    with injector_webhook(kube, namespace, tmp_path) as webhook:
        create_app(kube, namespace, "cms", {"cms.yml": CONFIGMAPS})
        found = eventually(
            lambda: [d for d in ghost(kube, namespace, "cms", "injected-at") if d["recurrences"] >= 2],
            timeout=60,
            what="ghost diffs on the injected label",
        )
        assert {d["resource"] for d in found} == {  # type: ignore[attr-defined]
            f"configmap/one (v1) namespace: {namespace}",
            f"configmap/two (v1) namespace: {namespace}",
        }
        for diff in found:  # type: ignore[attr-defined]
            assert diff["desired"] == "(none)"
            assert f"mutating admission webhook ({webhook}/inject.kapply.test)" in diff["writtenBy"], diff
        config = (status(kube, namespace, "cms").get("ghostDiffs") or {})["suggestedConfig"]
        rule = yaml.safe_load(config)["rebaseRules"][0]
        assert rule["resourceMatchers"] == [{"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "ConfigMap"}}]
        generation = set_files(kube, namespace, "cms", {"cms.yml": CONFIGMAPS, "rebase.yml": config})
        eventually(lambda: deployed(kube, namespace, "cms", generation), timeout=30, what="the rule deployed")
        url = endpoint(running.log)  # type: ignore[attr-defined]
        wait_syncs(url, namespace, "cms")  # a sync with the rule, start to end
        settled = app_changes(kube, namespace)
        wait_syncs(url, namespace, "cms", 3)
        assert app_changes(kube, namespace) == settled, "no new app-change once the rule is in place"
        assert "ghostDiffs" not in status(kube, namespace, "cms")


def test_an_unchanged_app_writes_nothing_across_ten_syncs(
    running: subprocess.Popen, cluster: Cluster, kube: Client, namespace: str
) -> None:
    subjects = [
        {"kind": "ServiceAccount", "serviceAccount": {"name": "controller", "namespace": IDENTITY_NAMESPACE}},
        {"kind": "ServiceAccount", "serviceAccount": {"name": "deployer", "namespace": namespace}},
    ]
    writes, reads = f"{namespace}-writes", f"{namespace}-reads"
    with (
        counted(kube, writes, subjects, ["create", "update", "patch", "delete", "deletecollection"]),
        counted(kube, reads, subjects, ["get", "list"], namespace=namespace),
    ):
        files = {"app.yml": deployment(2) + "---\n" + CONFIGMAPS.replace('labels: {inject: "yes"}', "labels: {}")}
        create_app(kube, namespace, "web", files, syncPeriod="1s")
        url = endpoint(running.log)  # type: ignore[attr-defined]
        wait_syncs(url, namespace, "web", 2)  # the deploy's last writes done, and a first no-change sync
        deployed_reads = dispatched(cluster, reads)  # the counter sees the App's own reads in its namespace
        # What the earlier tests of the module left going (their Apps' deletes, a watch listing again) settles first:
        # two syncs in a row without a read or a write. An unchanged App's own syncs would never settle.
        for _ in range(10):
            before = dispatched(cluster, writes), dispatched(cluster, reads)
            wait_syncs(url, namespace, "web", 2)
            if (dispatched(cluster, writes), dispatched(cluster, reads)) == before:
                break
        wait_syncs(url, namespace, "web", 10)
        after = dispatched(cluster, writes), dispatched(cluster, reads)
    synced = running.log.read_text().count(f"{namespace}/web: no changes")  # type: ignore[attr-defined]
    assert synced >= 10, f"the App was synced ({synced} syncs)"
    assert deployed_reads > 0, "the deploy's reads in the namespace were counted"
    assert after[0] - before[0] == 0, f"{after[0] - before[0]} writes (dry runs included) by an unchanged App"
    assert after[1] - before[1] == 0, f"{after[1] - before[1]} reads in the App's namespace (served from the cache)"


def reported_paths(kube: Client, namespace: str) -> set[str]:
    """Every field the App's status reports, as ghost diff or drift."""
    reported = status(kube, namespace, "web")
    found = ((reported.get("ghostDiffs") or {}).get("diffs") or []) + (
        (reported.get("drift") or {}).get("fields") or []
    )
    return {str(f["path"]) for f in found}


def test_seed_000_omitted_replicas_the_syncs_after_the_suggested_rule_report_no_server_default(
    running: subprocess.Popen, kube: Client, namespace: str
) -> None:
    """Seed 000's own case: the Deployment leaves `replicas` to its HPA. The ghost diff names spec.replicas alone (no
    server-defaulted field), and once its suggested rule is deployed the syncs that follow report nothing new."""
    omitted = "\n".join(line for line in deployment(1).splitlines() if "replicas" not in line) + "\n"
    # 2 s syncs: a field is held when its writer sets it again within one sync period of the revert, which a 1 s
    # period would leave shorter than a revert takes
    create_app(kube, namespace, "web", {"web.yml": omitted}, syncPeriod="2s")
    with keeps_scaling(kube, namespace, 3):
        found = eventually(
            lambda: [d for d in ghost(kube, namespace, "web", "spec.replicas") if d["recurrences"] >= 1],
            timeout=60,
            what="the ghost diff on spec.replicas",
        )
        assert reported_paths(kube, namespace) == {"spec.replicas"}
        assert (found[0]["desired"], found[0]["live"]) == ("(none)", "3")  # type: ignore[index]
        # Set again after that revert: held (issue 30), the one rule that ends it in status.fieldOwners.
        (held,) = eventually(lambda: fields_held(kube, namespace), timeout=10, what="the field held")  # type: ignore[misc]
        assert held["path"] == "spec.replicas", held
        config = (status(kube, namespace, "web").get("fieldOwners") or {})["suggestedConfig"]
        generation = set_files(kube, namespace, "web", {"web.yml": omitted, "rebase.yml": config})
        eventually(lambda: deployed(kube, namespace, "web", generation), timeout=30, what="the rule deployed")
        last = ghost(kube, namespace, "web", "spec.replicas")
        url = endpoint(running.log)  # type: ignore[attr-defined]
        for _ in range(3):  # the syncs right after the rule's (it ended: its status says so)
            wait_syncs(url, namespace, "web")
            assert reported_paths(kube, namespace) <= {"spec.replicas"}
            assert ghost(kube, namespace, "web", "spec.replicas") in ([], last), "no recurrence once the rule is in"
    assert replicas(kube, namespace) == 3
