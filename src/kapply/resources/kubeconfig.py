"""Which cluster to talk to, and as whom: kubeconfig selection as kapp does it.

Precedence: `--kubeconfig-yaml`/`$KAPP_KUBECONFIG_YAML`, then `--kubeconfig`/`$KAPP_KUBECONFIG`, then
`$KUBECONFIG` (several paths are merged, the first file to define a name wins, as client-go does), then
`~/.kube/config`. The context is `--kubeconfig-context`/`$KAPP_KUBECONFIG_CONTEXT` or the current one.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import yaml
from lightkube import KubeConfig
from lightkube.config.kubeconfig import SERVICE_ACCOUNT, SingleConfig
from lightkube.config.models import UserExec
from lightkube.core.exceptions import ConfigError as LightkubeConfigError

from kapply import yamlio
from kapply.errors import KapplyError

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")


@dataclass(frozen=True, slots=True)
class KubeconfigFlags:
    """Which cluster to talk to: kapp's kubeconfig flags, or the pod's service account (in cluster)."""

    path: str | None = None
    context: str | None = None
    yaml: str | None = None
    in_cluster: bool = False
    service_account_dir: str = SERVICE_ACCOUNT  # in cluster: where the token, ca.crt and namespace files are


def load(flags: KubeconfigFlags) -> SingleConfig:
    """The selected context of the selected kubeconfig."""
    yaml_text = flags.yaml or os.environ.get("KAPP_KUBECONFIG_YAML")
    context = flags.context or os.environ.get("KAPP_KUBECONFIG_CONTEXT") or None
    try:
        if flags.in_cluster:
            if not os.environ.get("KUBERNETES_SERVICE_HOST"):
                raise KapplyError("Loading in-cluster config: $KUBERNETES_SERVICE_HOST is not set (not in a pod?)")
            config = KubeConfig.from_service_account(flags.service_account_dir)
            context = None
        elif yaml_text:
            host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
            port = os.environ.get("KUBERNETES_SERVICE_PORT", "")
            yaml_text = yaml_text.replace("${KAPP_KUBERNETES_SERVICE_HOST_PORT}", f"{host}:{port}")
            config = KubeConfig.from_dict(yamlio.load_mapping(yaml_text, "kubeconfig (--kubeconfig-yaml)", KapplyError))
        else:
            config = _from_files(_kubeconfig_paths(flags.path))
        selected = config.get(context)
    except (LightkubeConfigError, OSError, KeyError, ValueError, yaml.YAMLError) as e:
        raise KapplyError(f"Loading kubeconfig: {e}") from e
    assert selected is not None  # without a default, lightkube raises rather than return None
    return selected


def with_token(config: SingleConfig, token: str, namespace: str) -> str:
    """A kubeconfig (YAML) for the same cluster, authenticated with `token` (a service account's), in `namespace`:
    what kapp-controller builds to deploy an App with the App's service account instead of its own rights."""
    cluster: dict[str, Any] = {"server": config.cluster.server}
    if config.cluster.certificate_auth_data:
        cluster["certificate-authority-data"] = config.cluster.certificate_auth_data
    elif config.cluster.certificate_auth:
        ca = Path(config.abs_file(config.cluster.certificate_auth)).read_bytes()
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    if config.cluster.insecure:
        cluster["insecure-skip-tls-verify"] = True
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "cluster", "cluster": cluster}],
            "users": [{"name": "user", "user": {"token": token}}],
            "contexts": [{"name": "app", "context": {"cluster": "cluster", "user": "user", "namespace": namespace}}],
            "current-context": "app",
        }
    )


def default_namespace(explicit: str | None, kubeconfig_namespace: str | None) -> str:
    """kapp's namespace default: the given one (`-n`), else $KAPP_NAMESPACE, else the kubeconfig context's."""
    namespace = explicit or os.environ.get("KAPP_NAMESPACE") or kubeconfig_namespace or ""
    if not namespace:
        raise KapplyError("Expected to non-empty namespace name")
    return namespace


def _kubeconfig_paths(flag: str | None) -> list[Path]:
    explicit = flag or os.environ.get("KAPP_KUBECONFIG")
    if explicit:
        return [Path(explicit).expanduser()]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [Path.home() / ".kube" / "config"]


def _from_files(paths: list[Path]) -> KubeConfig:
    if len(paths) == 1:
        return KubeConfig.from_file(paths[0])
    merged: dict[str, Any] = {"clusters": [], "contexts": [], "users": []}
    seen: set[tuple[str, str]] = set()
    for path in paths:
        if not path.exists():
            continue
        doc = yamlio.load_mapping(path.read_bytes(), f"kubeconfig file '{path}'", KapplyError)
        if not merged.get("current-context"):  # the first file that sets it wins, as in client-go
            merged["current-context"] = doc.get("current-context")
        for section in ("clusters", "contexts", "users"):
            entries = doc.get(section) or []
            if not isinstance(entries, list) or not all(
                isinstance(e, dict) and isinstance(e.get("name"), str) for e in entries
            ):
                raise KapplyError(f"kubeconfig file '{path}': '{section}' must be a list of entries with a name")
            for entry in entries:
                if (section, entry["name"]) not in seen:
                    seen.add((section, entry["name"]))
                    merged[section].append(entry)
    return KubeConfig.from_dict(merged, fname=paths[0])


class ExecCredentialAuth(httpx2.Auth):
    """Bearer tokens from a client-go credential plugin (`client.authentication.k8s.io/v1` and
    `v1beta1`), cached until their expirationTimestamp and refreshed on a 401. Async only: kapply's
    cluster client is async."""

    def __init__(self, exec_config: UserExec, server: str) -> None:
        if exec_config.apiVersion not in EXEC_API_VERSIONS:
            raise KapplyError(
                f"Loading kubeconfig: exec plugin apiVersion '{exec_config.apiVersion}' "
                f"is not supported (expected one of {', '.join(EXEC_API_VERSIONS)})"
            )
        self._exec = exec_config
        self._server = server
        self._token: str | None = None
        self._expires: datetime | None = None
        self._lock = asyncio.Lock()

    def _command(self) -> tuple[list[str], dict[str, str]]:
        env = dict(os.environ)
        env.update((e.name, e.value) for e in self._exec.env or [])
        info = {
            "apiVersion": self._exec.apiVersion,
            "kind": "ExecCredential",
            "spec": {"interactive": False, "cluster": {"server": self._server}},
        }
        env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
        return [self._exec.command, *(self._exec.args or [])], env

    def _store(self, stdout: bytes) -> None:
        try:
            status = json.loads(stdout)["status"]
            token = status["token"]
        except (ValueError, KeyError, TypeError) as e:
            raise KapplyError(
                f"exec plugin '{self._exec.command}' returned no token in its ExecCredential "
                "status (client certificates from plugins are not supported)"
            ) from e
        self._token = token
        expiry = status.get("expirationTimestamp")
        self._expires = datetime.fromisoformat(expiry.replace("Z", "+00:00")) if expiry else None

    def _valid(self) -> bool:
        return self._token is not None and (self._expires is None or datetime.now(UTC) < self._expires)

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        for attempt in range(2):
            async with self._lock:
                if attempt or not self._valid():
                    command, env = self._command()
                    # A thread, not asyncio's subprocess support: on Python 3.11 a task cancelled while
                    # asyncio is still starting a child (a sibling request failed first) never finishes,
                    # so asyncio.run hangs on shutdown.
                    try:
                        proc = await asyncio.to_thread(
                            subprocess.run, command, env=env, capture_output=True, stdin=subprocess.DEVNULL
                        )
                    except OSError as e:
                        raise KapplyError(f"exec plugin '{command[0]}' could not be run: {e}") from e
                    if proc.returncode:
                        raise KapplyError(f"exec plugin '{command[0]}' failed: {proc.stderr.decode().strip()}")
                    self._store(proc.stdout)
            request.headers["Authorization"] = f"Bearer {self._token}"
            response = yield request
            if response.status_code != 401:
                return
