"""Whom kapply talks to and who it says it is: the TLS context and the Authorization header of a kubeconfig context.

Credentials, most specific first, as client-go: a client certificate (in the TLS context) with, at most, one header
source: a token file (read again every minute, as the kubelet rotates service account tokens, and on a 401), a token,
an exec credential plugin (`client.authentication.k8s.io/v1` and `v1beta1`; its token cached until its
expirationTimestamp and renewed on a 401), or a username and password.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
import subprocess
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from kapply.errors import KapplyError
from kapply.resources.kubeconfig import ExecPlugin, KubeContext, UserEntry

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
TOKEN_FILE_PERIOD = 60.0  # seconds a token read from a file is used before the file is read again (client-go's)


def ssl_context(context: KubeContext) -> ssl.SSLContext:
    """Trust the cluster's CA (the system's when it names none; nothing with insecure-skip-tls-verify) and present
    the user's client certificate. Errors name the file or field at fault."""
    cluster, user = context.cluster, context.user
    where = f"Loading kubeconfig: context '{context.context_name}'"
    try:
        if cluster.insecure_skip_tls_verify:
            tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
        elif cluster.certificate_authority_data is not None:
            tls = ssl.create_default_context(cadata=cluster.certificate_authority_data.decode("ascii", "replace"))
        elif cluster.certificate_authority is not None:
            tls = ssl.create_default_context(cafile=str(cluster.certificate_authority))
        else:
            tls = ssl.create_default_context()
    except (OSError, ssl.SSLError, ValueError) as e:
        raise KapplyError(f"{where}: the cluster's certificate authority cannot be used: {e}") from e
    tls.set_alpn_protocols(["http/1.1"])
    _load_client_certificate(tls, user, where)
    tls.__class__ = ResumingContext  # the context as ssl made it, its connections resuming sessions
    return tls


class ResumingContext(ssl.SSLContext):
    """A client context whose connections resume the TLS session of an earlier one to the server, by the session
    ticket the server handed out (TLS 1.3's, and 1.2's; the API server, Go's, hands them out): a resumed handshake
    has no certificates, no client signature and no verifying, ~0.6-1 ms less CPU on each side per connection than a
    full one (issue 33: a deploy or delete of 100 resources opens ~16 connections, all but the first few resumed;
    bench/why.md). The client certificate's identity is carried by the session, and a server that will not resume
    it makes a full handshake instead. Only connections made with `wrap_bio` (asyncio's, which the cluster client
    uses) resume."""

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        tickets: _Tickets = self.__dict__.setdefault("_tickets", _Tickets())
        if session is None and not server_side:
            session = tickets.session_to_resume()
        connection = super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)
        tickets.made(connection, session)
        return connection


class _Tickets:
    """The connections a context made (weakly) and the session the next one resumes. A session is read from the
    latest connection whose handshake is done (TLS 1.3's ticket comes just after it) and kept while connections
    made with it resume: reading one costs ~0.6 ms (CPython copies it, certificates and all), as much as a resumed
    handshake saves, so each connection is read at most once, and after MISSES connections without a ticket (a
    server that hands out none) none is read any more. When a connection made with the session did not resume (the
    server's ticket keys changed, the ticket expired), a newer connection's is read. A session is never read before
    its connection's handshake is done: reading it then fails (`ValueError: i2d() failed`)."""

    MISSES = 3

    __slots__ = ("_unread", "_session", "_tried", "_misses")

    def __init__(self) -> None:
        self._unread: list[weakref.ref[ssl.SSLObject]] = []
        self._session: ssl.SSLSession | None = None
        self._tried: weakref.ref[ssl.SSLObject] | None = None  # the latest connection made with `_session`
        self._misses = 0

    def session_to_resume(self) -> ssl.SSLSession | None:
        tried = self._tried() if self._tried is not None else None
        if tried is not None and tried.version() is not None and not tried.session_reused:
            self._session = self._tried = None  # refused: a newer connection's, below
        if self._session is None and self._misses < self.MISSES:
            self._session = self._read()
        return self._session

    def made(self, connection: ssl.SSLObject, session: ssl.SSLSession | None) -> None:
        self._unread = [ref for ref in self._unread if ref() is not None]
        self._unread.append(weakref.ref(connection))
        if session is not None and session is self._session:
            self._tried = self._unread[-1]

    def _read(self) -> ssl.SSLSession | None:
        """The session of the latest connection not read yet whose handshake is done, if it has a ticket."""
        for ref in reversed(self._unread):
            connection = ref()
            if connection is None or connection.version() is None:
                continue
            self._unread.remove(ref)
            session = connection.session
            if session is not None and session.has_ticket:
                return session
            self._misses += 1
            return None
        return None


def _load_client_certificate(tls: ssl.SSLContext, user: UserEntry, where: str) -> None:
    has_certificate = user.client_certificate is not None or user.client_certificate_data is not None
    has_key = user.client_key is not None or user.client_key_data is not None
    if not has_certificate and not has_key:
        return
    if has_certificate != has_key:
        raise KapplyError(f"{where}: the user has a client certificate or key but not both")
    with (
        _as_file(user.client_certificate, user.client_certificate_data, "cert.pem") as certificate,
        _as_file(user.client_key, user.client_key_data, "key.pem") as key,
    ):
        try:
            tls.load_cert_chain(certificate, key)
        except (OSError, ssl.SSLError) as e:
            raise KapplyError(f"{where}: the client certificate cannot be used: {e}") from e


@contextmanager
def _as_file(path: Path | None, data: bytes | None, name: str) -> Iterator[str]:
    """The file ssl reads a certificate or key from (it reads files only): the kubeconfig's, or for data given inline
    a file in memory (Linux's `memfd_create`, read by its /proc/self/fd path: never on a disk), else a private
    temporary file removed at once. (tempfile is imported for the last only: with shutil and random, ~4 ms of a
    command's start on a cluster whose kubeconfig carries its certificate inline, as kind's and hack/cluster.py's do;
    bench/why.md.)"""
    if data is None:
        assert path is not None
        yield str(path)
        return
    memory = _memory_file(data, name)
    if memory is not None:
        try:
            yield f"/proc/self/fd/{memory}"
        finally:
            os.close(memory)
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kapply-tls-") as directory:
        private = Path(directory) / name
        private.touch(mode=0o600)
        private.write_bytes(data)
        yield str(private)


def _memory_file(data: bytes, name: str) -> int | None:
    """A file descriptor of an in-memory file holding `data` whose /proc path opens it; None where there is none
    (no `memfd_create`, no /proc)."""
    create = getattr(os, "memfd_create", None)
    if create is None:
        return None
    try:
        fd: int = create(f"kapply-tls-{name}")
    except OSError:
        return None
    try:
        with open(fd, "wb", closefd=False) as file:
            file.write(data)
        if os.path.exists(f"/proc/self/fd/{fd}"):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


class Credentials:
    """The Authorization header of every request; none for a user of client certificates only, or anonymous."""

    async def header(self) -> str | None:
        return None

    async def renewed(self, rejected: str | None) -> str | None:
        """After a 401 answered a request sent with `rejected`: a different header to try once more, or None."""
        return None


class StaticHeader(Credentials):
    """A token or a username and password from the kubeconfig: never changes."""

    def __init__(self, value: str) -> None:
        self._value = value

    async def header(self) -> str | None:
        return self._value


class TokenFile(Credentials):
    """A token read from a file (a projected service account token): read again when older than a minute or when
    the server rejected it."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._value: str | None = None
        self._read_at = 0.0

    def _read(self) -> str:
        try:
            token = self._path.read_text().strip()
        except OSError as e:
            raise KapplyError(f"Reading the token file '{self._path}': {e.strerror or e}") from e
        self._value, self._read_at = f"Bearer {token}", time.monotonic()
        return self._value

    async def header(self) -> str | None:
        if self._value is None or time.monotonic() - self._read_at > TOKEN_FILE_PERIOD:
            return self._read()
        return self._value

    async def renewed(self, rejected: str | None) -> str | None:
        value = self._value if self._value != rejected else self._read()
        return value if value != rejected else None


class ExecCredentials(Credentials):
    """Bearer tokens from a client-go credential plugin, cached until their expirationTimestamp and renewed on a 401;
    one run of the plugin at a time, however many requests wait for it."""

    def __init__(self, plugin: ExecPlugin, server: str) -> None:
        if plugin.api_version not in EXEC_API_VERSIONS:
            raise KapplyError(
                f"Loading kubeconfig: exec plugin apiVersion '{plugin.api_version}' "
                f"is not supported (expected one of {', '.join(EXEC_API_VERSIONS)})"
            )
        self._plugin = plugin
        self._server = server
        self._value: str | None = None
        self._expires: datetime | None = None
        self._lock = asyncio.Lock()

    async def header(self) -> str | None:
        async with self._lock:
            if self._value is None or (self._expires is not None and datetime.now(UTC) >= self._expires):
                await self._run()
            return self._value

    async def renewed(self, rejected: str | None) -> str | None:
        async with self._lock:
            if self._value == rejected:  # not renewed yet by another request that got a 401 too
                await self._run()
            return self._value if self._value != rejected else None

    async def _run(self) -> None:
        env = dict(os.environ)
        env.update(self._plugin.env)
        info = {
            "apiVersion": self._plugin.api_version,
            "kind": "ExecCredential",
            "spec": {"interactive": False, "cluster": {"server": self._server}},
        }
        env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
        command = [self._plugin.command, *self._plugin.args]
        # A thread, not asyncio's subprocess support: on Python 3.11 a task cancelled while asyncio is still starting
        # a child (a sibling request failed first) never finishes, so asyncio.run hangs on shutdown.
        try:
            proc = await asyncio.to_thread(
                subprocess.run, command, env=env, capture_output=True, stdin=subprocess.DEVNULL
            )
        except OSError as e:
            raise KapplyError(f"exec plugin '{command[0]}' could not be run: {e}") from e
        if proc.returncode:
            raise KapplyError(f"exec plugin '{command[0]}' failed: {proc.stderr.decode().strip()}")
        try:
            status = json.loads(proc.stdout)["status"]
            token = status["token"]
        except (ValueError, KeyError, TypeError) as e:
            raise KapplyError(
                f"exec plugin '{command[0]}' returned no token in its ExecCredential "
                "status (client certificates from plugins are not supported)"
            ) from e
        self._value = f"Bearer {token}"
        expiry = status.get("expirationTimestamp")
        self._expires = datetime.fromisoformat(expiry.replace("Z", "+00:00")) if expiry else None


def credentials(context: KubeContext) -> Credentials:
    """The header source of the context's user (client-go's order: token file, token, exec plugin, basic)."""
    user = context.user
    if user.token_file is not None:
        return TokenFile(user.token_file)
    if user.token:
        return StaticHeader(f"Bearer {user.token}")
    if user.exec is not None:
        return ExecCredentials(user.exec, context.cluster.server)
    if user.username and user.password:
        basic = base64.b64encode(f"{user.username}:{user.password}".encode()).decode()
        return StaticHeader(f"Basic {basic}")
    return Credentials()
