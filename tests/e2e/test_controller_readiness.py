"""`/readyz` says whether the controller reaches the API server (docs/reconciler.md, "Metrics, probes and logs"): a
controller whose kubeconfig names a TCP proxy to the API server, which the test cuts (new connections refused, open
ones, the watches', dropped) and restores. /readyz turns 503 within the readiness window (plus a probe's timeout),
naming the silence, while /healthz stays 200; once the proxy is back, /readyz is 200 again. The cluster itself is
never touched."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from lightkube import Client

from kapply.controller.health import PROBE_RETRY, PROBE_TIMEOUT, READY_WINDOW
from tests.e2e.controller_harness import controller, endpoint, install_crd
from tests.e2e.harness import Cluster, eventually
from tests.e2e.test_controller_metrics import get

pytestmark = pytest.mark.e2e


class Proxy:
    """127.0.0.1:`port` forwarded to `target`, byte for byte (TLS passes through); `cut` refuses new connections and
    drops the open ones, `restore` listens on the same port again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.port = 0
        self.restore()

    def restore(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port))
        listener.settimeout(0.1)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            for conn in self._open:
                conn.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while self._listener is listener:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for conn in (source, sink):
                conn.close()


@pytest.fixture
def proxied_kubeconfig(cluster: Cluster, tmp_path: Path) -> Iterator[tuple[Path, Proxy]]:
    """The cluster's admin kubeconfig, its server replaced by a proxy the test owns."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    (entry,) = config["clusters"]
    host, port = entry["cluster"]["server"].removeprefix("https://").rsplit(":", 1)
    proxy = Proxy((host, int(port)))
    entry["cluster"]["server"] = f"https://{host}:{proxy.port}"
    path = tmp_path / "proxied.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    try:
        yield path, proxy
    finally:
        proxy.cut()


def test_readyz_is_503_while_the_api_server_is_unreachable_and_200_once_it_is_back(
    cluster: Cluster, kube: Client, namespace: str, proxied_kubeconfig: tuple[Path, Proxy], tmp_path: Path
) -> None:
    install_crd(cluster.kubeconfig, kube)
    kubeconfig, proxy = proxied_kubeconfig
    log = tmp_path / "controller.log"
    with controller(kubeconfig, log, "--leader-elect=false", "--packaging=false", "-n", namespace):
        url = endpoint(log)
        eventually(lambda: get(url + "/readyz")[0] == 200, timeout=30, interval=0.2, what="ready")

        proxy.cut()
        cut = time.monotonic()
        eventually(lambda: get(url + "/readyz")[0] == 503, timeout=READY_WINDOW + PROBE_TIMEOUT + 5, interval=0.2)
        unready = time.monotonic() - cut
        code, text = get(url + "/readyz")
        assert code == 503 and text.startswith("the API server has not answered for "), text
        assert get(url + "/healthz") == (200, "ok\n")  # alive all along: the liveness probe does not restart it

        proxy.restore()
        back = time.monotonic()
        eventually(lambda: get(url + "/readyz")[0] == 200, timeout=PROBE_TIMEOUT + PROBE_RETRY + 5, interval=0.2)
        print(f"unready {unready:.1f}s after the cut, ready {time.monotonic() - back:.1f}s after the restore")
    assert "the API server does not answer" in log.read_text() and "the API server answers again" in log.read_text()
