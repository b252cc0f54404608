"""A cluster nothing can be asked of: a closed port, a name that does not resolve, a server whose certificate the
kubeconfig does not trust. kapp fails at once naming why in Go's words; kapply fails on its first attempt with the same
words (it retried for ~45 s before, then said `ClientConnectorError`), and exits 1 as kapp does (issue 30, "Fail fast
where nothing can succeed"). A file that does not parse is reported whatever the cluster does, even one that accepts
connections and never answers (kapp asks the cluster first and reports the connection's failure instead)."""

from __future__ import annotations

import base64
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
import yaml

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat

CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n"
# kapp names the resolver it asked (`lookup HOST on 10.0.0.53:53: no such host`), which Python is not told
_RESOLVER = re.compile(r" on [0-9a-f.:\[\]]+:53(?=: )")


def kubeconfig(path: Path, server: str, ca: str | None = None) -> Path:
    cluster = {"server": server, **({"certificate-authority-data": ca} if ca else {"insecure-skip-tls-verify": True})}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "default"}}],
                "current-context": "x",
            }
        )
    )
    return path


@pytest.fixture
def closed_port() -> Iterator[int]:
    with closing(socket.socket()) as held:  # bound, never listening: refused, and no other test takes it meanwhile
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def untrusting(both: Harness, tmp_path: Path) -> Path:
    """The local cluster's server with a CA that did not sign its certificate."""
    config = yaml.safe_load(both.kubeconfig.read_text())
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=other-ca"]
        + ["-keyout", str(tmp_path / "ca.key"), "-out", str(tmp_path / "ca.crt")],
        check=True,
        capture_output=True,
    )
    ca = base64.b64encode((tmp_path / "ca.crt").read_bytes()).decode()
    return kubeconfig(tmp_path / "untrusting", config["clusters"][0]["cluster"]["server"], ca)


def why(stderr: str) -> str:
    """The reason a request failed, after the request kapp (`Get "URL": `) or kapply (`... failed: `) names."""
    match = re.search(r'(?:Get "[^"]+"|Request GET /\S+ to \S+ failed): (.+)$', stderr.strip(), re.S)
    assert match, stderr
    return _RESOLVER.sub("", match.group(1))


@pytest.mark.parametrize("where", ["closed port", "unknown host", "untrusted certificate"])
def test_a_cluster_that_cannot_be_reached_fails_the_deploy_at_once_in_kapps_words(
    both: Harness, tmp_path: Path, closed_port: int, where: str
):
    path = {
        "closed port": lambda: kubeconfig(tmp_path / "k", f"https://127.0.0.1:{closed_port}"),
        "unknown host": lambda: kubeconfig(tmp_path / "k", "https://kapply-compat.invalid:6443"),
        "untrusted certificate": lambda: untrusting(both, tmp_path),
    }[where]()
    pair = both.run("deploy", "-a", "app", "-f", "-", "-y", input=CONFIG_MAP, env={"KUBECONFIG": str(path)})
    assert pair.kapp.code == pair.kapply.code == 1, pair
    assert pair.kapply.stdout == pair.kapp.stdout  # Target cluster '<server>', without nodes
    assert why(pair.kapply.stderr) == why(pair.kapp.stderr)
    assert "Traceback" not in pair.kapply.stderr


def hold(server: socket.socket, held: list[socket.socket]) -> None:
    """Accept every connection and answer nothing, until the server is closed."""
    try:
        while True:
            held.append(server.accept()[0])
    except OSError:
        return


def test_a_file_that_does_not_parse_is_reported_whatever_the_cluster_does(tmp_path: Path):
    """The server accepts connections and never answers: a deploy that waited on it (for its nodes, say) would not
    report the file's error before the subprocess's deadline."""
    bad = tmp_path / "bad.yml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\n")
    held: list[socket.socket] = []
    with closing(socket.socket()) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        threading.Thread(target=hold, args=(server, held), daemon=True).start()
        path = kubeconfig(tmp_path / "k", f"https://127.0.0.1:{port}")
        done = subprocess.run(
            [sys.executable, "-m", "kapply", "deploy", "-a", "app", "-f", str(bad), "-y", "--kubeconfig", str(path)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    for connection in held:
        connection.close()
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith(f"kapply: Error: Parsing file '{bad}': "), done.stderr
    assert done.stdout == f"Target cluster 'https://127.0.0.1:{port}'\n\n"
