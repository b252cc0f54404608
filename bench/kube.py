"""A small admin client for the benchmark's own bookkeeping (namespaces, the bench identity, the CRD, /metrics).

Standard library only (plus PyYAML to read the kubeconfig): the harness measures kapp and kapply as subprocesses and
must not lean on kapply's code to set up or observe what it measures. Supports what a kubeconfig for a local or
test cluster usually has: client certificates and bearer tokens, inline or as files; not exec plugins.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class KubeError(Exception):
    """An API request that answered with an unexpected status."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")
        self.status = status


@dataclass(frozen=True)
class Endpoint:
    """Where the cluster is and how to trust it: what a kubeconfig for another user of the same cluster needs."""

    server: str
    ca_data: bytes | None  # PEM
    insecure: bool


def _data_or_file(entry: dict[str, Any], key: str, base: Path) -> bytes | None:
    if entry.get(f"{key}-data"):
        return base64.b64decode(entry[f"{key}-data"])
    if entry.get(key):
        path = Path(entry[key])
        return (path if path.is_absolute() else base / path).read_bytes()
    return None


class Kube:
    """Plain JSON requests to the API server with the kubeconfig's current context."""

    def __init__(self, kubeconfig: Path, timeout: float = 60, retry_s: float = 120) -> None:
        doc = yaml.safe_load(kubeconfig.read_text())
        base = kubeconfig.parent
        ctx_name = doc["current-context"]
        ctx = next(c["context"] for c in doc["contexts"] if c["name"] == ctx_name)
        cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
        user: dict[str, Any] = next((u["user"] for u in doc.get("users") or [] if u["name"] == ctx.get("user")), {})
        if user.get("exec") or user.get("auth-provider"):
            raise SystemExit(f"{kubeconfig}: exec and auth-provider credentials are not supported by bench/kube.py")
        self.timeout = timeout
        self.retry_s = retry_s
        self.endpoint = Endpoint(
            server=cluster["server"].rstrip("/"),
            ca_data=_data_or_file(cluster, "certificate-authority", base),
            insecure=bool(cluster.get("insecure-skip-tls-verify")),
        )
        self.token: str | None = user.get("token") or (
            Path(user["tokenFile"]).read_text().strip() if user.get("tokenFile") else None
        )
        self.context = self._ssl_context(
            _data_or_file(user, "client-certificate", base), _data_or_file(user, "client-key", base)
        )

    def _ssl_context(self, cert: bytes | None, key: bytes | None) -> ssl.SSLContext:
        context = ssl.create_default_context()
        if self.endpoint.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif self.endpoint.ca_data:
            context.load_verify_locations(cadata=self.endpoint.ca_data.decode())
        if cert and key:
            # ssl loads a client certificate from files only; they live just long enough to be read.
            with tempfile.TemporaryDirectory(prefix="kapply-bench-") as tmp:
                cert_path, key_path = Path(tmp, "client.crt"), Path(tmp, "client.key")
                for path, data in ((cert_path, cert), (key_path, key)):
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "wb") as f:
                        f.write(data)
                context.load_cert_chain(cert_path, key_path)
        return context

    def raw(self, method: str, path: str, body: object = None, *, content_type: str = "application/json") -> bytes:
        """One request; a connection that fails (an API server restarting) is retried for up to `retry_s`."""
        data = None if body is None else json.dumps(body).encode()
        deadline = time.monotonic() + self.retry_s
        while True:
            request = urllib.request.Request(self.endpoint.server + path, data=data, method=method)
            request.add_header("Accept", "application/json, */*")
            if data is not None:
                request.add_header("Content-Type", content_type)
            if self.token:
                request.add_header("Authorization", f"Bearer {self.token}")
            try:
                with urllib.request.urlopen(request, context=self.context, timeout=self.timeout) as response:
                    payload: bytes = response.read()
                    return payload
            except urllib.error.HTTPError as e:
                raise KubeError(method, path, e.code, e.read().decode(errors="replace")) from None
            except OSError:  # refused, reset, timed out, TLS handshake: URLError and friends
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def json(self, method: str, path: str, body: object = None, **kwargs: str) -> dict[str, Any]:
        payload = self.raw(method, path, body, **kwargs)
        result: dict[str, Any] = json.loads(payload) if payload else {}
        return result

    def text(self, path: str) -> str:
        return self.raw("GET", path).decode()

    # ---- the few operations the harness needs

    def apply(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply of `obj` at its item path (create or update), as the harness's field manager."""
        query = urllib.parse.urlencode({"fieldManager": "kapply-bench", "force": "true"})
        return self.json("PATCH", f"{path}?{query}", obj, content_type="application/apply-patch+yaml")

    def delete(self, path: str) -> bool:
        """Delete (background propagation); False when it was already gone."""
        try:
            self.json("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
        except KubeError as e:
            if e.status == 404:
                return False
            raise
        return True

    def exists(self, path: str) -> bool:
        try:
            self.json("GET", path)
        except KubeError as e:
            if e.status == 404:
                return False
            raise
        return True

    def wait_gone(self, paths: list[str], timeout: float, interval: float = 0.5) -> list[str]:
        """Poll until every path answers 404; returns the paths still there after `timeout`."""
        deadline = time.monotonic() + timeout
        left = list(paths)
        while left:
            left = [p for p in left if self.exists(p)]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(interval)
        return left

    def create_namespace(self, name: str, labels: dict[str, str]) -> None:
        """Create a namespace; one that exists already is an error (names are unique per run), unless it carries
        the same labels (a retried create that had gone through)."""
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        try:
            self.json("POST", "/api/v1/namespaces", body)
        except KubeError as e:
            if e.status != 409:
                raise
            existing = self.json("GET", f"/api/v1/namespaces/{name}")["metadata"]
            if existing.get("deletionTimestamp") or (existing.get("labels") or {}) != {
                **existing.get("labels", {}),
                **labels,
            }:
                raise

    def version(self) -> str:
        return str(self.json("GET", "/version").get("gitVersion", "?"))
