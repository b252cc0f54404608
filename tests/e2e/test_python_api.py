"""kapply as a Python library: the example runs against the real cluster, and the API validates as the CLI does."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import ConfigMap

import kapply
from tests.e2e.harness import Cluster

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-dict"}, "data": {"k": "v"}}


def test_the_deploy_from_python_example_deploys_redeploys_changes_and_deletes(cluster: Cluster, namespace: str):
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "deploy_from_python.py"), namespace],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert f"'create configmap/hello (v1) namespace: {namespace}'" in out
    assert "redeploy unchanged: 0 changes" in out
    assert "-   greeting: hello" in out and "+   greeting: hi" in out
    assert f"changed: ['update configmap/hello (v1) namespace: {namespace}']" in out
    assert "'ConfigMap/hello', 'Deployment/hello'" in out and "'Pod/hello-" in out
    assert "bad input refused: Validation errors:" in out and "Expected 'apiVersion'" in out
    assert "deleted: True" in out


def test_the_async_client_deploys_dicts_and_reports_what_it_did(cluster: Cluster, kube: Client, namespace: str):
    async def scenario() -> tuple[kapply.DeployResult, kapply.DeployPlan, list[kapply.App]]:
        async with kapply.AsyncClient(cluster.kubeconfig, namespace=namespace) as k:
            result = await k.deploy("dicts", resources=[CM])
            again = await k.plan_deploy("dicts", resources=[CM])
            return result, again, await k.list_apps()

    result, again, apps = asyncio.run(scenario())
    assert [c.apply_op for c in result.changes] == [kapply.ApplyOp.CREATE]
    assert result.app_change.startswith("dicts-change-") and [c.describe() for c in result.waited_on] == [
        f"configmap/from-dict (v1) namespace: {namespace}"
    ]
    assert not again.pending
    assert [a.name for a in apps] == ["dicts"]
    assert kube.get(ConfigMap, "from-dict", namespace=namespace).data == {"k": "v"}
    assert CM["metadata"] == {"name": "from-dict"}  # the caller's dict is left alone


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda k: k.deploy("Not_Valid", resources=[CM]), kapply.KapplyError, "App name 'Not_Valid' is not valid"),
        (lambda k: k.inspect("missing"), kapply.AppNotFoundError, "App 'missing' .* does not exist"),
        (lambda k: k.deploy("x", resources=[{"kind": "ConfigMap"}]), kapply.ManifestError, "Validation errors"),
    ],
)
def test_the_api_refuses_bad_input_as_the_cli_does(cluster: Cluster, kube: Client, namespace, call, error, message):
    with kapply.Client(cluster.kubeconfig, namespace=namespace) as k, pytest.raises(error, match=message):
        call(k)
    with pytest.raises(ApiError):
        kube.get(ConfigMap, "Not_Valid", namespace=namespace)


def test_the_namespace_defaults_as_kapps_does(cluster: Cluster, tmp_path: Path, monkeypatch):
    """-n, else $KAPP_NAMESPACE, else the context's namespace, which is `default` when the context sets none (as
    client-go has it)."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for context in config["contexts"]:
        context["context"].pop("namespace", None)
    no_namespace = tmp_path / "kubeconfig"
    no_namespace.write_text(yaml.safe_dump(config))
    monkeypatch.delenv("KAPP_NAMESPACE", raising=False)
    only_plan = kapply.DeployOptions(diff=kapply.DiffOptions(run=True))  # kapp's --diff-run: namespaces may not exist
    with kapply.Client(no_namespace) as k:
        assert k.plan_deploy("x", resources=[CM]).app.namespace == "default"
        monkeypatch.setenv("KAPP_NAMESPACE", "from-env")
        assert k.plan_deploy("x", resources=[CM], options=only_plan).app.namespace == "from-env"
        assert k.plan_deploy("x", resources=[CM], namespace="given", options=only_plan).app.namespace == "given"


def test_a_redeploy_lists_what_its_app_used_while_it_reads_the_manifests(cluster: Cluster, namespace: str):
    """The app's record names the types it used: their LISTs go out while the manifests are still being read (this
    stdin gives its text only once the ConfigMaps' LIST has been sent), and each type is listed once."""
    docs = [
        CM,
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"k": "v"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
    ]
    text = yaml.safe_dump_all(docs)
    configmaps_listed = threading.Event()
    listed_while_reading: list[bool] = []

    class SlowStdin(io.StringIO):
        def read(self, size: int | None = -1) -> str:
            listed_while_reading.append(configmaps_listed.wait(timeout=15))
            return super().read(size)

    async def scenario() -> tuple[kapply.DeployPlan, list[tuple[str, str, str]]]:
        async with kapply.AsyncClient(cluster.kubeconfig, namespace=namespace) as k:
            await k.deploy("listed", resources=docs)
            sent: list[tuple[str, str, str]] = []
            request = k.cluster.request

            async def recorded(method: str, path: str, **kwargs: Any) -> Any:
                selector = (kwargs.get("params") or {}).get("labelSelector", "")
                sent.append((method, path, selector))
                if method == "GET" and path == "/api/v1/configmaps" and selector:
                    configmaps_listed.set()
                return await request(method, path, **kwargs)

            k.cluster.request = recorded  # type: ignore[method-assign]
            return await k.plan_deploy("listed", files=["-"], stdin=SlowStdin(text)), sent

    plan, sent = asyncio.run(scenario())
    assert listed_while_reading == [True]
    assert not plan.pending
    lists = sorted(path for method, path, selector in sent if method == "GET" and selector)
    assert lists == ["/api/v1/configmaps", "/api/v1/secrets", "/api/v1/serviceaccounts"], sent
    assert all(method == "GET" for method, _, _ in sent), sent
