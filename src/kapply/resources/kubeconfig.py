"""Which cluster to talk to, and as whom: kubeconfig selection as kapp (client-go) does it.

Precedence: `--kubeconfig-yaml`/`$KAPP_KUBECONFIG_YAML`, then `--kubeconfig`/`$KAPP_KUBECONFIG`, then
`$KUBECONFIG` (several paths are merged, the first file to define a name wins, as client-go does), then
`~/.kube/config`. The context is `--kubeconfig-context`/`$KAPP_KUBECONFIG_CONTEXT` or the current one. Relative file
paths in an entry are relative to the file that defines it, as in client-go.

kapply reads the kubeconfig itself (a few dozen fields) rather than through a client library: the ones that parse it
also import their whole API client, which cost more start-up time than the rest of a small deploy.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kapply import yamlio
from kapply.errors import KapplyError

SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"  # where a pod finds its service account's files


@dataclass(frozen=True, slots=True)
class KubeconfigFlags:
    """Which cluster to talk to: kapp's kubeconfig flags, or the pod's service account (in cluster)."""

    path: str | None = None
    context: str | None = None
    yaml: str | None = None
    in_cluster: bool = False
    service_account_dir: str = SERVICE_ACCOUNT  # in cluster: where the token, ca.crt and namespace files are


@dataclass(frozen=True, slots=True)
class ClusterEntry:
    """A kubeconfig `cluster`: where the API server is and how to trust it."""

    server: str
    certificate_authority: Path | None = None
    certificate_authority_data: bytes | None = None  # PEM
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    disable_compression: bool = False


@dataclass(frozen=True, slots=True)
class ExecPlugin:
    """A client-go credential plugin: a command that prints an ExecCredential."""

    api_version: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class UserEntry:
    """A kubeconfig `user`: how to authenticate. Empty: anonymous."""

    token: str | None = None
    token_file: Path | None = None
    client_certificate: Path | None = None
    client_certificate_data: bytes | None = None  # PEM
    client_key: Path | None = None
    client_key_data: bytes | None = None  # PEM
    username: str | None = None
    password: str | None = None
    exec: ExecPlugin | None = None


@dataclass(frozen=True, slots=True)
class KubeContext:
    """The selected context: its cluster, its user and its default namespace."""

    context_name: str
    cluster: ClusterEntry
    user: UserEntry
    namespace: str = "default"


def load(flags: KubeconfigFlags) -> KubeContext:
    """The selected context of the selected kubeconfig."""
    yaml_text = flags.yaml or os.environ.get("KAPP_KUBECONFIG_YAML")
    context = flags.context or os.environ.get("KAPP_KUBECONFIG_CONTEXT") or None
    try:
        if flags.in_cluster:
            return _in_cluster(Path(flags.service_account_dir))
        if yaml_text:
            host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
            port = os.environ.get("KUBERNETES_SERVICE_PORT", "")
            yaml_text = yaml_text.replace("${KAPP_KUBERNETES_SERVICE_HOST_PORT}", f"{host}:{port}")
            doc = yamlio.load_mapping(yaml_text, "kubeconfig (--kubeconfig-yaml)", KapplyError)
            return _select(_entries([(doc, Path.cwd(), "--kubeconfig-yaml")]), context)
        return _select(_entries(_read_files(_kubeconfig_paths(flags.path))), context)
    except (OSError, yaml.YAMLError) as e:
        raise KapplyError(f"Loading kubeconfig: {e}") from e


def with_token(context: KubeContext, token: str, namespace: str) -> str:
    """A kubeconfig (YAML) for the same cluster, authenticated with `token` (a service account's), in `namespace`:
    what kapp-controller builds to deploy an App with the App's service account instead of its own rights."""
    cluster: dict[str, Any] = {"server": context.cluster.server}
    ca = context.cluster.certificate_authority_data
    if ca is None and context.cluster.certificate_authority is not None:
        ca = context.cluster.certificate_authority.read_bytes()
    if ca is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    if context.cluster.insecure_skip_tls_verify:
        cluster["insecure-skip-tls-verify"] = True
    if context.cluster.tls_server_name:
        cluster["tls-server-name"] = context.cluster.tls_server_name
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


def _in_cluster(account: Path) -> KubeContext:
    """The pod's service account: the API server from the environment, trusted with the account's CA, the token file
    (read again as the kubelet rotates it)."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    if not host:
        raise KapplyError("Loading in-cluster config: $KUBERNETES_SERVICE_HOST is not set (not in a pod?)")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if ":" in host:  # IPv6
        host = f"[{host}]"
    token_file = account / "token"
    token_file.read_bytes()  # fails now, naming the file, rather than at the first request
    return KubeContext(
        context_name="in-cluster",
        cluster=ClusterEntry(server=f"https://{host}:{port}", certificate_authority=account / "ca.crt"),
        user=UserEntry(token_file=token_file),
        namespace=(account / "namespace").read_text().strip() or "default",
    )


def _kubeconfig_paths(flag: str | None) -> list[Path]:
    explicit = flag or os.environ.get("KAPP_KUBECONFIG")
    if explicit:
        return [Path(explicit).expanduser()]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [Path.home() / ".kube" / "config"]


def _read_files(paths: list[Path]) -> list[tuple[dict[str, Any], Path, str]]:
    """Each kubeconfig file that exists (one path: it must), with the directory its relative paths start from."""
    if len(paths) == 1 and not paths[0].exists():
        raise KapplyError(f"Loading kubeconfig: Configuration file '{paths[0]}' not found")
    docs = []
    for path in paths:
        if path.exists():
            where = f"kubeconfig file '{path}'"
            docs.append((yamlio.load_mapping(path.read_bytes(), where, KapplyError), path.resolve().parent, where))
    if not docs:
        raise KapplyError(f"Loading kubeconfig: none of the files in $KUBECONFIG exists ({', '.join(map(str, paths))})")
    return docs


@dataclass(frozen=True, slots=True)
class _Entries:
    """The merged files: each name's first definition, with the directory and description of its file."""

    current_context: str | None
    clusters: dict[str, tuple[dict[str, Any], Path, str]]
    users: dict[str, tuple[dict[str, Any], Path, str]]
    contexts: dict[str, tuple[dict[str, Any], Path, str]]


def _entries(docs: list[tuple[dict[str, Any], Path, str]]) -> _Entries:
    current: str | None = None
    sections: dict[str, dict[str, tuple[dict[str, Any], Path, str]]] = {"clusters": {}, "users": {}, "contexts": {}}
    field = {"clusters": "cluster", "users": "user", "contexts": "context"}
    for doc, base, where in docs:
        if not current and isinstance(doc.get("current-context"), str):  # the first file that sets it wins
            current = doc["current-context"] or None
        for section, by_name in sections.items():
            entries = doc.get(section) or []
            if not isinstance(entries, list) or not all(
                isinstance(e, dict) and isinstance(e.get("name"), str) for e in entries
            ):
                raise KapplyError(f"Loading kubeconfig: {where}: '{section}' must be a list of entries with a name")
            for entry in entries:
                body = entry.get(field[section]) or {}
                if not isinstance(body, dict):
                    raise KapplyError(f"Loading kubeconfig: {where}: {field[section]} '{entry['name']}' is not a map")
                by_name.setdefault(entry["name"], (body, base, where))
    return _Entries(current, sections["clusters"], sections["users"], sections["contexts"])


def _select(entries: _Entries, name: str | None) -> KubeContext:
    name = name or entries.current_context
    if not name:
        raise KapplyError("Loading kubeconfig: No current context set (choose one with --kubeconfig-context)")
    if name not in entries.contexts:
        raise KapplyError(f"Loading kubeconfig: context '{name}' does not exist")
    context, _, where = entries.contexts[name]
    cluster_name, user_name = context.get("cluster"), context.get("user")
    if not isinstance(cluster_name, str) or cluster_name not in entries.clusters:
        raise KapplyError(
            f"Loading kubeconfig: {where}: context '{name}' names no cluster that exists ({cluster_name})"
        )
    if user_name and user_name not in entries.users:
        raise KapplyError(f"Loading kubeconfig: {where}: context '{name}' names no user that exists ({user_name})")
    namespace = context.get("namespace")
    return KubeContext(
        context_name=name,
        cluster=_cluster(cluster_name, *entries.clusters[cluster_name]),
        user=_user(user_name, *entries.users[user_name]) if user_name else UserEntry(),
        namespace=namespace if isinstance(namespace, str) and namespace else "default",  # as client-go
    )


class _Fields:
    """Typed reads of one entry's fields; a wrong type is an error naming the entry and its file."""

    def __init__(self, what: str, body: dict[str, Any], base: Path, where: str) -> None:
        self.what, self.body, self.base, self.where = what, body, base, where

    def fail(self, problem: str) -> KapplyError:
        return KapplyError(f"Loading kubeconfig: {self.where}: {self.what}: {problem}")

    def text(self, key: str) -> str | None:
        value = self.body.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise self.fail(f"'{key}' must be a string")
        return value

    def flag(self, key: str) -> bool:
        value = self.body.get(key, False)
        if not isinstance(value, bool):
            raise self.fail(f"'{key}' must be true or false")
        return value

    def path(self, key: str) -> Path | None:
        value = self.text(key)
        return self.base / Path(value).expanduser() if value else None

    def data(self, key: str) -> bytes | None:
        value = self.text(key)
        if value is None:
            return None
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise self.fail(f"'{key}' is not valid base64") from None


def _cluster(name: str, body: dict[str, Any], base: Path, where: str) -> ClusterEntry:
    fields = _Fields(f"cluster '{name}'", body, base, where)
    server = fields.text("server")
    if not server:
        raise fields.fail("no server")
    return ClusterEntry(
        server=server.rstrip("/"),
        certificate_authority=fields.path("certificate-authority"),
        certificate_authority_data=fields.data("certificate-authority-data"),
        insecure_skip_tls_verify=fields.flag("insecure-skip-tls-verify"),
        tls_server_name=fields.text("tls-server-name"),
        proxy_url=fields.text("proxy-url"),
        disable_compression=fields.flag("disable-compression"),
    )


def _user(name: str, body: dict[str, Any], base: Path, where: str) -> UserEntry:
    fields = _Fields(f"user '{name}'", body, base, where)
    if body.get("auth-provider"):
        raise fields.fail("auth-provider is not supported (use an exec credential plugin)")
    return UserEntry(
        token=fields.text("token"),
        token_file=fields.path("tokenFile"),
        client_certificate=fields.path("client-certificate"),
        client_certificate_data=fields.data("client-certificate-data"),
        client_key=fields.path("client-key"),
        client_key_data=fields.data("client-key-data"),
        username=fields.text("username"),
        password=fields.text("password"),
        exec=_exec(fields, body.get("exec")),
    )


def _exec(fields: _Fields, body: Any) -> ExecPlugin | None:
    if not body:
        return None
    if not isinstance(body, dict):
        raise fields.fail("'exec' must be a map")
    plugin = _Fields(f"{fields.what} exec", body, fields.base, fields.where)
    command, api_version = plugin.text("command"), plugin.text("apiVersion")
    if not command or not api_version:
        raise plugin.fail("'command' and 'apiVersion' are required")
    args, env = body.get("args") or [], body.get("env") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise plugin.fail("'args' must be a list of strings")
    if not isinstance(env, list) or not all(
        isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("value"), str) for e in env
    ):
        raise plugin.fail("'env' must be a list of name and value")
    if os.sep in command and not os.path.isabs(command):  # `./bin/plugin`: relative to the file, as client-go has it
        command = str(fields.base / command)
    return ExecPlugin(api_version, command, tuple(args), tuple((e["name"], e["value"]) for e in env))
