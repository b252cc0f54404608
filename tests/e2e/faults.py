"""Faults for e2e tests: another actor acting between kapply's prompt and the answer, a kube-apiserver that stalls or
dies mid-deploy (`hack/cluster.py pause|resume|kill|restart`), and API Priority and Fairness rejecting a user's
requests with 429. Each fault is undone when its block ends, whatever happens in it."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx2
import pytest
import yaml
from lightkube import Client, KubeConfig
from lightkube.config.client_adapter import ConnectionParams
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ServiceAccount
from lightkube.resources.flowcontrol_apiserver_v1 import FlowSchema, PriorityLevelConfiguration
from lightkube.resources.rbac_authorization_v1 import RoleBinding

from tests.e2e.harness import Cluster, eventually


class KapplyProcess:
    """The kapply CLI running in the background, its output read as it comes (a prompt ends without a newline). Use
    it in a `with` block: it is killed at the end of the block if it still runs."""

    def __init__(self, kubeconfig: Path, *args: str, stdin: str | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kapply", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        )
        self.stdout = ""
        self.stderr = ""
        assert self.process.stdin is not None
        if stdin is not None:
            self.process.stdin.write(stdin.encode())
            self.process.stdin.close()
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, "stdout"), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, "stderr"), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def __enter__(self) -> KapplyProcess:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def _read(self, stream: object, name: str) -> None:
        while chunk := stream.read1(4096):  # type: ignore[attr-defined]
            setattr(self, name, getattr(self, name) + chunk.decode())

    def wait_for_output(self, pattern: str, timeout: float = 60) -> None:
        """Until stdout matches `pattern` (a regex); fails if kapply ends first."""
        eventually(
            lambda: re.search(pattern, self.stdout, re.M) or self.process.poll() is not None,
            timeout=timeout,
            what=f"kapply to print {pattern!r}",
        )
        assert re.search(pattern, self.stdout, re.M), f"kapply ended first:\n{self.stdout}{self.stderr}"

    def answer(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode())
        self.process.stdin.close()

    def finish(self, timeout: float = 120) -> int:
        """kapply's exit code, once it has ended and its output is read."""
        code = self.process.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=10)
        return code


def local_control_plane(cluster: Cluster, cluster_script: ModuleType) -> ModuleType:
    """hack/cluster.py, when it runs the cluster under test (only then can a test stop its API server)."""
    state = cluster_script.read_state()
    if state is None or cluster.kubeconfig != cluster_script.DATA_DIR / "kubeconfig":
        pytest.skip("the cluster under test is not the local control plane of hack/cluster.py")
    return cluster_script


def healthy(cluster_script: ModuleType) -> bool:
    state = cluster_script.read_state()
    return state is not None and bool(cluster_script.healthy(state))


@contextlib.contextmanager
def paused(cluster_script: ModuleType, component: str) -> Iterator[None]:
    """The component frozen (SIGSTOP) for the block; resumed however the block ends."""
    try:
        cluster_script.pause(component)
        yield
    finally:
        cluster_script.resume(component)


@contextlib.contextmanager
def killed(cluster_script: ModuleType, component: str) -> Iterator[None]:
    """The component killed (SIGKILL) at the start of the block and restarted at its end (the restart waits until
    the API server is ready again)."""
    try:
        cluster_script.kill(component)
        yield
    finally:
        cluster_script.restart(component)


def http_client(kubeconfig: Path) -> httpx2.Client:
    """A plain HTTP client with the kubeconfig's credentials, for what lightkube does not read (metrics, headers)."""
    config = KubeConfig.from_file(kubeconfig).get()
    return httpx2.Client(**ConnectionParams(timeout=httpx2.Timeout(30)).httpx_params(config))


def service_account_kubeconfig(kube: Client, admin_kubeconfig: Path, namespace: str, name: str, path: Path) -> Path:
    """A kubeconfig for a new ServiceAccount `name` that is `admin` of `namespace` only (a TokenRequest token)."""
    kube.create(ServiceAccount.from_dict({"metadata": {"name": name}}), namespace=namespace)
    kube.create(
        RoleBinding.from_dict(
            {
                "metadata": {"name": f"{name}-admin"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            }
        ),
        namespace=namespace,
    )
    request = ServiceAccount.Token(metadata=ObjectMeta(), spec=TokenRequestSpec(audiences=[], expirationSeconds=3600))
    token = kube.create(request, name, namespace=namespace).status.token
    cluster = yaml.safe_load(admin_kubeconfig.read_text())["clusters"][0]
    context = {"cluster": cluster["name"], "user": name, "namespace": namespace}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [cluster],
                "users": [{"name": name, "user": {"token": token}}],
                "contexts": [{"name": name, "context": context}],
                "current-context": name,
            }
        )
    )
    return path


def rejected_requests(kube_http: httpx2.Client, priority_level: str) -> int:
    """How many requests API Priority and Fairness has rejected (429) at the priority level, from /metrics."""
    response = kube_http.get("/metrics")
    response.raise_for_status()
    total = 0.0
    for line in response.text.splitlines():
        if line.startswith("apiserver_flowcontrol_rejected_requests_total{") and (
            f'priority_level="{priority_level}"' in line
        ):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


@contextlib.contextmanager
def rejecting_priority_level(kube: Client, name: str, namespace: str, service_account: str) -> Iterator[str]:
    """API Priority and Fairness set up to answer 429 to the ServiceAccount's concurrent requests: a priority level
    with the smallest share of the server's concurrency (a few seats), borrowing nothing and queuing nothing
    (`Reject`), and a flow schema that sends every request of the ServiceAccount there. Yields the priority level's
    UID; both objects are deleted when the block ends."""
    level = PriorityLevelConfiguration.from_dict(
        {
            "metadata": {"name": name},
            "spec": {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": 1,
                    "lendablePercent": 0,
                    "borrowingLimitPercent": 0,
                    "limitResponse": {"type": "Reject"},
                },
            },
        }
    )
    schema = FlowSchema.from_dict(
        {
            "metadata": {"name": name},
            "spec": {
                "priorityLevelConfiguration": {"name": name},
                "matchingPrecedence": 500,  # before every default schema a ServiceAccount would match
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [
                    {
                        "subjects": [
                            {
                                "kind": "ServiceAccount",
                                "serviceAccount": {"name": service_account, "namespace": namespace},
                            }
                        ],
                        "resourceRules": [
                            {
                                "verbs": ["*"],
                                "apiGroups": ["*"],
                                "resources": ["*"],
                                "namespaces": ["*"],
                                "clusterScope": True,
                            }
                        ],
                        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                    }
                ],
            },
        }
    )
    created = kube.create(level)
    try:
        kube.create(schema)
        try:
            yield created.metadata.uid
        finally:
            kube.delete(FlowSchema, name)
    finally:
        kube.delete(PriorityLevelConfiguration, name)
