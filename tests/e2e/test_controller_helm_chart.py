"""`fetch[].helmChart` through the controller process (issue 32): a chart packaged with the real helm (`helm
package`), served from a helm repository of the test's own (an http server on 127.0.0.1 serving the index.yaml `helm
repo index` writes and the chart, behind basic credentials the App's Secret holds) and pushed with `helm push` to the
tests' OCI registry (`crane registry serve`, tests/e2e/registry.py). An App for each fetches the chart, templates it
with helmTemplate and deploys it; the test checks the ConfigMap deployed, the status's lock (vendir's `helmChart:
{version, appVersion}`) and the credentials the repository saw.

One controller for the module (`-n` its own namespace, `--dangerous-allow-plain-http-registries`: the registry
serves plain http on 127.0.0.1), and one namespace, deleted at the end with everything in it.
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client

from tests.e2e.controller_harness import (
    App,
    Controllers,
    config_map_data,
    create_all,
    inline_app,
    module_controller,
    status,
    tool_env,
)
from tests.e2e.harness import Cluster, external_tool
from tests.e2e.registry import Registry
from tests.e2e.test_controller_hostile import outcomes

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

USER, PASSWORD = "charts", f"pw-{uuid.uuid4().hex}"
CHART_YAML = "apiVersion: v2\nname: hello\nversion: 0.1.0\nappVersion: '1.0'\n"
TEMPLATE = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-hello\n"
    "data:\n  greeting: {{ .Values.greeting | quote }}\n  chart: {{ .Chart.Name }}-{{ .Chart.Version }}\n"
)


# --- helm, a helm repository ------------------------------------------------------------------------------------------


def helm(*args: str | Path, home: Path) -> str:
    """The real helm (the one the controller runs too), with its configuration, cache and registry logins in
    `home`."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        "HELM_REGISTRY_CONFIG": str(home / "registry.json"),
    }
    command = [str(external_tool("helm", "KAPPLY_HELM")), *map(str, args)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert result.returncode == 0, f"helm {' '.join(map(str, args))}:\n{result.stderr}"
    return result.stdout.strip()


def package(directory: Path, files: dict[str, str], out: Path) -> Path:
    """The chart of `files` (Chart.yaml among them) in `directory`, packaged by `helm package` into `out`; the .tgz."""
    for relative, content in files.items():
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_text(content)
    out.mkdir(exist_ok=True)
    helm("package", directory, "--destination", out, home=out.parent / "helm-home")
    meta = yaml.safe_load(files["Chart.yaml"])
    return out / f"{meta['name']}-{meta['version']}.tgz"


Body = bytes | Callable[[], Iterator[bytes]]  # a body, or chunks sent as they come (no Content-Length)


@dataclass
class Repository:
    """An http server on 127.0.0.1 serving `files` (path -> body); those under `protected` only with USER:PASSWORD.
    `seen` records (path, Authorization header) of each request."""

    base: str = ""
    files: dict[str, Body] = field(default_factory=dict)
    protected: str = "/charts/"
    seen: list[tuple[str, str | None]] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"{self.base}{path}"


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


@pytest.fixture(scope="module")
def serving() -> Iterator[Callable[[], Repository]]:
    """serving() starts a Repository; all are stopped at the end of the module."""
    servers: list[ThreadingHTTPServer] = []

    def start() -> Repository:
        repository = Repository()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                authorization = self.headers.get("Authorization")
                repository.seen.append((self.path, authorization))
                if self.path.startswith(repository.protected) and authorization != basic(USER, PASSWORD):
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="charts"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                found = repository.files.get(self.path)
                if found is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif isinstance(found, bytes):
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(found)))
                    self.end_headers()
                    self.wfile.write(found)
                else:
                    self.send_response(200)
                    self.end_headers()
                    try:
                        for chunk in found():
                            self.wfile.write(chunk)
                    except OSError:
                        pass  # the client stopped reading

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        repository.base = f"http://127.0.0.1:{server.server_port}"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return repository

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


# --- the module's namespace and controller ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def controller(
    cluster: Cluster, kube: Client, module_namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Controllers]:
    """One controller for the module's namespace, with ytt and helm, allowed plain http to the loopback registry."""
    logs = tmp_path_factory.mktemp("logs")
    with module_controller(
        cluster.kubeconfig,
        kube,
        module_namespace,
        logs,
        "--dangerous-allow-plain-http-registries",
        env=tool_env("ytt", "helm"),
    ) as running:
        yield running


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hello-0.1.0.tgz, as `helm package` makes it."""
    work = tmp_path_factory.mktemp("chart")
    files = {"Chart.yaml": CHART_YAML, "values.yaml": "greeting: hi\n", "templates/cm.yaml": TEMPLATE}
    return package(work / "hello", files, work / "out")


def helm_app(name: str, namespace: str, chart: dict[str, Any]) -> Any:
    return App(**inline_app(name, namespace, {}, fetch=[{"helmChart": chart}], template=[{"helmTemplate": {}}]))


def secret(name: str, namespace: str, **data: str) -> str:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    document = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}}
    return yaml.safe_dump({**document, "data": encoded})


def assert_deployed(kube: Client, namespace: str, app: str) -> None:
    reported = outcomes(kube, namespace, app, timeout=60)[app]
    assert reported["conditions"][0]["type"] == "ReconcileSucceeded", reported
    assert config_map_data(kube, namespace, f"{app}-hello") == {"greeting": "hi", "chart": "hello-0.1.0"}
    lock = yaml.safe_load(status(kube, namespace, app)["fetch"]["stdout"])
    assert lock["directories"] == [{"path": ".", "helmChart": {"version": "0.1.0", "appVersion": "1.0"}}]


# --- the tests --------------------------------------------------------------------------------------------------------


def test_a_chart_from_a_helm_repository_behind_credentials_is_templated_and_deployed(
    controller: Controllers, kube: Client, module_namespace: str, chart: Path, serving: Callable[[], Repository]
):
    repository = serving()
    helm("repo", "index", chart.parent, home=chart.parent.parent / "helm-home")  # relative URLs: hello-0.1.0.tgz
    repository.files["/charts/index.yaml"] = (chart.parent / "index.yaml").read_bytes()
    repository.files["/charts/hello-0.1.0.tgz"] = chart.read_bytes()
    create_all(kube, secret("repo-creds", module_namespace, username=USER, password=PASSWORD))
    source = {"name": "hello", "repository": {"url": repository.url("/charts"), "secretRef": {"name": "repo-creds"}}}
    kube.create(helm_app("from-repo", module_namespace, source))

    assert_deployed(kube, module_namespace, "from-repo")
    assert set(repository.seen) == {
        ("/charts/index.yaml", basic(USER, PASSWORD)),
        ("/charts/hello-0.1.0.tgz", basic(USER, PASSWORD)),
    }


def test_a_chart_pushed_to_an_oci_registry_is_templated_and_deployed(
    controller: Controllers, kube: Client, module_namespace: str, chart: Path, oci_registry: Registry
):
    home = chart.parent.parent / "helm-home"
    helm("push", chart, f"oci://{oci_registry.host}/charts", "--plain-http", home=home)
    source = {"name": "hello", "version": "0.1.0", "repository": {"url": f"oci://{oci_registry.host}/charts"}}
    kube.create(helm_app("from-oci", module_namespace, source))

    assert_deployed(kube, module_namespace, "from-oci")
