"""A real OCI registry for tests, and what to push to it.

The registry is go-containerregistry's `crane registry serve` (hack/tools.py builds `crane`; tests find it through
$KAPPLY_CRANE, which `tools.py env` prints), on 127.0.0.1 at a port it picks, its blobs in a temporary directory.
Content is pushed with the real `crane`: a layer is a tarball (`crane append`, which gzips it), an imgpkg bundle is
such an image whose config carries the label `dev.carvel.imgpkg.bundle` (`crane mutate --label`) and whose files
hold `.imgpkg/images.yml`, the ImagesLock, as `imgpkg push -b` makes them.

`crane registry serve` has no authentication, so `AuthProxy` puts one in front of it: a small reverse proxy that
asks for HTTP basic credentials, or for a bearer token from its own token endpoint (the `WWW-Authenticate: Bearer
realm=...,service=...,scope=...` flow of Docker Hub and most registries), and passes authorized requests on to the
real registry, which still serves every manifest and blob.
"""

from __future__ import annotations

import base64
import enum
import http.client
import io
import json
import secrets
import subprocess
import tarfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

BUNDLE_LABEL = "dev.carvel.imgpkg.bundle"
START_TIMEOUT = 30.0  # seconds for `crane registry serve` to listen


def tar_of(files: Mapping[str, bytes], path: Path) -> Path:
    """An uncompressed tarball holding `files` (name -> content), each 0644: a layer for `crane append`."""
    with tarfile.open(path, "w") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(content))
    return path


def images_lock(images: list[dict[str, Any]]) -> bytes:
    """An imgpkg ImagesLock (`.imgpkg/images.yml`) naming `images` ({"image": digest reference, "annotations"})."""
    document = {"apiVersion": "imgpkg.carvel.dev/v1alpha1", "kind": "ImagesLock", "images": images}
    return yaml.safe_dump(document, sort_keys=False).encode()


@dataclass(frozen=True)
class Registry:
    """A running `crane registry serve`, and the `crane` that pushes to it."""

    host: str  # 127.0.0.1:<port>
    crane_path: Path

    def crane(self, *args: str | Path) -> str:
        """crane's stdout (stripped); its stderr in the failure when it fails."""
        result = subprocess.run(
            [str(self.crane_path), *map(str, args)], capture_output=True, text=True, timeout=120, check=False
        )
        assert result.returncode == 0, f"crane {' '.join(map(str, args))} exited {result.returncode}:\n{result.stderr}"
        return result.stdout.strip()

    def ref(self, repository: str, tag: str) -> str:
        return f"{self.host}/{repository}:{tag}"

    def digest(self, ref: str) -> str:
        return self.crane("digest", ref)

    def push_layers(self, ref: str, *layers: Path) -> str:
        """A new image of `layers` (tarballs, in order) tagged `ref`; its digest."""
        self.crane("append", *(arg for layer in layers for arg in ("-f", layer)), "-t", ref)
        return self.digest(ref)

    def push_files(self, ref: str, files: Mapping[str, bytes], work: Path) -> str:
        """An image of one layer holding `files`; its digest."""
        work.mkdir(parents=True, exist_ok=True)
        return self.push_layers(ref, tar_of(files, work / f"layer-{secrets.token_hex(4)}.tar"))

    def push_bundle(self, ref: str, files: Mapping[str, bytes], images: list[dict[str, Any]], work: Path) -> str:
        """An imgpkg bundle: `files` and the ImagesLock of `images` in one layer, the bundle label on its config
        (pushed, then mutated in place: the tag ends on the labelled image); its digest."""
        self.push_files(ref, {**files, ".imgpkg/images.yml": images_lock(images)}, work)
        self.crane("mutate", ref, "--label", f"{BUNDLE_LABEL}=true", "-t", ref)
        return self.digest(ref)


def _wait_for_port(log: Path, process: subprocess.Popen[bytes]) -> int:
    """The port `crane registry serve` logs ("serving on port N") once it listens."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if "serving on port " in line:
                return int(line.rsplit(" ", 1)[1])
        if process.poll() is not None:
            raise AssertionError(f"crane registry serve exited {process.returncode}:\n{log.read_text()}")
        time.sleep(0.05)
    raise AssertionError(f"crane registry serve did not listen within {START_TIMEOUT} s:\n{log.read_text()}")


@contextmanager
def serving(crane: Path, storage: Path) -> Iterator[Registry]:
    """`crane registry serve` on 127.0.0.1 (blobs on disk under `storage`) until the block ends; then it is stopped."""
    log = storage / "registry.log"
    (storage / "blobs").mkdir()  # crane's disk blob handler writes into it, but does not make it
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(crane), "registry", "serve", "--address", "127.0.0.1:0", "--disk", str(storage / "blobs")],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    try:
        port = _wait_for_port(log, process)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=10) as answer:
            assert answer.status == 200
        yield Registry(f"127.0.0.1:{port}", crane)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


# --- authentication in front of it --------------------------------------------------------------------------------


class AuthMode(enum.Enum):
    BASIC = "basic"  # every request carries the username and password
    BEARER = "bearer"  # a token from the proxy's /token, got with the username and password


SERVICE = "kapply-test-registry"
RELAYED_HEADERS = ("Content-Type", "Docker-Content-Digest", "Location")


@dataclass
class AuthProxy:
    """What the proxy saw: every registry request's path and Authorization, and every token request's query and
    Authorization."""

    upstream: str
    username: str
    password: str
    mode: AuthMode
    host: str = ""  # 127.0.0.1:<port>, once serving
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    token_requests: list[tuple[dict[str, str], str | None]] = field(default_factory=list)
    tokens: set[str] = field(default_factory=set)

    def basic(self) -> str:
        return "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()


def _handler(proxy: AuthProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            pass

        def do_GET(self) -> None:
            self._serve(body=True)

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def _answer(
            self, status: int, headers: Mapping[str, str], body: bytes, send_body: bool, length: str | None = None
        ) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", length or str(len(body)))
            self.end_headers()
            if send_body:
                self.wfile.write(body)

        def _serve(self, body: bool) -> None:
            url = urlsplit(self.path)
            authorization = self.headers.get("Authorization")
            if url.path == "/token" and proxy.mode is AuthMode.BEARER:
                proxy.token_requests.append((dict(parse_qsl(url.query)), authorization))
                if authorization != proxy.basic():
                    self._answer(401, {"Content-Type": "application/json"}, b'{"details":"bad credentials"}', body)
                    return
                token = secrets.token_hex(16)
                proxy.tokens.add(token)
                self._answer(200, {"Content-Type": "application/json"}, json.dumps({"token": token}).encode(), body)
                return
            proxy.seen.append((url.path, authorization))
            if proxy.mode is AuthMode.BASIC:
                allowed = authorization == proxy.basic()
                challenge = 'Basic realm="kapply-test"'
            else:
                allowed = (authorization or "").removeprefix("Bearer ") in proxy.tokens
                repository = url.path.removeprefix("/v2/").rsplit("/", 2)[0]
                challenge = (
                    f'Bearer realm="http://{proxy.host}/token",service="{SERVICE}",scope="repository:{repository}:pull"'
                )
            if not allowed:
                error = b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}'
                self._answer(401, {"WWW-Authenticate": challenge, "Content-Type": "application/json"}, error, body)
                return
            upstream = http.client.HTTPConnection(proxy.upstream, timeout=30)
            try:
                accept = self.headers.get("Accept")
                upstream.request(self.command, self.path, headers={"Accept": accept} if accept else {})
                answer = upstream.getresponse()
                content = answer.read()
                relayed = {name: answer.headers[name] for name in RELAYED_HEADERS if answer.headers.get(name)}
                length = None if body else answer.headers.get("Content-Length")  # a HEAD's, as the registry says
                self._answer(answer.status, relayed, content, body, length)
            finally:
                upstream.close()

    return Handler


@contextmanager
def auth_proxy(registry: Registry, mode: AuthMode, username: str, password: str) -> Iterator[AuthProxy]:
    """An AuthProxy in front of `registry` on 127.0.0.1 until the block ends."""
    proxy = AuthProxy(registry.host, username, password, mode)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    server.daemon_threads = True
    proxy.host = f"127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="registry-auth-proxy", daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
