"""Hostile formats (issue 28, reproductions 2, 4 and 6): what a tenant writes in a kustomization, an archive or a
Secret, turned against the controller's checks, its memory, or its error handling. Each App ends ReconcileFailed with
a message naming what was refused; canaries (tests/e2e/test_controller_hostile.py's, in the test's temporary
directory only) are whole and their token appears in no ConfigMap, Secret, Event, App or log line; the controller's
memory stays small while bombs are refused (its peak RSS, VmHWM, and that of every process it starts, recorded and
printed). Archives are served by an http server of the test's own on 127.0.0.1, images by the test session's registry.

- kustomize: a kustomization file with a second document (the check read the first only when there was one),
  naming a path that leaves the fetch directory or a URL of the controller's own loopback, nested or not, and the
  same entry under a key written in another case (kustomize's Go decoder matches field names in any case).
- archives: a 1 MB gzip whose PAX extended header declares 1 GiB (the controller allocated 3 GB), the same with a
  GNU long name, and broken archives of every format (truncated tar, the first 30 bytes of a tgz, truncated tgz, bad
  gzip CRC, corrupt zip central directory, zip entry with a bad CRC, truncated image layer), which ended reconciles
  with an exception (`reconcile crashed`, status `Reconciling` forever) or were half unpacked.
- credentials: Secret fields no tool can carry (the byte 0xff, a NUL) for git (username, password, ssh key, known
  hosts), http basic auth and registries, which ended in a UnicodeDecodeError, `reconcile crashed`.

Run against the code before the fixes (commits 166d925, e6f0c80), every test fails: the kustomize Apps deploy the
canary's token and GET the loopback URL, the bombs end with the sandbox's memory limit instead of a message naming the
header bound (before the sandbox: 3 GB of RSS), the 30-byte tgz and the git username end `reconcile crashed`, a bad
gzip CRC is deployed as if whole.
"""

from __future__ import annotations

import base64
import gzip
import io
import os
import tarfile
import threading
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.codecs import from_dict

from tests.e2e import test_controller_hostile as hostile
from tests.e2e.controller_harness import App, Controllers, config_map, inline_app, status
from tests.e2e.test_controller_hostile import Canary, _texts, assert_nowhere, assert_refused, climb, outcomes, serve

pytestmark = pytest.mark.e2e
# The hostile suite's fixtures: its canary, and controllers with rbac.yml's rights for the test's namespace.
canary, controllers, identity = hostile.canary, hostile.controllers, hostile.identity

GIB = 1 << 30
MAX_RSS = 500 << 20


# --- the test's own http server ---------------------------------------------------------------------------------------


@dataclass
class Web:
    base: str
    files: dict[str, bytes] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def put(self, name: str, content: bytes) -> str:
        self.files[f"/{name}"] = content
        return f"{self.base}/{name}"


@pytest.fixture
def web() -> Iterator[Web]:
    """An http server on 127.0.0.1 serving what the test puts, recording every request."""
    served = Web("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            served.requests.append(self.path)
            body = served.files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served.base = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()


def http_app(name: str, namespace: str, url: str, **http: Any) -> App:
    return App(**inline_app(name, namespace, {}, fetch=[{"http": {"url": url, **http}}]))


# --- memory -----------------------------------------------------------------------------------------------------------


def _kib(pid: int, field_name: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field_name}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{current}/task/{task}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                found.append(child)
                pending.append(child)
    return found


@dataclass
class Peaks:
    controller: int = 0  # the controller process's VmHWM
    children: int = 0  # the largest VmRSS seen of any process it started (the sandbox's), sampled


@pytest.fixture
def memory() -> Iterator[Callable]:
    """memory(process) samples the process's peak RSS and its descendants' RSS every 20 ms until the test ends; the
    Peaks it returns fill as it goes."""
    stop = threading.Event()
    threads = []

    def watch(process: Any) -> Peaks:
        peaks = Peaks()

        def sample() -> None:
            while not stop.wait(0.02):
                peaks.controller = max(peaks.controller, _kib(process.pid, "VmHWM"))
                for child in _descendants(process.pid):
                    peaks.children = max(peaks.children, _kib(child, "VmRSS"))

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        threads.append(thread)
        return peaks

    yield watch
    stop.set()
    for thread in threads:
        thread.join()


# --- kustomize --------------------------------------------------------------------------------------------------------


def test_a_kustomization_with_more_documents_nested_or_spelled_otherwise_builds_nothing_from_outside(
    controllers: Controllers, kube: Client, namespace: str, canary: Canary, web: Web
):
    loopback = web.put("cm.yaml", config_map("canary-web", stolen=canary.token).encode())
    out = climb(canary.kustomization)
    attacks = {
        # name: (files, the kustomization refused, its entry, why)
        "second-document": ({"kustomization.yaml": f"resources: [{out}]\n---\n"}, "kustomization.yaml", out, "stay"),
        "loopback-url": (
            {"kustomization.yaml": f"resources: [{loopback}]\n---\n"},
            "kustomization.yaml",
            loopback,
            "url",
        ),
        "nested": (
            {
                "overlay/kustomization.yaml": "resources: [../base]\n---\nkind: Ignored\n",
                "base/kustomization.yaml": f"resources: [cm.yml]\n---\nresources: [{out}]\n",
                "base/cm.yml": config_map("plain", a="b"),
            },
            "base/kustomization.yaml",
            out,
            "stay",
        ),
        "key-in-another-case": ({"kustomization.yaml": f"Resources: [{out}]\n"}, "kustomization.yaml", out, "stay"),
    }
    for name, (files, *_) in attacks.items():
        path = "overlay" if name == "nested" else "."
        kube.create(App(**inline_app(name, namespace, files, template=[{"kustomize": {"path": path}}])))
    serve(controllers, "kustomize")

    reported = outcomes(kube, namespace, *attacks)
    assert web.requests == []
    canary.assert_whole()
    assert_nowhere(kube, namespace, controllers, canary.token)
    for name, (_, file, entry, why) in attacks.items():
        where = "Resources[0]" if name == "key-in-another-case" else "resources[0]"
        because = "to stay within the fetch directory" if why == "stay" else "to be a path (remote bases"
        expected = f"Templating dir: Expected kustomization '{file}' {where} '{entry}' {because}"
        assert_refused(reported[name], expected)


# --- archives ---------------------------------------------------------------------------------------------------------


def _member(name: str, content: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    return info.tobuf(format=tarfile.GNU_FORMAT) + content + b"\0" * (-len(content) % 512)


def bomb(type_: bytes, declared: int, payload: bytes) -> bytes:
    """A gzipped tar whose first header (`type_`) declares `declared` bytes, all of them there (zeros: the gzip is
    about 1 MB for 1 GiB), then a ConfigMap: tarfile would read the header's data whole."""
    info = tarfile.TarInfo("././@LongLink")
    info.type = type_
    info.size = declared
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    out = [compressor.compress(info.tobuf(format=tarfile.GNU_FORMAT))]
    chunk = b"\0" * (1 << 20)
    for _ in range(declared >> 20):
        out.append(compressor.compress(chunk))
    out.append(compressor.compress(_member("cm.yml", payload) + b"\0" * 1024))
    out.append(compressor.flush())
    return b"".join(out)


def test_header_bombs_are_refused_before_they_are_read_and_the_controller_stays_small(
    controllers: Controllers, kube: Client, namespace: str, canary: Canary, web: Web, memory: Callable
):
    payload = config_map("bomb", stolen=canary.token).encode()
    bombs = {
        "pax-bomb": ("PAX extended header", web.put("pax.tgz", bomb(tarfile.XHDTYPE, GIB, payload))),
        "long-name-bomb": ("GNU long name", web.put("long.tgz", bomb(tarfile.GNUTYPE_LONGNAME, GIB, payload))),
    }
    assert all(len(web.files[f"/{url.rsplit('/', 1)[1]}"]) < 2 << 20 for _, url in bombs.values())
    for name, (_, url) in bombs.items():
        kube.create(http_app(name, namespace, url))
    kube.create(App(**inline_app("fine", namespace, {"cm.yml": config_map("fine", a="b")})))
    peaks = memory(serve(controllers))

    reported = outcomes(kube, namespace, *bombs, "fine", timeout=120)
    print(f"peak RSS: controller {peaks.controller >> 20} MiB, its children {peaks.children >> 20} MiB")
    assert peaks.controller < MAX_RSS and peaks.children < MAX_RSS, peaks
    canary.assert_whole()
    assert_nowhere(kube, namespace, controllers, canary.token)
    for name, (what, url) in bombs.items():
        file = url.rsplit("/", 1)[1]
        expected = f"Unpacking archive: {file}: has a {what} of {GIB} bytes (at most 1048576 are allowed)"
        assert_refused(reported[name], expected)
    assert status(kube, namespace, "fine")["conditions"][0]["type"] == "ReconcileSucceeded"


def _tar(payload: bytes) -> bytes:
    return _member("a.yml", payload) + _member("b.yml", payload) + b"\0" * 1024


def _zip(payload: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zipped:
        zipped.writestr("a.yml", payload)
        zipped.writestr("b.yml", payload)
    return buffer.getvalue()


def _flipped(data: bytes, at: int) -> bytes:
    broken = bytearray(data)
    broken[at] ^= 0xFF
    return bytes(broken)


def _bad_zip_crc(data: bytes) -> bytes:
    broken = bytearray(data)
    for at in (14, data.find(b"PK\x01\x02") + 16):  # the local header's CRC-32 and the central directory's
        broken[at : at + 4] = b"\xde\xad\xbe\xef"
    return bytes(broken)


def test_broken_archives_of_every_format_are_refused_with_a_message(
    controllers: Controllers, kube: Client, namespace: str, canary: Canary, web: Web
):
    payload = config_map("broken", stolen=canary.token).encode() * 20
    tar, zipped = _tar(payload), _zip(payload)
    central = zipped.find(b"PK\x01\x02")
    broken = {
        # name: (file, content, what the message says after the file's name)
        "truncated-tar": ("t.tar", tar[:1500], "not a valid tar archive (ReadError: unexpected end of data)"),
        "tgz-first-30-bytes": ("s.tgz", gzip.compress(tar)[:30], "not a valid gzip stream (EOFError: "),
        "truncated-tgz": ("u.tgz", gzip.compress(tar)[:-40], "not a valid gzip stream (EOFError: "),
        "bad-gzip-crc": ("c.tgz", _flipped(gzip.compress(tar), -8), "not a valid gzip stream (BadGzipFile: CRC check"),
        "corrupt-zip-directory": (
            "d.zip",
            zipped[:central] + b"XX" + zipped[central + 2 :],
            "not a valid zip archive (BadZipFile: ",
        ),
        "bad-zip-crc": (
            "e.zip",
            _bad_zip_crc(zipped),
            "not a valid zip archive (BadZipFile: Bad CRC-32 for file 'a.yml'",
        ),
    }
    for name, (file, content, _) in broken.items():
        kube.create(http_app(name, namespace, web.put(file, content)))
    serve(controllers)

    reported = outcomes(kube, namespace, *broken, timeout=60)
    canary.assert_whole()
    assert_nowhere(kube, namespace, controllers, canary.token)
    for name, (file, _, message) in broken.items():
        assert_refused(reported[name], f"Unpacking archive: {file}: {message}")


def test_a_truncated_image_layer_is_refused_with_a_message(
    controllers: Controllers, kube: Client, namespace: str, canary: Canary, oci_registry: Any, tmp_path: Path
):
    layer = tmp_path / "layer.tar"
    layer.write_bytes(_tar(config_map("layer", stolen=canary.token).encode() * 20)[:1500])  # crane gzips it whole
    ref = oci_registry.ref("truncated", "v1")
    oci_registry.push_layers(ref, layer)
    kube.create(App(**inline_app("truncated-layer", namespace, {}, fetch=[{"image": {"url": ref}}])))
    serve(controllers, flags=("--dangerous-allow-plain-http-registries",))

    reported = outcomes(kube, namespace, "truncated-layer", timeout=60)
    canary.assert_whole()
    assert_nowhere(kube, namespace, controllers, canary.token)
    assert_refused(reported["truncated-layer"], "not a valid tar archive (ReadError: unexpected end of data)")


# --- credentials ------------------------------------------------------------------------------------------------------


def secret(name: str, namespace: str, data: dict[str, bytes]) -> Any:
    return from_dict(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
        }
    )


def test_credentials_no_tool_can_carry_are_refused_naming_the_field(
    controllers: Controllers, kube: Client, namespace: str, canary: Canary
):
    bad = b"\xff" + canary.token.encode()  # not UTF-8; the token shows whether the value leaked
    nul = canary.token.encode() + b"\0"
    git = {"url": "https://127.0.0.1:1/repo.git", "ref": "main"}
    ssh = {"url": "ssh://git@127.0.0.1:1/repo.git", "ref": "main"}
    http = {"url": "https://127.0.0.1:1/app.tgz"}
    image = {"url": "127.0.0.1:1/app:v1"}
    why = "to be UTF-8 text"
    cases = {
        # name: (source kind, source, Secret data, the message)
        "git-username": ("git", git, {"username": bad, "password": b"p"}, f"field 'username' of secret 'c' {why}"),
        "git-password": ("git", git, {"username": b"u", "password": bad}, f"field 'password' of secret 'c' {why}"),
        "git-password-nul": (
            "git",
            git,
            {"username": b"u", "password": nul},
            "field 'password' of secret 'c' to have no NUL character",
        ),
        "git-ssh-key": ("git", ssh, {"ssh-privatekey": bad}, f"field 'ssh-privatekey' of secret 'c' {why}"),
        "git-known-hosts": (
            "git",
            ssh,
            {"ssh-privatekey": b"key", "ssh-knownhosts": bad},
            f"field 'ssh-knownhosts' of secret 'c' {why}",
        ),
        "http-username": ("http", http, {"username": bad}, f"field 'username' of secret 'c' {why}"),
        "http-password": ("http", http, {"username": b"u", "password": bad}, f"field 'password' of secret 'c' {why}"),
        "registry-username": (
            "image",
            image,
            {"username": bad, "password": b"p"},
            "Reading registry credentials from secret 'c': 'username' is not base64 text",
        ),
        "registry-docker-config": (
            "image",
            image,
            {".dockerconfigjson": bad},
            "Reading registry credentials from secret 'c': '.dockerconfigjson' is not base64 text",
        ),
    }
    for name, (kind, source, data, _) in cases.items():
        kube.create(secret(f"{name}-c", namespace, data))
        fetch = [{kind: {**source, "secretRef": {"name": f"{name}-c"}}}]
        kube.create(App(**inline_app(name, namespace, {}, fetch=fetch)))
    serve(controllers, flags=())

    reported = outcomes(kube, namespace, *cases, timeout=60)
    leaks = [
        where
        for where, text in _texts(kube, namespace, controllers).items()
        if not where.startswith("Secret ") and canary.token in text
    ]
    assert not leaks, f"a Secret's value leaked into {leaks}"
    for name, (_, _, _, message) in cases.items():
        assert_refused(reported[name], message.replace("secret 'c'", f"secret '{name}-c'"))
