"""The controller at production scale (docs/design.md, "The controller at scale"): a sync of an unchanged App plans
from the watch-fed cache and asks the API server nothing (no LIST, no GET, counted by the API server with API
Priority and Fairness flow schemas, as test_controller_drift.py counts writes); drift is still set back within
seconds and a spec change still deploys; an App whose service account may not list a type never reads it through
the cache, although the controller (cluster-admin here) watches and keeps that type; and deleting an App lists the
kinds its record names, not every type the cluster serves.

One controller per test (`-n` the test's namespace), running as its own ServiceAccount so that its requests and
those of the Apps' accounts can be counted apart from everyone else's.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap, Secret
from lightkube.types import PatchType

from tests.e2e.controller_harness import (
    App,
    Controllers,
    admin_identity,
    condition,
    config_map,
    config_map_data,
    counted,
    create_missing,
    deployer,
    dispatched,
    endpoint,
    exists,
    inline_app,
    install_crd,
    status,
    tool_env,
    wait_syncs,
)
from tests.e2e.harness import Cluster, eventually

pytestmark = pytest.mark.e2e

IDENTITY_NAMESPACE = "kapply-idle-tests"
SECRET = yaml.safe_dump(
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}, "stringData": {"token": "s3cr3t"}}
)


@pytest.fixture(scope="module")
def controller_kubeconfig(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The controller's own ServiceAccount, bound to cluster-admin: it may watch Secrets everywhere, which the Apps'
    accounts may not."""
    install_crd(cluster.kubeconfig, kube)
    with admin_identity(cluster.kubeconfig, kube, IDENTITY_NAMESPACE, tmp_path_factory.mktemp("identity")) as path:
        yield path


@pytest.fixture
def controllers(
    controller_kubeconfig: Path, kube: Client, namespace: str, tmp_path: Path
) -> Iterator[tuple[Controllers, subprocess.Popen]]:
    running = Controllers(controller_kubeconfig, kube, namespace, tmp_path)
    try:
        process = running.start("--leader-elect=false", env=tool_env("ytt"))
        yield running, process
    finally:
        running.close()


def accounts(namespace: str, *names: str) -> list[dict[str, Any]]:
    """Flow-schema subjects: the controller's ServiceAccount and the Apps' accounts `names`."""
    return [
        {"kind": "ServiceAccount", "serviceAccount": {"name": "controller", "namespace": IDENTITY_NAMESPACE}},
        *({"kind": "ServiceAccount", "serviceAccount": {"name": n, "namespace": namespace}} for n in names),
    ]


def syncs(controllers: Controllers, namespace: str, name: str) -> int:
    """Reconciles of the App that changed nothing, as the controller logged them."""
    log = controllers.logs_by_name["controller"]
    return log.read_text().count(f"{namespace}/{name}: no changes") if log.exists() else 0


def deployed_app(kube: Client, controllers: Controllers, namespace: str, name: str, files: dict[str, str]) -> None:
    """An App of `files` with 1 s syncs, ReconcileSucceeded and past its first few unchanged syncs (the cache's
    watches listed, the account's rights learned)."""
    kube.create(App(**inline_app(name, namespace, files, syncPeriod="1s")))
    eventually(lambda: condition(kube, namespace, name) == "ReconcileSucceeded", timeout=60, what="the first deploy")
    eventually(lambda: syncs(controllers, namespace, name) >= 3, timeout=30, what="three unchanged syncs")


def label_value(kube: Client, namespace: str, app: str) -> str:
    record = kube.get(ConfigMap, f"{app}.app", namespace=namespace)
    return str(yaml.safe_load(record.data["spec"])["labelValue"])


def test_an_unchanged_apps_syncs_make_no_list_no_get_and_no_write(
    controllers: tuple[Controllers, subprocess.Popen], cluster: Cluster, kube: Client, namespace: str
) -> None:
    """Nor any non-resource request (discovery, `/version`): over 12 s of syncs (longer than the 7.5 s of silence
    after which a check of /readyz probes the API server, and nothing checks it here), the controller and the App's
    account ask nothing but their watches (issue 33: the controller's /version probes ran on a timer of their own)."""
    running, _ = controllers
    create_missing(kube, deployer(namespace))
    files = {"cm.yml": config_map("one", a="1") + "---\n" + config_map("two", b="2"), "secret.yml": SECRET}
    deployed_app(kube, running, namespace, "web", files)
    reads, writes = f"{namespace}-reads", f"{namespace}-writes"
    subjects = accounts(namespace, "deployer")
    with (
        counted(kube, reads, subjects, ["get", "list"], non_resource=True),
        counted(kube, writes, subjects, ["create", "update", "patch", "delete", "deletecollection"]),
    ):
        before = dispatched(cluster, reads), dispatched(cluster, writes), syncs(running, namespace, "web")
        wait_syncs(endpoint(running.logs_by_name["controller"]), namespace, "web", 12)
        after = dispatched(cluster, reads), dispatched(cluster, writes), syncs(running, namespace, "web")
    assert after[2] - before[2] >= 12, f"the App was synced ({after[2] - before[2]} unchanged syncs)"
    assert after[1] - before[1] == 0, f"{after[1] - before[1]} writes by an unchanged App"
    assert after[0] - before[0] == 0, f"{after[0] - before[0]} LISTs, GETs and discovery or /version requests"


def test_drift_is_still_set_back_and_a_spec_change_still_deploys(
    controllers: tuple[Controllers, subprocess.Popen], kube: Client, namespace: str
) -> None:
    running, _ = controllers
    create_missing(kube, deployer(namespace))
    deployed_app(kube, running, namespace, "web", {"cm.yml": config_map("one", a="1")})
    kube.patch(
        ConfigMap,
        "one",
        {"data": {"a": "drifted"}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
        field_manager="someone-else",
    )
    eventually(lambda: config_map_data(kube, namespace, "one") == {"a": "1"}, timeout=10, interval=0.2, what="set back")
    app = kube.patch(
        App,
        "web",
        {"spec": {"fetch": [{"inline": {"paths": {"cm.yml": config_map("one", a="2")}}}]}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )
    generation = int(app.metadata.generation)
    eventually(lambda: config_map_data(kube, namespace, "one") == {"a": "2"}, timeout=30, interval=0.2, what="deployed")
    eventually(
        lambda: (
            status(kube, namespace, "web").get("observedGeneration") == generation
            and condition(kube, namespace, "web") == "ReconcileSucceeded"
        ),
        timeout=30,
        what="the new spec reconciled",
    )


def planted(kube: Client, namespace: str, name: str, label: str) -> None:
    """A Secret labeled as one of the App's own objects (app label and kapp identity), made behind its back: a
    deploy that sees it deletes it, since the App's manifests do not have it."""
    kube.create(
        Secret.from_dict(
            {
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {"kapp.k14s.io/app": label},
                    "annotations": {"kapp.k14s.io/identity": f"v1;{namespace}//Secret/{name};v1"},
                },
                "stringData": {"planted": "yes"},
            }
        )
    )


def test_an_app_whose_account_may_not_list_a_type_cannot_read_it_through_the_cache(
    controllers: tuple[Controllers, subprocess.Popen], kube: Client, namespace: str
) -> None:
    """Two Apps in one namespace deploy a Secret each, so the controller keeps the namespace's labeled Secrets. The
    `narrow` account may get, create, update and delete Secrets but not list them: a Secret planted with its App's
    label is never seen, so never deleted. The `wide` account may list them: its planted Secret is pruned."""
    running, _ = controllers
    create_missing(kube, deployer(namespace))
    narrow = [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "update", "patch", "delete"]},
    ]
    create_missing(kube, deployer(namespace, "narrow", narrow))
    deployed_app(kube, running, namespace, "wide", {"secret.yml": SECRET.replace("token", "wide-token")})
    narrow_app = inline_app("narrow", namespace, {"secret.yml": SECRET.replace("token", "narrow-token")})
    narrow_app["spec"]["serviceAccountName"] = "narrow"
    narrow_app["spec"]["syncPeriod"] = "1s"
    kube.create(App(**narrow_app))
    eventually(lambda: condition(kube, namespace, "narrow") == "ReconcileSucceeded", timeout=60, what="deployed")
    planted(kube, namespace, "planted-narrow", label_value(kube, namespace, "narrow"))
    planted(kube, namespace, "planted-wide", label_value(kube, namespace, "wide"))
    eventually(lambda: not exists(kube, Secret, "planted-wide", namespace), timeout=30, what="the wide App's pruned")
    seen = syncs(running, namespace, "narrow")
    eventually(lambda: syncs(running, namespace, "narrow") >= seen + 5, timeout=30, what="five more syncs")
    assert exists(kube, Secret, "planted-narrow", namespace), "the narrow App read a Secret its account may not list"
    assert exists(kube, Secret, "narrow-token", namespace) and condition(kube, namespace, "narrow") == (
        "ReconcileSucceeded"
    )


def test_deleting_an_app_lists_the_kinds_it_used_not_every_type(
    controllers: tuple[Controllers, subprocess.Popen], cluster: Cluster, kube: Client, namespace: str
) -> None:
    running, _ = controllers
    create_missing(kube, deployer(namespace))
    files = {"cm.yml": config_map("one", a="1"), "secret.yml": SECRET}
    deployed_app(kube, running, namespace, "web", files)
    lists = f"{namespace}-lists"
    with counted(kube, lists, accounts(namespace, "deployer"), ["list"]):
        before = dispatched(cluster, lists)
        kube.delete(App, "web", namespace=namespace)
        eventually(lambda: not exists(kube, App, "web", namespace), timeout=30, what="the App gone")
        listed = dispatched(cluster, lists) - before
    assert not exists(kube, ConfigMap, "one", namespace) and not exists(kube, Secret, "token", namespace)
    # The run's own LISTs (waiting, the app-changes, the check that nothing is left): a handful, where listing
    # every type the cluster serves took about 90.
    assert listed <= 8, f"{listed} LISTs to delete an App of two kinds"
