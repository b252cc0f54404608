"""Approved diffs and concurrent deploys: a change made by someone else after the user approved the diff stops the
update, and two deploys of one app never interleave (issue 11, "overwrites silently")."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap

import kapply
from kapply.errors import ConcurrencyError  # not exported as kapply.ConcurrencyError yet
from tests.e2e.faults import KapplyProcess
from tests.e2e.harness import Cluster, KapplyRunner

pytestmark = pytest.mark.e2e

NO_WAIT = kapply.DeployOptions(wait=kapply.WaitOptions(wait=False))
TRIALS = 20
# When the second deploy starts, in seconds after the first: mostly the same moment, sometimes a little later, so
# that it meets the first at different points (planning, holding the app, applying, done).
OFFSETS = (0.0, 0.0, 0.0, 0.02, 0.05, 0.1, 0.2, 0.4, 0.0, 0.0)


def configmap(name: str, value: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  v: {value}\n"


def test_a_change_after_the_diff_was_approved_stops_the_deploy(
    cluster: Cluster, kapply: KapplyRunner, kube: Client, namespace: str, tmp_path: Path
):
    kapply.deploy(namespace, configmap("contested", "value-a"), app="approved")
    manifest = tmp_path / "contested.yml"
    manifest.write_text(configmap("contested", "value-b"))
    args = ("deploy", "-a", "approved", "-n", namespace, "-f", str(manifest), "-c")
    with KapplyProcess(cluster.kubeconfig, *args) as deploy:
        deploy.wait_for_output(r"Continue\? \[yN\]: $")
        assert "-   v: value-a" in deploy.stdout and "+   v: value-b" in deploy.stdout, deploy.stdout
        kube.patch(ConfigMap, "contested", {"data": {"v": "value-c"}}, namespace=namespace)
        deploy.answer("y\n")
        assert deploy.finish() == 1, deploy.stdout + deploy.stderr
    assert "approved diff no longer matches" in deploy.stderr, deploy.stderr
    recalculated = deploy.stderr.split("Recalculated diff:")[-1]
    assert "-   v: value-c" in recalculated and "+   v: value-b" in recalculated, deploy.stderr
    assert "Traceback" not in deploy.stderr
    assert kube.get(ConfigMap, "contested", namespace=namespace).data == {"v": "value-c"}


def manifest_resources(app: str, side: str, trial: int) -> list[dict]:
    """The resources of one side of the race: names of its own (`<app>-a-0`, ...), values naming the side and the
    trial."""
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}}
        for name, value in expected_configmaps(app, side, trial).items()
    ]


def expected_configmaps(app: str, side: str, trial: int) -> dict[str, str]:
    return {f"{app}-{side}-{i}": f"{side}-{trial}" for i in range(3)}


async def race(cluster: Cluster, namespace: str, app: str, trial: int) -> tuple[list[str], dict[str, BaseException]]:
    """Deploy sides `a` and `b` of the app at (about) the same moment; the sides that succeeded, in the order they
    finished, and the errors of those that failed."""
    finished: list[str] = []
    errors: dict[str, BaseException] = {}

    async def deploy(side: str, delay: float) -> None:
        async with kapply.AsyncClient(cluster.kubeconfig, namespace=namespace) as api:
            await asyncio.sleep(delay)
            try:
                await api.deploy(app, resources=manifest_resources(app, side, trial), options=NO_WAIT)
            except Exception as e:  # every failure is looked at below
                errors[side] = e
            else:
                finished.append(side)

    await asyncio.gather(deploy("a", 0.0), deploy("b", OFFSETS[trial % len(OFFSETS)]))
    return finished, errors


def app_configmaps(kube: Client, namespace: str, app: str) -> dict[str, str]:
    """The app's ConfigMaps on the cluster (not its record or history), name -> value."""
    record = kube.get(ConfigMap, app, namespace=namespace)
    label_value = json.loads(record.data["spec"])["labelValue"]
    found = kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/app": label_value})
    return {cm.metadata.name: cm.data["v"] for cm in found}


def check_trial(kube: Client, namespace: str, app: str, trial: int, finished: list[str], errors: dict) -> None:
    unexpected = {side: e for side, e in errors.items() if not isinstance(e, ConcurrencyError)}
    assert not unexpected, f"trial {trial}: {unexpected!r}"
    assert finished, f"trial {trial}: both deploys failed: {errors!r}"
    expected = expected_configmaps(app, finished[-1], trial)
    assert app_configmaps(kube, namespace, app) == expected, f"trial {trial}: {finished=} {errors=}"
    record = kube.get(ConfigMap, app, namespace=namespace)
    assert "kapply.dev/deploy-lock" not in (record.metadata.annotations or {}), "the hold was not released"


def history(kube: Client, namespace: str) -> list[dict]:
    changes = kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/is-app-change": ""})
    return [json.loads(cm.data["spec"]) for cm in changes]


def test_concurrent_deploys_of_one_app_never_interleave(cluster: Cluster, kube: Client, namespace: str):
    with kapply.Client(cluster.kubeconfig, namespace=namespace) as api:
        api.deploy("raced", resources=manifest_resources("raced", "a", -1), options=NO_WAIT)
    outcomes = [(("a",), ())]
    for trial in range(TRIALS):
        finished, errors = asyncio.run(race(cluster, namespace, "raced", trial))
        check_trial(kube, namespace, "raced", trial, finished, errors)
        outcomes.append((tuple(finished), tuple(sorted(errors))))
    changes = history(kube, namespace)
    assert len(changes) == sum(len(finished) for finished, _ in outcomes), outcomes
    assert all(c["successful"] is True for c in changes), changes


def test_concurrent_first_deploys_of_a_new_app_never_interleave(cluster: Cluster, kube: Client, namespace: str):
    outcomes = []
    for trial in range(TRIALS):
        app = f"new-{trial}"
        finished, errors = asyncio.run(race(cluster, namespace, app, trial))
        check_trial(kube, namespace, app, trial, finished, errors)
        outcomes.append((tuple(finished), tuple(sorted(errors))))
    changes = history(kube, namespace)
    assert len(changes) == sum(len(finished) for finished, _ in outcomes), outcomes
    assert all(c["successful"] is True for c in changes), changes
