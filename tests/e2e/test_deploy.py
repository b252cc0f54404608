"""`kapply deploy`, `delete`, `ls`, `inspect` and `app-change` against the real control plane."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap, Service

from tests.e2e.harness import eventually

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SIMPLE_APP = (REPO / "examples" / "simple-app" / "config.yml").read_text()


def summary(output: str) -> str:
    """The `Op: ...` line of the Changes table."""
    match = re.search(r"^Op:\s+(.*)$", output, re.M)
    assert match, output
    return match.group(1).strip()


def app_changes(kube: Client, namespace: str) -> list:
    return list(kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/is-app-change": ""}))


def test_simple_app_lifecycle(kapply, kube: Client, namespace: str):
    first = kapply.deploy(namespace, SIMPLE_APP, app="simple-app", check=False)
    assert first.returncode == 0, first.stderr
    assert summary(first.stdout) == "2 create, 0 delete, 0 update, 0 noop, 0 exists"
    assert "create deployment/simple-app (apps/v1) namespace: " + namespace in first.stdout
    assert first.stdout.rstrip().endswith("Succeeded")

    app_cm = kube.get(ConfigMap, "simple-app", namespace=namespace)
    assert app_cm.metadata.labels == {"kapp.k14s.io/is-app": ""}
    meta = json.loads(app_cm.data["spec"])
    assert meta["labelKey"] == "kapp.k14s.io/app"
    assert meta["lastChange"]["successful"] is True
    assert {"Group": "apps", "Kind": "Deployment"} in meta["usedGKs"]
    deployment = kube.get(Deployment, "simple-app", namespace=namespace)
    assert deployment.metadata.labels["kapp.k14s.io/app"] == meta["labelValue"]
    assert deployment.spec.template.metadata.labels["kapp.k14s.io/app"] == meta["labelValue"]
    assert deployment.spec.selector.matchLabels["kapp.k14s.io/app"] == meta["labelValue"]
    assert "kapp.k14s.io/original" in deployment.metadata.annotations
    assert len(app_changes(kube, namespace)) == 1

    again = kapply.deploy(namespace, SIMPLE_APP, app="simple-app", check=False)
    assert again.returncode == 0, again.stderr
    assert summary(again.stdout) == "0 create, 0 delete, 0 update, 0 noop, 0 exists"
    assert len(app_changes(kube, namespace)) == 1, "an unchanged redeploy must not record an app-change"

    changed = kapply.deploy(
        namespace, SIMPLE_APP.replace("value: stranger", "value: friend"), "-c", app="simple-app", check=False
    )
    assert changed.returncode == 0, changed.stderr
    assert summary(changed.stdout) == "0 create, 0 delete, 1 update, 0 noop, 0 exists"
    assert f"@@ update deployment/simple-app (apps/v1) namespace: {namespace} @@" in changed.stdout
    assert re.search(r"^\s*\d+\s+-\s+value: stranger$", changed.stdout, re.M), changed.stdout
    assert re.search(r"^\s*\d+ \+\s+value: friend$", changed.stdout, re.M), changed.stdout
    env = kube.get(Deployment, "simple-app", namespace=namespace).spec.template.spec.containers[0].env
    assert env[0].value == "friend"

    without_service = (
        SIMPLE_APP.split("---\napiVersion: apps/v1")[0].split("---\napiVersion: v1")[0]
        + "---\napiVersion: apps/v1"
        + SIMPLE_APP.split("---\napiVersion: apps/v1")[1]
    )
    pruned = kapply.deploy(
        namespace, without_service.replace("value: stranger", "value: friend"), app="simple-app", check=False
    )
    assert pruned.returncode == 0, pruned.stderr
    assert summary(pruned.stdout) == "0 create, 1 delete, 0 update, 0 noop, 0 exists"
    with pytest.raises(ApiError):
        kube.get(Service, "simple-app", namespace=namespace)

    listed = kapply("ls", "-n", namespace)
    assert listed.returncode == 0, listed.stderr
    assert "simple-app" in listed.stdout
    everywhere = kapply("ls", "-A", "--tty")
    assert everywhere.returncode == 0, everywhere.stderr
    assert re.search(rf"^{namespace}\s+simple-app\s+{namespace}\s+true\s", everywhere.stdout, re.M), everywhere.stdout
    inspected = kapply("inspect", "-a", "simple-app", "-n", namespace, "--tty")
    assert inspected.returncode == 0, inspected.stderr
    assert re.search(r"simple-app\s+Deployment\s+kapp", inspected.stdout), inspected.stdout
    status = kapply("inspect", "-a", "simple-app", "-n", namespace, "--status")
    assert status.returncode == 0, status.stderr
    # kapp's transposed --status table, without a TTY: a line per field, the status as YAML
    assert re.search(r"^simple-app\t\nDeployment\t\n(.*\n)*?observedGeneration: \d+\t$", status.stdout, re.M), (
        status.stdout
    )
    history = kapply("app-change", "list", "-a", "simple-app", "-n", namespace, "--diff")
    assert history.returncode == 0, history.stderr
    assert history.stdout.count("simple-app-change-") >= 3
    assert "value: friend" in history.stdout

    deleted = kapply("delete", "-a", "simple-app", "-n", namespace, "-y")
    assert deleted.returncode == 0, deleted.stderr
    with pytest.raises(ApiError):
        kube.get(Deployment, "simple-app", namespace=namespace)
    with pytest.raises(ApiError):
        kube.get(ConfigMap, "simple-app", namespace=namespace)
    assert app_changes(kube, namespace) == []
    gone = kapply("delete", "-a", "simple-app", "-n", namespace, "-y")
    assert gone.returncode == 0 and "does not exist" in gone.stdout


def test_diff_run_exit_status_is_3_with_pending_changes_and_2_without(kapply, namespace: str):
    pending = kapply.deploy(namespace, SIMPLE_APP, "--diff-run", "--diff-exit-status", app="simple-app", check=False)
    assert pending.returncode == 3, pending.stderr
    assert "Exiting after diffing with pending changes (exit status 3)" in pending.stderr
    assert kapply.deploy(namespace, SIMPLE_APP, app="simple-app", check=False).returncode == 0
    none = kapply.deploy(namespace, SIMPLE_APP, "--diff-run", "--diff-exit-status", app="simple-app", check=False)
    assert none.returncode == 2, none.stderr
    assert "Exiting after diffing with no pending changes (exit status 2)" in none.stderr


def test_diff_run_applies_nothing(kapply, kube: Client, namespace: str):
    result = kapply.deploy(namespace, SIMPLE_APP, "--diff-run", app="simple-app", check=False)
    assert result.returncode == 0, result.stderr
    assert summary(result.stdout) == "2 create, 0 delete, 0 update, 0 noop, 0 exists"
    assert list(kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/is-app": ""})) == []
    assert list(kube.list(Deployment, namespace=namespace)) == []


SECRET = """
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: {password}
"""


def test_secret_values_are_masked_in_diffs_and_history(kapply, kube: Client, namespace: str):
    assert kapply.deploy(namespace, SECRET.format(password="hunter2"), app="secrets", check=False).returncode == 0
    changed = kapply.deploy(namespace, SECRET.format(password="correct-horse"), "-c", app="secrets", check=False)
    assert changed.returncode == 0, changed.stderr
    assert summary(changed.stdout) == "0 create, 0 delete, 1 update, 0 noop, 0 exists"
    assert "<-- value not shown (#" in changed.stdout
    assert "hunter2" not in changed.stdout and "correct-horse" not in changed.stdout
    for cm in app_changes(kube, namespace):
        assert "hunter2" not in json.dumps(cm.data) and "correct-horse" not in json.dumps(cm.data)

    shown = kapply.deploy(
        namespace,
        SECRET.format(password="battery"),
        "-c",
        "--diff-run",
        "--diff-mask=false",
        app="secrets",
        check=False,
    )
    assert "password: battery" in shown.stdout, shown.stdout
    assert "password: correct-horse" in shown.stdout, shown.stdout


def test_resource_owned_by_another_app_is_refused_unless_overridden(kapply, kube: Client, namespace: str):
    config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  k: v\n"
    assert kapply.deploy(namespace, config, app="first", check=False).returncode == 0
    refused = kapply.deploy(namespace, config, app="second", check=False)
    assert refused.returncode == 1
    assert "Ownership errors:" in refused.stderr and f"configmap/shared (v1) namespace: {namespace}" in refused.stderr
    assert "Traceback" not in refused.stderr
    taken = kapply.deploy(
        namespace, config, "--dangerous-override-ownership-of-existing-resources", app="second", check=False
    )
    assert taken.returncode == 0, taken.stderr
    owner = kube.get(ConfigMap, "shared", namespace=namespace).metadata.labels["kapp.k14s.io/app"]
    second = json.loads(kube.get(ConfigMap, "second", namespace=namespace).data["spec"])
    assert owner == second["labelValue"]


def test_api_error_fails_the_deploy_records_it_and_a_fixed_rerun_converges(kapply, kube: Client, namespace: str):
    broken = "apiVersion: v1\nkind: Service\nmetadata:\n  name: broken\nspec:\n  selector:\n    a: b\n"
    failed = kapply.deploy(namespace, broken, app="svc", check=False)
    assert failed.returncode == 1
    assert f"create service/broken (v1) namespace: {namespace}" in failed.stderr
    assert "API server says:" in failed.stderr and "reason: Invalid" in failed.stderr
    assert "Traceback" not in failed.stderr
    [change] = app_changes(kube, namespace)
    assert json.loads(change.data["spec"])["successful"] is False

    fixed = broken + "  ports:\n  - port: 80\n"
    assert kapply.deploy(namespace, fixed, app="svc", check=False).returncode == 0
    assert kube.get(Service, "broken", namespace=namespace).spec.ports[0].port == 80
    eventually(lambda: len(app_changes(kube, namespace)) == 2, what="a second app-change")


def test_seed_secret_example_masks_changed_values(kapply, namespace: str):
    """kapp's diff docs: stringData foo: bar -> bars shows two different masked values."""
    sample = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: sample\nstringData:\n  foo: {value}\n"
    assert kapply.deploy(namespace, sample.format(value="bar"), app="sample-secret", check=False).returncode == 0
    masked = kapply.deploy(
        namespace,
        sample.format(value="bars"),
        "--diff-changes=true",
        "--diff-context=4",
        "--diff-run",
        app="sample-secret",
        check=False,
    )
    assert f"@@ update secret/sample (v1) namespace: {namespace} @@" in masked.stdout
    assert re.search(r"^\s*\d+\s+-\s+foo: <-- value not shown \(#1\)$", masked.stdout, re.M), masked.stdout
    assert re.search(r"^\s*\d+ \+\s+foo: <-- value not shown \(#2\)$", masked.stdout, re.M), masked.stdout
    plain = kapply.deploy(
        namespace,
        sample.format(value="bars"),
        "-c",
        "--diff-mask=false",
        "--diff-run",
        app="sample-secret",
        check=False,
    )
    assert re.search(r"^\s*\d+\s+-\s+foo: bar$", plain.stdout, re.M), plain.stdout
    assert re.search(r"^\s*\d+ \+\s+foo: bars$", plain.stdout, re.M), plain.stdout
