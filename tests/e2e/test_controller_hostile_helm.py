"""Hostile `helmChart` sources against the controller process (issue 32): a chart archive with an entry climbing out
with `../` to a canary file and symlinks to the canary (absolute, and relative climbing out), an index.yaml that never
ends and one of nested aliases ("billion laughs"), a chart URL in the index on another origin than the repository
(the repository's credentials must not follow it), a version that is an option (`--foo`) and names with path
separators. Each hostile App ends ReconcileFailed naming what was refused, the canary (in the test's temporary
directory only) is whole and its token, like the repository's password, appears in no ConfigMap, Event, App or log
line; the chart on another origin is deployed without the credentials.

One controller for the module, with `KAPPLY_FETCH_MAX_BYTES=1048576` (so the endless index is stopped at 1 MiB, its
cap being the lower of that and 64 MiB), in a namespace of the module's own.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client

from tests.e2e.controller_harness import (
    Controllers,
    config_map,
    config_map_data,
    create_all,
    module_controller,
    tool_env,
)
from tests.e2e.harness import Cluster
from tests.e2e.test_controller_helm_chart import (
    PASSWORD,
    USER,
    Repository,
    basic,
    helm_app,
    secret,
    serving,
)
from tests.e2e.test_controller_hostile import _texts, assert_refused, climb, outcomes

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
__all__ = ["serving"]  # the fixture this module uses from test_controller_helm_chart

MAX_BYTES = 1 << 20
CHART_YAML = b"apiVersion: v2\nname: hello\nversion: 0.1.0\nappVersion: '1.0'\n"


@pytest.fixture(scope="module")
def canary(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A directory of the test's own holding token.yaml, a ConfigMap carrying a token."""
    root = tmp_path_factory.mktemp("canary")
    token = f"CANARY-{uuid.uuid4()}"
    (root / "token.yaml").write_text(config_map("stolen", token=token))
    return root, token


@pytest.fixture(scope="module")
def controller(
    cluster: Cluster, kube: Client, module_namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Controllers]:
    logs = tmp_path_factory.mktemp("logs")
    with module_controller(
        cluster.kubeconfig,
        kube,
        module_namespace,
        logs,
        env={**tool_env("ytt", "helm"), "KAPPLY_FETCH_MAX_BYTES": str(MAX_BYTES)},
    ) as running:
        yield running


def chart_tgz(members: dict[str, bytes | tuple[bytes, str]]) -> bytes:
    """A gzipped tar of files (name -> content) and links (name -> (tarfile type, target)), hello/Chart.yaml first."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, value in {"hello/Chart.yaml": CHART_YAML, **members}.items():
            info = tarfile.TarInfo(name)
            if isinstance(value, tuple):
                info.type, info.linkname = value
                tar.addfile(info)
            else:
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value))
    return gzip.compress(buffer.getvalue())


def index(name: str, url: str) -> bytes:
    return yaml.safe_dump({"apiVersion": "v1", "entries": {"hello": [{"version": "0.1.0", "urls": [url]}]}}).encode()


def endless() -> Iterator[bytes]:
    yield b"apiVersion: v1\nentries:\n"
    for _ in range(64):  # 64 MiB, far more than the controller reads
        yield b"#" * (1 << 20)


def aliases() -> bytes:
    """A 600-byte index whose entries expand to 10^10 nodes."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    return "\n".join([*lines, "entries: {hello: *a9}"]).encode()


def test_hostile_charts_indexes_and_names_are_refused_and_credentials_stay_at_the_repository(
    controller: Controllers,
    kube: Client,
    module_namespace: str,
    serving: Callable[[], Repository],
    canary: tuple[Path, str],
):
    root, token = canary
    before = (root / "token.yaml").read_text()
    repository, elsewhere = serving(), serving()
    elsewhere.protected = "/nothing/"
    template = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}-hello'}\ndata: {a: b}\n"
    charts = {
        # name: (the chart's members, what the message says after `Unpacking chart: hello-0.1.0.tgz: `)
        "climbing-entry": ({f"hello/{climb(root / 'token.yaml')}": b"overwritten"}, "entry 'hello/../../"),
        "absolute-symlink": (
            {"hello/templates/stolen.yaml": (tarfile.SYMTYPE, str(root / "token.yaml"))},
            "entry 'hello/templates/stolen.yaml' is a symlink to an absolute path",
        ),
        "climbing-symlink": (
            {"hello/templates": (tarfile.SYMTYPE, climb(root))},
            "entry 'hello/templates' is a symlink that resolves outside the directory",
        ),
    }
    for name, (members, _) in charts.items():
        repository.files[f"/charts/{name}/index.yaml"] = index(name, "hello-0.1.0.tgz")
        repository.files[f"/charts/{name}/hello-0.1.0.tgz"] = chart_tgz(members)
    repository.files["/charts/huge/index.yaml"] = endless
    repository.files["/charts/aliases/index.yaml"] = aliases()
    repository.files["/charts/elsewhere/index.yaml"] = index("elsewhere", elsewhere.url("/hello.tgz"))
    elsewhere.files["/hello.tgz"] = chart_tgz({"hello/templates/cm.yaml": template})
    create_all(kube, secret("creds", module_namespace, username=USER, password=PASSWORD))

    def source(path: str, **more: Any) -> dict[str, Any]:
        url = repository.url(f"/charts/{path}")
        return {"name": "hello", "repository": {"url": url, "secretRef": {"name": "creds"}}} | more

    apps = {name: source(name) for name in [*charts, "huge", "aliases", "elsewhere"]}
    apps["option-version"] = source("elsewhere", version="--foo")
    apps["path-name"] = source("elsewhere", name="../../charts/hello")
    apps["oci-path-name"] = {"name": "a/b", "version": "1.0.0", "repository": {"url": "oci://127.0.0.1:1/charts"}}
    for name, chart in apps.items():
        kube.create(helm_app(name, module_namespace, chart))

    reported = outcomes(kube, module_namespace, *apps, timeout=60)
    assert (root / "token.yaml").read_text() == before, "the canary was changed"
    texts = _texts(kube, module_namespace, controller)
    leaks = [
        where
        for where, text in texts.items()
        if not where.startswith("Secret ") and (token in text or PASSWORD in text)
    ]
    assert not leaks, f"leaked into {leaks}"
    assert reported["elsewhere"]["conditions"][0]["type"] == "ReconcileSucceeded", reported["elsewhere"]
    assert config_map_data(kube, module_namespace, "elsewhere-hello") == {"a": "b"}
    assert set(repository.seen) >= {("/charts/elsewhere/index.yaml", basic(USER, PASSWORD))}
    assert {authorization for _, authorization in elsewhere.seen} == {None}, elsewhere.seen
    for name, (_, why) in charts.items():
        assert_refused(reported[name], f"Unpacking chart: hello-0.1.0.tgz: {why}")
    assert "leaves the directory (..); refusing" in reported["climbing-entry"]["friendlyDescription"]
    assert_refused(reported["huge"], f"Downloading index.yaml: Expected it to be at most {MAX_BYTES} bytes")
    assert_refused(reported["aliases"], "/charts/aliases/index.yaml doc 1: document contains excessive aliasing")
    assert_refused(reported["option-version"], "Expected spec.fetch[0].helmChart.version not to start with '-'")
    for name in ("path-name", "oci-path-name"):
        assert_refused(reported[name], "Expected spec.fetch[0].helmChart.name to be a chart name")
