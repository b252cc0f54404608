"""Fetching an App's sources into a directory: inline files, files from ConfigMaps and Secrets, git, images and imgpkg
bundles from OCI registries, and files over http(s).

Everything an App fetches is untrusted input, and the controller holds far more rights than the App's author, so:

- Every path an App names (`fetch[].path`, `subPath`, inline file names, and the template steps' paths) is resolved,
  symlinks followed, and refused when it leaves the fetch directory (`Invalid path: ...`).
- After every fetch, and before anything reads the files, the fetched tree is checked (`check_tree`): a symlink that is
  absolute or resolves outside it is refused (vendir's rule: helm's `.Files.Get` and a template step's path would
  otherwise read the controller's disk), as are hard links (git never makes one), anything but files, directories and
  symlinks, and a tree over the limits (bytes, files, depth: `Limits`, set from the controller's environment).
- git runs with its options closed to the App: the URL and ref are checked (`git_url`, `git_ref`) and never reach
  git's option parser, only https, http and ssh transports are allowed (`file://` and local paths only with the
  controller's `--dangerous-allow-file-urls`), with no system or global configuration, hooks, fsmonitor or submodules,
  no ssh identity or agent of the controller's, and the clone happens in a temporary directory of its own, from which
  the files are copied (never moved).
- Images and bundles are pulled by kapply.oci (digests checked, layers unpacked by its rules: no entry outside the
  directory, no symlink leading out, no special files, the same limits), over https unless the controller's
  `--dangerous-allow-plain-http-registries` lets registries on its own machine be reached over plain http.
- http sources are downloaded (bounded in bytes and time, redirects followed by hand, credentials sent to the URL's own
  origin only), their sha256 checked, then unpacked as vendir does (a zip, else a tar, gzipped or not, else the file
  itself) by the same rules as image layers: a zip's entries go through them as a tar's would.
- helmChart sources (kapply.controller.fetch_helm) are a repository's index.yaml and a chart archive downloaded as
  http sources are, or a chart artifact pulled from a registry as images are, then unpacked by the same rules.
- Each of these is fetched into a temporary directory of its own, checked (`check_tree`), and its `subPath` (or all of
  it) copied into place, as for git.

Secrets' values are read with the App's service account, in the App's namespace only, and never appear in status or
messages.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import errno
import hashlib
import lzma
import os
import re
import shlex
import shutil
import stat
import struct
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit, urlunsplit
from urllib.request import getproxies, proxy_bypass

import yaml
import yarl

from kapply.controller import fetch_helm
from kapply.controller.runner import ToolError, run
from kapply.controller.settings import FETCH_TIMEOUT, Settings
from kapply.controller.spec import FetchSource, Git, Http, Inline, SourceRef, TagSelection
from kapply.errors import KapplyError
from kapply.http import ANYWHERE, Destinations, aiohttp, guarded_connector
from kapply.objects import Obj
from kapply.oci import ExtractLimits, Kind, OciError, RegistryAuth, RegistryClient, from_secret, parse_reference
from kapply.oci import Limits as RegistryLimits
from kapply.oci import fetch as pull
from kapply.oci.errors import shown
from kapply.oci.extract import Extraction, is_tar
from kapply.oci.reference import LOOPBACK_HOSTS
from kapply.oci.transfer import MinRate, TooSlow, paced
from kapply.versions import Prereleases, SelectionError, VersionSelection, select_version

# Reads a ConfigMap or Secret of the App's namespace by (kind, name); None when it does not exist.
ReadSource = Callable[[str, str], Awaitable[Obj | None]]

# What one App may fetch, all sources together; each can be lowered (or raised) with the variable named beside it in
# the controller's environment.
MAX_BYTES = 1 << 30  # KAPPLY_FETCH_MAX_BYTES: bytes of all files (and of a git repository's download)
MAX_FILES = 100_000  # KAPPLY_FETCH_MAX_FILES: files, directories and symlinks
MAX_DEPTH = 64  # KAPPLY_FETCH_MAX_DEPTH: directories within directories
CLONE_CHECK_INTERVAL = 0.5  # seconds between two looks at the size of a clone in progress


class FetchError(KapplyError):
    """Fetching failed; `stderr` is what a tool said (git), if anything."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


def _limit(environ: Mapping[str, str], variable: str, default: int) -> int:
    text = environ.get(variable)
    if not text:
        return default
    if not (text.isascii() and text.isdigit()) or int(text) == 0:
        raise FetchError(f"Expected ${variable} to be a positive integer, got '{text}'")
    return int(text)


@dataclass(frozen=True, slots=True)
class Limits:
    """The most an App may fetch."""

    max_bytes: int = MAX_BYTES
    max_files: int = MAX_FILES
    max_depth: int = MAX_DEPTH

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Limits:
        """The defaults, or what $KAPPLY_FETCH_MAX_BYTES, _FILES and _DEPTH say."""
        environ = os.environ if environ is None else environ
        return cls(
            _limit(environ, "KAPPLY_FETCH_MAX_BYTES", MAX_BYTES),
            _limit(environ, "KAPPLY_FETCH_MAX_FILES", MAX_FILES),
            _limit(environ, "KAPPLY_FETCH_MAX_DEPTH", MAX_DEPTH),
        )

    def too_many_bytes(self) -> FetchError:
        return FetchError(f"Checking size: Expected at most {self.max_bytes} bytes of files (KAPPLY_FETCH_MAX_BYTES)")

    def too_many_files(self) -> FetchError:
        return FetchError(
            f"Checking size: Expected at most {self.max_files} files and directories (KAPPLY_FETCH_MAX_FILES)"
        )

    def too_deep(self) -> FetchError:
        return FetchError(
            f"Checking size: Expected directories nested at most {self.max_depth} deep (KAPPLY_FETCH_MAX_DEPTH)"
        )


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """What the controller lets Apps fetch beyond remote sources, and how much."""

    allow_file_urls: bool = False  # `file://` git URLs and local paths (the controller's own disk): an explicit flag
    limits: Limits = field(default_factory=Limits.from_environment)
    allow_plain_http_registries: bool = False  # registries on this machine over plain http: an explicit flag too
    # A slow source is bounded twice: a tag listing, an image's or a bundle's pull (unpacking included) and an http
    # download each end within `timeout` seconds, and every body (http, a registry's manifests and blobs, git over
    # http or https) is stopped when it comes slower than `min_rate`.
    timeout: float = FETCH_TIMEOUT
    min_rate: MinRate = MinRate()
    # Where fetchers may connect (kapply.http.Destinations): the controller refuses its own machine, link-local
    # addresses and the API server unless --dangerous-allow-local-sources; code that fetches for itself allows all.
    destinations: Destinations = ANYWHERE

    @classmethod
    def from_settings(cls, settings: Settings) -> FetchPolicy:
        """What the controller's flags allow, with the limits of its environment."""
        return cls(
            settings.allow_file_urls,
            allow_plain_http_registries=settings.allow_plain_http_registries,
            timeout=settings.fetch_timeout,
            min_rate=MinRate(settings.fetch_min_rate, settings.fetch_min_rate_window),
            destinations=Destinations(settings.allow_local_sources, settings.api_server_addresses),
        )

    def too_late(self, what: str) -> FetchError:
        return FetchError(f"{what} within {self.timeout:g} s (the fetch deadline: the controller's --fetch-timeout)")


# --- paths ----------------------------------------------------------------------------------------------------------


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def confined(root: Path, relative: str, within: str = "the fetch directory") -> Path:
    """root/relative with its symlinks resolved, refusing a path that leaves root: `..`, absolute paths, and a path
    that goes through a symlink pointing outside (a symlink loop is left for whoever opens the path to report)."""
    pure = PurePosixPath(relative)
    if "\0" in relative or pure.is_absolute() or ".." in pure.parts:
        raise FetchError(f"Invalid path: {relative}")
    base = os.path.realpath(root)
    resolved = os.path.realpath(os.path.join(base, *pure.parts))
    if not _within(resolved, base):
        raise FetchError(f"Invalid path: {relative} (a symlink on it leads outside {within})")
    return Path(resolved)


def _shown(prefix: str, relative: str) -> str:
    return str(PurePosixPath(prefix, relative)) if prefix else relative


def _check_symlink(path: str, shown: str, base: str) -> None:
    outside = FetchError(f"Checking symlinks: Expected symlink '{shown}' to point within the fetched directory")
    if os.path.isabs(os.readlink(path)):
        raise outside
    try:
        resolved = os.path.realpath(path, strict=True)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FetchError(
                f"Checking symlinks: Expected symlink '{shown}' to resolve, but it is part of a loop"
            ) from None
        resolved = os.path.realpath(path)  # dangling (or through a file): where it would point, checked all the same
    if not _within(resolved, base):
        raise outside


def check_tree(directory: Path, limits: Limits, prefix: str = "") -> None:
    """Refuse a fetched tree that a later step could use to read or write outside it, or that is too big: a symlink
    that is absolute or resolves outside `directory` (dangling ones inside are fine), a hard link, a device, FIFO or
    socket, and more bytes, entries or depth than `limits`. Names in messages are relative to `directory`, after
    `prefix` (the source's path in the fetch directory); a target's name or content never appears."""
    base = os.path.realpath(directory)
    total = count = 0
    pending = [(base, "", 0)]
    while pending:
        current, relative, depth = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda entry: entry.name)
        except OSError as e:
            raise FetchError(f"Checking files: Cannot read '{_shown(prefix, relative) or '.'}': {e.strerror}") from None
        for entry in entries:
            name = f"{relative}/{entry.name}" if relative else entry.name
            shown = _shown(prefix, name)
            count += 1
            if count > limits.max_files:
                raise limits.too_many_files()
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                _check_symlink(entry.path, shown, base)
            elif stat.S_ISDIR(info.st_mode):
                if depth + 1 > limits.max_depth:
                    raise limits.too_deep()
                pending.append((entry.path, name, depth + 1))
            elif stat.S_ISREG(info.st_mode):
                if info.st_nlink > 1:
                    raise FetchError(f"Checking hard links: Expected '{shown}' not to be a hard link")
                total += info.st_size
                if total > limits.max_bytes:
                    raise limits.too_many_bytes()
            else:
                raise FetchError(f"Checking files: Expected '{shown}' to be a file, a directory or a symlink")


# --- inline and pathsFrom -------------------------------------------------------------------------------------------


def _write(root: Path, relative: str, content: bytes) -> None:
    path = confined(root, relative)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    except OSError as e:
        raise FetchError(f"Writing '{relative}': {e.strerror}") from None


async def _inline(root: Path, inline: Inline, read: ReadSource) -> None:
    for relative, content in inline.paths:
        _write(root, relative, content.encode())
    for ref in inline.paths_from:
        for key, value in await source_data(ref, read):
            _write(root, f"{ref.directory}/{key}" if ref.directory else key, value)


async def source_data(ref: SourceRef, read: ReadSource) -> list[tuple[str, bytes]]:
    """The data of a ConfigMap or Secret, one (key, bytes) per key, sorted."""
    obj = await read(ref.kind, ref.name)
    if obj is None:
        raise FetchError(f"{ref.kind} '{ref.name}' not found")
    data = obj.get("data") or {}
    if ref.kind == "Secret":
        try:
            return sorted((k, base64.b64decode(v)) for k, v in data.items())
        except (binascii.Error, TypeError, ValueError):
            raise FetchError(f"Expected every field of secret '{ref.name}' to be base64") from None
    return sorted((k, str(v).encode()) for k, v in data.items())


def credential(data: Mapping[str, bytes], key: str, secret: str) -> str:
    """A credential of a Secret's data as text: UTF-8 with no NUL (what an environment variable, a header or a
    tool's file can carry), refused otherwise naming the field, never the value."""
    try:
        text = data[key].decode()
    except UnicodeDecodeError:
        raise FetchError(f"Expected field '{key}' of secret '{secret}' to be UTF-8 text") from None
    if "\0" in text:
        raise FetchError(f"Expected field '{key}' of secret '{secret}' to have no NUL character")
    return text


# --- git ------------------------------------------------------------------------------------------------------------


class Transport(StrEnum):
    HTTPS = "https"
    HTTP = "http"  # kapp-controller users reach internal git servers over http
    SSH = "ssh"  # ssh:// and scp-like user@host:path
    FILE = "file"  # file:// and local paths: the controller's own disk, only with --dangerous-allow-file-urls


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEMES = {"https": Transport.HTTPS, "http": Transport.HTTP, "ssh": Transport.SSH, "git+ssh": Transport.SSH}
_SCHEMES |= {"ssh+git": Transport.SSH, "file": Transport.FILE}
_REMOTE_HELPER = re.compile(r"[A-Za-z0-9][A-Za-z0-9+.-]*::")  # git's `<transport>::<address>` (ext::, fd:: ...)
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def git_url(url: str, policy: FetchPolicy, where: str) -> Transport:
    """The transport of a git URL, refusing what could run a command or read the controller's disk: an option
    (`--upload-pack=...`), a remote helper (`ext::sh -c ...`), a host or user that ssh would take as an option, and,
    unless the policy allows them, `file://` URLs and local paths. `where` names the field in messages."""
    if url.startswith("-"):
        raise FetchError(f"Expected {where} not to start with '-'")
    if any(ord(c) < 32 or ord(c) == 127 for c in url):
        raise FetchError(f"Expected {where} to have no control characters")
    if _REMOTE_HELPER.match(url):
        raise FetchError(f"Expected {where} not to name a git remote helper ('<transport>::<address>')")
    scheme = _SCHEME.match(url)
    transport = _url_transport(url, scheme.group(1), where) if scheme else _scp_transport(url, where)
    if transport is Transport.FILE and not policy.allow_file_urls:
        raise FetchError(
            f"Expected {where} to be an https, http or ssh URL: file:// URLs and local paths read the controller's "
            "own disk (allowed only with its --dangerous-allow-file-urls)"
        )
    return transport


def _url_transport(url: str, scheme: str, where: str) -> Transport:
    """The transport of a URL with a scheme (`scheme://...`); its host and user may not start with '-'."""
    transport = _SCHEMES.get(scheme.lower())
    if transport is None:
        raise FetchError(f"Expected {where} to be an https, http or ssh URL, got '{scheme}://'")
    try:
        parts = urlsplit(url)
    except ValueError as e:
        raise FetchError(f"Expected {where} to be a URL: {e}") from None
    if (parts.username or "").startswith("-") or (parts.hostname or "").startswith("-"):
        raise FetchError(f"Expected {where} to have no host or user starting with '-'")
    return transport


def _scp_transport(url: str, where: str) -> Transport:
    """The transport of a URL without a scheme: ssh for git's scp-like `[user@]host:path` (a colon before any slash,
    whose host and user may not start with '-'), else a local path."""
    colon, slash = url.find(":"), url.find("/")
    transport = Transport.SSH if colon > 0 and (slash < 0 or colon < slash) else Transport.FILE
    if transport is Transport.SSH and any(part.lstrip("[").startswith("-") for part in url[:colon].split("@")):
        raise FetchError(f"Expected {where} to have no host or user starting with '-'")
    return transport


_SCP_HOST = re.compile(r"(?:[^@/:]*@)?(\[[^\]]*\]|[^:/\[]*):")  # [user@]host:path, host possibly [IPv6]


def git_host(url: str, transport: Transport) -> tuple[str, int]:
    """The host and port git connects to for a URL git_url accepted (scp-like `user@host:path` is ssh's port 22)."""
    ports = {Transport.HTTPS: 443, Transport.HTTP: 80, Transport.SSH: 22}
    if _SCHEME.match(url):
        parts = urlsplit(url)
        return parts.hostname or "", parts.port or ports.get(transport, 0)
    scp = _SCP_HOST.match(url)
    return (scp.group(1).strip("[]") if scp else ""), 22


def git_ref(ref: str, where: str) -> str:
    """The ref git resolves (kapp-controller writes branches as `origin/main`; `HEAD` when none), refusing one that
    git could take as an option or that holds control characters or spaces."""
    name = ref.removeprefix("origin/")
    if name.startswith("-"):
        raise FetchError(f"Expected {where} not to start with '-'")
    if any(ord(c) <= 32 or ord(c) == 127 for c in ref):
        raise FetchError(f"Expected {where} to have no spaces or control characters")
    return name or "HEAD"


def _git_options(policy: FetchPolicy) -> tuple[str, ...]:
    """git's configuration for every run, over none at all (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL): the transports
    allowed (remote helpers and `file` refused unless allowed), no hooks, no fsmonitor, no submodules, and the
    policy's minimum rate as git's own for http and https (`http.lowSpeedLimit` bytes a second over
    `http.lowSpeedTime` seconds, whole ones)."""
    allowed = [Transport.HTTPS, Transport.HTTP, Transport.SSH] + ([Transport.FILE] if policy.allow_file_urls else [])
    settings = ["protocol.allow=never", *(f"protocol.{t.value}.allow=always" for t in allowed)]
    settings += ["core.hooksPath=/dev/null", "core.fsmonitor=false", "submodule.recurse=false"]
    settings += ["fetch.recurseSubmodules=false"]
    rate = policy.min_rate
    if rate.bytes_per_second > 0:
        settings += [f"http.lowSpeedLimit={rate.bytes_per_second}", f"http.lowSpeedTime={max(1, round(rate.window))}"]
    return tuple(a for setting in settings for a in ("-c", setting))


@dataclass(frozen=True)
class Pin:
    """The addresses a git source's host was checked at (Destinations.check_name), which git must connect to: the
    name is not resolved again by git or ssh, so it cannot point elsewhere between the check and the connection."""

    host: str
    port: int
    addresses: tuple[str, ...]

    def git_options(self, transport: Transport) -> tuple[str, ...]:
        """For http and https: curl's own resolve list, and no redirects (one would name a host not checked)."""
        if not self.addresses or transport not in (Transport.HTTP, Transport.HTTPS):
            return ()
        listed = ",".join(f"[{a}]" if ":" in a else a for a in self.addresses)
        return ("-c", f"http.curloptResolve={self.host}:{self.port}:{listed}", "-c", "http.followRedirects=false")

    def ssh_options(self) -> list[str]:
        """ssh connects to the first address, and checks the host key under the host's name."""
        if not self.addresses:
            return []
        return ["-o", f"HostName={self.addresses[0]}", "-o", f"HostKeyAlias={self.host}", "-o", "CheckHostIP=no"]


NO_PIN = Pin("", 0, ())


def _ssh_command(key: Path | None, known_hosts: Path | None, pin: Pin = NO_PIN) -> str:
    """ssh with the App's key only: no configuration, identity or agent of the controller's user (ssh finds those
    through the user's passwd entry, not HOME). Without known hosts, host keys are not checked, as kapp-controller."""
    return shlex.join(
        [
            "ssh",
            *pin.ssh_options(),
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "IdentityAgent=none",
            *(["-i", str(key)] if key else ["-o", "IdentityFile=none"]),
            "-o",
            f'UserKnownHostsFile="{known_hosts}"' if known_hosts else "UserKnownHostsFile=/dev/null",
            "-o",
            f"StrictHostKeyChecking={'yes' if known_hosts else 'no'}",
        ]
    )


GIT_SECRET_KEYS = frozenset({"ssh-privatekey", "ssh-knownhosts", "username", "password"})  # what a git source uses


async def _git_env(git: Git, transport: Transport, secrets: Path, read: ReadSource, pin: Pin) -> dict[str, str]:
    env = {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    if git.lfs_skip_smudge:  # kapply's git has no LFS filter configured anyway: LFS files stay pointers
        env["GIT_LFS_SKIP_SMUDGE"] = "1"
    key = known = None
    if git.force_http_basic_auth and (not git.secret or transport is not Transport.HTTPS):
        raise FetchError(
            "Expected forceHTTPBasicAuth to be used with an https URL and a secretRef (username, password)"
        )
    if git.secret:
        credentials = dict(await source_data(SourceRef("Secret", git.secret), read))
        text = {k: credential(credentials, k, git.secret) for k in sorted(credentials) if k in GIT_SECRET_KEYS}
        if "ssh-privatekey" in text:
            key = secrets / "key"
            key.write_text(text["ssh-privatekey"])
            key.chmod(0o600)
            if "ssh-knownhosts" in text:
                known = secrets / "known_hosts"
                known.write_text(text["ssh-knownhosts"])
        elif "username" in text and transport is Transport.HTTPS:
            askpass = secrets / "askpass"
            askpass.write_text('#!/bin/sh\ncase "$1" in Username*) echo "$GIT_USER";; *) echo "$GIT_PASS";; esac\n')
            askpass.chmod(0o700)
            env |= {"GIT_ASKPASS": str(askpass), "GIT_USER": text["username"], "GIT_PASS": text.get("password", "")}
            if git.force_http_basic_auth:  # sent with the first request, as vendir's http.extraHeader (in the
                # environment, never on a command line); redirects are not followed (Pin), so it goes to this host only
                basic = base64.b64encode(f"{text['username']}:{text.get('password', '')}".encode()).decode()
                env |= {
                    "GIT_CONFIG_COUNT": "1",
                    "GIT_CONFIG_KEY_0": "http.extraHeader",
                    "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
                }
        if git.force_http_basic_auth and "username" not in text:
            raise FetchError(f"Expected secret '{git.secret}' to have username and password (forceHTTPBasicAuth)")
    env["GIT_SSH_COMMAND"] = _ssh_command(key, known, pin)
    return env


def _size(directory: Path) -> int:
    """Bytes of the files under directory (a clone in progress: files come and go)."""
    total = 0
    for current, _, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(current, name)).st_size
    return total


async def _clone(
    url: str, clone: Path, options: tuple[str, ...], env: dict[str, str], limits: Limits, depth: int | None = None
) -> None:
    """git clone, stopped when what it downloads passes the byte limit (a pack is compressed: the files' sizes are
    checked from the tree before they are written). `depth`: that many commits of every branch and tag (vendir's
    `fetch --depth`), else all."""
    shallow = (f"--depth={depth}", "--no-single-branch") if depth else ()
    task = asyncio.ensure_future(
        run(
            "git",
            *options,
            "clone",
            "--quiet",
            "--no-checkout",
            *shallow,
            "--",
            url,
            str(clone),
            cwd=clone.parent,
            env=env,
        )
    )
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=CLONE_CHECK_INTERVAL)
            if not task.done() and _size(clone) > limits.max_bytes:
                raise limits.too_many_bytes()
        task.result()
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def check_listing(listing: str, limits: Limits) -> None:
    """The limits on a commit's tree as `git ls-tree -r -l -z` lists it, before anything is written."""
    entries = [entry for entry in listing.split("\0") if entry]
    if len(entries) > limits.max_files:
        raise limits.too_many_files()
    total = 0
    for entry in entries:
        meta, _, path = entry.partition("\t")
        size = meta.split()[-1]
        total += int(size) if size.isdigit() else 0
        if path.count("/") > limits.max_depth:
            raise limits.too_deep()
    if total > limits.max_bytes:
        raise limits.too_many_bytes()


async def _commit(clone: Path, ref: str, options: tuple[str, ...], env: dict[str, str]) -> str:
    """The commit a ref names: a remote branch first (kapp-controller's `origin/main`), then a tag or a commit. The
    ref comes after --end-of-options: never an option."""
    for candidate in (f"origin/{ref}", ref) if ref != "HEAD" else ("HEAD",):
        args = ("rev-parse", "--verify", "--quiet", "--end-of-options", f"{candidate}^{{commit}}")
        with contextlib.suppress(ToolError):
            commit = (await run("git", *options, *args, cwd=clone, env=env)).stdout.strip()
            if _COMMIT.fullmatch(commit):
                return commit
    raise ToolError(f"git found no commit for ref '{ref}'")


async def _git(target: Path, git: Git, read: ReadSource, policy: FetchPolicy, where: str, prefix: str) -> str:
    """Clone into a temporary directory, check the files, copy them into target; the commit fetched (for the
    lock)."""
    transport = git_url(git.url, policy, f"{where}.url")
    ref = git_ref(git.ref, f"{where}.ref")
    url, shown = git.url, public_url(git.url)
    pin = NO_PIN
    if transport is not Transport.FILE:
        host, port = git_host(url, transport)
        try:
            pin = Pin(host, port, await policy.destinations.check_name(host, port))
        except OSError as e:
            raise FetchError(f"Fetching git {shown}: {e.strerror or e}") from None
    options = _git_options(policy) + pin.git_options(transport)
    with tempfile.TemporaryDirectory(prefix="kapply-git-") as scratch_dir:
        scratch = Path(scratch_dir)
        (scratch / "secrets").mkdir(mode=0o700)
        env = await _git_env(git, transport, scratch / "secrets", read, pin)
        clone = scratch / "repo"
        try:
            await _clone(url, clone, options, env, policy.limits, git.depth)
            if git.ref_selection is not None:
                listed = await run("git", *options, "tag", "--list", cwd=clone, env=env)
                ref = f"refs/tags/{select_tag(listed.stdout.split(), git.ref_selection)}"
            commit = await _commit(clone, ref, options, env)
            listing = await run("git", *options, "ls-tree", "-r", "-l", "-z", "--full-tree", commit, cwd=clone, env=env)
            check_listing(listing.stdout, policy.limits)
            await run("git", *options, "checkout", "--quiet", "--detach", commit, cwd=clone, env=env)
        except ToolError as e:
            raise FetchError(f"Fetching git {shown}: {e}", e.stderr.replace(url, shown)) from e
        shutil.rmtree(clone / ".git")
        try:
            source = confined(clone, git.sub_path, "the repository") if git.sub_path else clone
        except FetchError as e:
            raise FetchError(f"Fetching git {shown}: {e}") from None
        if not source.is_dir():
            raise FetchError(f"Fetching git {shown}: subPath '{git.sub_path}' is not a directory at {commit}")
        check_tree(source, policy.limits, prefix)
        try:
            shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
        except OSError as e:  # shutil.Error too: a file of the repository where an earlier source made a directory
            raise FetchError(f"Fetching git {shown}: Copying the files into '{prefix or '.'}' failed: {e}") from None
    return commit


# --- what image, imgpkgBundle and http sources share ------------------------------------------------------------------


def _place(tree: Path, sub_path: str, target: Path, limits: Limits, prefix: str, what: str, within: str) -> None:
    """Check what was fetched into the temporary directory `tree`, then copy its subPath (or all of it) into target.
    `what` begins messages, `within` names the tree in them."""
    try:
        source = confined(tree, sub_path, within) if sub_path else tree
    except FetchError as e:
        raise FetchError(f"{what}: {e}") from None
    if not source.is_dir():
        raise FetchError(f"{what}: Expected directory '{sub_path}' (subPath) to exist")
    check_tree(source, limits, prefix)
    try:
        shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
    except OSError as e:  # shutil.Error too: a file where an earlier source made a directory
        raise FetchError(f"{what}: Copying the files into '{prefix or '.'}' failed: {e}") from None


def _extract_limits(limits: Limits) -> ExtractLimits:
    return ExtractLimits(limits.max_bytes, limits.max_files, limits.max_depth)


def _is_loopback(url: yarl.URL) -> bool:
    host = url.host or ""
    return host in LOOPBACK_HOSTS or f"[{host}]" in LOOPBACK_HOSTS


def _proxy(url: yarl.URL) -> str | None:
    """HTTPS_PROXY/HTTP_PROXY unless NO_PROXY names the host, never for this machine (as Go and kapply.oci do)."""
    if _is_loopback(url) or proxy_bypass(url.host or ""):
        return None
    return getproxies().get(url.scheme)


# --- image and imgpkgBundle -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RegistrySource:
    """An `image` or `imgpkgBundle` source."""

    kind: Kind
    url: str  # an image reference, or with tag_selection a repository
    secret: str
    tag_selection: TagSelection | None
    sub_path: str
    where: str  # the URL's field, for messages


async def _registry_auth(secret: str, read: ReadSource) -> RegistryAuth:
    """The credentials of the source's Secret (read with the App's service account), or none."""
    if not secret:
        return RegistryAuth()
    obj = await read("Secret", secret)
    if obj is None:
        raise FetchError(f"Secret '{secret}' not found")
    try:
        auth = from_secret(obj)
    except OciError as e:  # values that are not UTF-8 text included
        raise FetchError(str(e)) from None
    for credentials in (*auth.hosts.values(), *([auth.fallback] if auth.fallback else [])):
        # a token goes into a header as it is (a username and password go in base64)
        if any(ord(c) < 32 or ord(c) == 127 for c in credentials.token):
            raise FetchError(f"Expected the registry token of secret '{secret}' to have no control characters")
    return auth


def select_tag(tags: list[str], selection: TagSelection) -> str:
    """The highest tag that `selection` admits, as vendir's tagSelection picks it (carvel's semver: a leading `v` is
    allowed, tags that are not versions are skipped)."""
    prereleases = None if selection.prereleases is None else Prereleases(selection.prereleases)
    try:
        return select_version(tags, VersionSelection(selection.constraints, prereleases))
    except SelectionError as e:
        raise FetchError(f"Determining tag selection: {e}") from None


async def _pull(
    target: Path, source: RegistrySource, read: ReadSource, policy: FetchPolicy, prefix: str
) -> tuple[str, str | None]:
    """Pull into a temporary directory, check the files, copy them (or the subPath) into target; the digest reference
    pulled and its tag (for the lock)."""
    what = f"Fetching {source.kind.value}"
    auth = await _registry_auth(source.secret, read)
    url = source.url
    try:
        plain_http = policy.allow_plain_http_registries and parse_reference(url).is_loopback
        if source.tag_selection is not None:
            if "@" in url or ":" in url.rsplit("/", 1)[-1]:
                raise FetchError(f"Expected {source.where} to name no tag or digest: tagSelection picks the tag")
            listing = RegistryLimits(min_rate=policy.min_rate)
            listed = RegistryClient(auth, plain_http=plain_http, limits=listing, destinations=policy.destinations)
            async with listed as client:
                try:
                    tags = await asyncio.wait_for(client.tags(parse_reference(url)), policy.timeout)
                except TimeoutError:
                    raise policy.too_late(f"{url}: tags not listed") from None
            url = f"{url}:{select_tag(tags, source.tag_selection)}"
        with tempfile.TemporaryDirectory(prefix="kapply-oci-", ignore_cleanup_errors=True) as scratch:
            limits = policy.limits
            fetching = pull(
                url,
                source.kind,
                Path(scratch),
                auth=auth,
                plain_http=plain_http,
                registry_limits=RegistryLimits(max_blob_bytes=limits.max_bytes, min_rate=policy.min_rate),
                extract_limits=_extract_limits(limits),
                destinations=policy.destinations,
            )
            try:
                fetched = await asyncio.wait_for(fetching, policy.timeout)
            except TimeoutError:
                raise policy.too_late(f"{url}: not pulled") from None
            _place(Path(scratch), source.sub_path, target, limits, prefix, str(fetched.reference), "the image")
    except (OciError, FetchError) as e:
        raise FetchError(f"{what}: {e}") from None
    return str(fetched.reference), parse_reference(url).tag


# --- http -----------------------------------------------------------------------------------------------------------

HTTP_SCHEMES = frozenset({"http", "https"})
MAX_HTTP_REDIRECTS = 10  # Go's http.Client's, which vendir uses
HTTP_CONNECT_TIMEOUT = 30.0  # seconds
HTTP_READ_TIMEOUT = 60.0  # seconds without a byte
REDIRECTS = frozenset({301, 302, 303, 307, 308})
CHUNK = 1 << 16
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip's first local file header, or an empty zip's end record
ZIP_END = b"PK\x05\x06"
ZIP64_LOCATOR = b"PK\x06\x07"
ZIP64_END = b"PK\x06\x06"
ZIP_DIRECTORY_BYTES_PER_ENTRY = 256  # what a zip's central directory may take per allowed entry, on average
MAX_SYMLINK_TARGET = 4096
SINGLE_FILE = "content"  # the name of a downloaded file when the URL's path ends in `/` (vendir's)


class Archive(StrEnum):
    """What a downloaded file is, told from its bytes as vendir tells it (its name does not matter)."""

    ZIP = "zip"
    TAR = "tar"  # gzipped, bzip2ed, xz-compressed or not
    FILE = "file"  # anything else: kept as it is


def http_url(url: str, where: str) -> yarl.URL:
    """An http or https URL with a host; `where` names the field in messages."""
    if any(ord(c) < 32 or ord(c) == 127 for c in url):
        raise FetchError(f"Expected {where} to have no control characters")
    try:
        parsed = yarl.URL(url)
    except ValueError as e:
        raise FetchError(f"Expected {where} to be a URL: {e}") from None
    if parsed.scheme not in HTTP_SCHEMES or not parsed.host:
        raise FetchError(f"Expected {where} to be an http or https URL")
    return parsed


def file_name(url: yarl.URL, where: str) -> str:
    """The name a downloaded file that is no archive is kept as: the last segment of the URL's path (vendir's rule),
    `content` when it is empty."""
    name = url.path.rsplit("/", 1)[-1]
    if name in (".", "..") or "\0" in name or "/" in name:
        raise FetchError(f"Expected the last segment of {where}'s path to be a file name")
    return name or SINGLE_FILE


async def _http_authorization(source: Http, url: yarl.URL, read: ReadSource) -> str | None:
    """Basic credentials: the Secret's `username` and `password` (any other key refused, as vendir does), else the
    user and password written in the URL (as Go sends them)."""
    if source.secret:
        data = dict(await source_data(SourceRef("Secret", source.secret), read))
        unknown = sorted(set(data) - {"username", "password"})
        if unknown:
            raise FetchError(f"Unknown secret field '{unknown[0]}' in secret '{source.secret}'")
        if "username" not in data:
            return None
        password = credential(data, "password", source.secret) if "password" in data else ""
        pair = f"{credential(data, 'username', source.secret)}:{password}".encode()
    elif url.user is not None:
        pair = f"{url.user}:{url.password or ''}".encode()
    else:
        return None
    return "Basic " + base64.b64encode(pair).decode()


async def _save(response: aiohttp.ClientResponse, path: Path, policy: FetchPolicy) -> str:
    """The body into the new file `path`, stopped past the byte limit or when slower than the minimum rate; its
    sha256 (hex)."""
    limits = policy.limits
    if response.content_length is not None and response.content_length > limits.max_bytes:
        raise limits.too_many_bytes()
    digest = hashlib.sha256()
    size = 0
    with open(path, "xb") as out:
        try:
            async for chunk in paced(response.content, policy.min_rate, CHUNK):
                size += len(chunk)
                if size > limits.max_bytes:
                    raise limits.too_many_bytes()
                digest.update(chunk)
                out.write(chunk)
        except TooSlow as e:
            raise FetchError(f"{e}; stopped (the controller's --fetch-min-rate and --fetch-min-rate-window)") from None
    return digest.hexdigest()


async def http_get(url: yarl.URL, authorization: str | None, path: Path, policy: FetchPolicy) -> str:
    """GET `url` into the new file `path`; the sha256 (hex) of what was written. Redirects are followed by hand, to
    http and https URLs only, at most MAX_HTTP_REDIRECTS, and the credentials go to the URL's own origin (scheme, host
    and port) only. Nothing is decompressed in transit, so the digest is of what was served."""
    origin = url.origin()
    session = aiohttp.ClientSession(
        connector=guarded_connector(policy.destinations),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=HTTP_CONNECT_TIMEOUT, sock_read=HTTP_READ_TIMEOUT),
        headers={"User-Agent": "kapply", "Accept-Encoding": "identity"},
        cookie_jar=aiohttp.DummyCookieJar(),
        auto_decompress=False,
        trust_env=False,  # no ~/.netrc: proxies are read by _proxy
    )
    async with session:
        for _ in range(MAX_HTTP_REDIRECTS + 1):
            headers = {"Authorization": authorization} if authorization and url.origin() == origin else {}
            try:
                policy.destinations.check_literal(url.host or "")
            except OSError as e:
                raise FetchError(f"Initiating URL download: {e.strerror}") from None
            try:
                async with session.get(url, headers=headers, allow_redirects=False, proxy=_proxy(url)) as response:
                    location = response.headers.get("Location")
                    if response.status in REDIRECTS and location:
                        url = url.join(yarl.URL(location))
                        if url.scheme not in HTTP_SCHEMES:
                            raise FetchError("Expected every redirect to lead to an http or https URL")
                        continue
                    if response.status != 200:
                        raise FetchError(f"Expected 200 OK, but was '{response.status} {response.reason or ''}'")
                    return await _save(response, path, policy)
            except (aiohttp.ClientError, TimeoutError, ValueError) as e:
                raise FetchError(f"Initiating URL download: {type(e).__name__}: {shown(str(e), 200)}") from None
    raise FetchError(f"Stopped after {MAX_HTTP_REDIRECTS} redirects")


def archive_kind(path: Path, name: str) -> Archive:
    """A zip by its first bytes, a tar (compressed or not) by its first block (kapply.oci.extract.is_tar: nothing
    more is read), else a file. `name` begins messages (a compressed stream broken within its first block)."""
    with open(path, "rb") as f:
        if f.read(4) in ZIP_MAGIC:
            return Archive.ZIP
    return Archive.TAR if is_tar(path, name) else Archive.FILE


def _zip_directory_size(path: Path) -> int:
    """The size of a zip's central directory as zipfile takes it (its _EndRecData) and reads it, whole, into memory:
    the end record's (the last 22 bytes when they are one without a comment, else the last one found), or, whatever
    that says, the zip64 end record's when a zip64 locator and record lie right before it; BadZipFile when there is
    no end record."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        start = max(0, size - (1 << 16) - 22)  # the end record (22 bytes) and a comment of at most 64 KiB
        f.seek(start)
        tail = f.read()
        if len(tail) >= 22 and tail[-22:-18] == ZIP_END and tail[-2:] == b"\0\0":
            at = len(tail) - 22
        else:
            at = tail.rfind(ZIP_END)
        if at < 0 or len(tail) - at < 22:
            raise zipfile.BadZipFile("no end of central directory record")
        (directory,) = struct.unpack_from("<I", tail, at + 12)
        end = start + at
        if end >= 76:
            f.seek(end - 76)
            zip64 = f.read(76)  # the zip64 end record (56 bytes), then its locator (20)
            if zip64[56:60] == ZIP64_LOCATOR and zip64[:4] == ZIP64_END:
                return int(struct.unpack_from("<Q", zip64, 40)[0])
        return int(directory)


def _zip_as_tar(archive: Path, tar_path: Path, limits: Limits, source: str) -> None:
    """The zip's directories, files and symlinks (a zip made on unix keeps the entry's mode in its external
    attributes) written as a tar, so that Extraction applies the same rules to them as to a tar's entries; anything
    else is refused. The entry count and the sizes the zip declares are checked before anything is decompressed
    (zipfile never returns more than an entry's declared size)."""

    def refuse(name: str, why: str) -> FetchError:
        return FetchError(f"{source}: entry {shown(name)} {why}; refusing the archive")

    directory = _zip_directory_size(archive)  # every entry's name, extra fields and comment
    if directory > limits.max_files * ZIP_DIRECTORY_BYTES_PER_ENTRY:
        raise limits.too_many_files()
    if directory > limits.max_bytes:
        raise limits.too_many_bytes()
    with zipfile.ZipFile(archive) as zipped, tarfile.open(tar_path, "w", format=tarfile.PAX_FORMAT) as tar:
        entries = zipped.infolist()
        if len(entries) > limits.max_files:
            raise limits.too_many_files()
        if directory + sum(entry.file_size for entry in entries) > limits.max_bytes:
            raise limits.too_many_bytes()
        for entry in entries:
            mode = entry.external_attr >> 16
            info = tarfile.TarInfo(entry.filename)
            if entry.is_dir() or stat.S_ISDIR(mode):
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif stat.S_ISLNK(mode):
                with zipped.open(entry) as f:
                    target = f.read(MAX_SYMLINK_TARGET + 1)
                if len(target) > MAX_SYMLINK_TARGET:
                    raise refuse(entry.filename, f"is a symlink whose target is longer than {MAX_SYMLINK_TARGET} bytes")
                info.type = tarfile.SYMTYPE
                info.linkname = target.decode("utf-8", "surrogateescape")
                tar.addfile(info)
            elif stat.S_IFMT(mode) in (0, stat.S_IFREG):  # 0: made where modes are not kept
                info.size = entry.file_size
                info.mode = stat.S_IMODE(mode) or 0o644
                with zipped.open(entry) as f:
                    tar.addfile(info, f)
            else:
                raise refuse(entry.filename, "is a device, FIFO or other special file")


def _said(error: Exception) -> str:
    """What zipfile or a decompressor said (their own words, names in them quoted)."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def unpack(download: Path, tree: Path, name: str, limits: Limits) -> None:
    """What was downloaded into the empty directory `tree`: a zip's or a tar's entries by kapply.oci.extract's rules,
    or the file itself named `name`. `name` begins messages."""
    kind = archive_kind(download, name)
    if kind is Archive.FILE:
        try:
            shutil.move(download, confined(tree, name))
        except OSError as e:
            raise FetchError(f"Writing '{name}': {e.strerror}") from None
        return
    if kind is Archive.ZIP:
        tar = download.with_name(f"{download.name}.tar")
        try:
            _zip_as_tar(download, tar, limits, name)
        except OSError as e:
            if e.errno is None:  # a decompressor's (bzip2: "Invalid data stream"), not the disk's
                raise FetchError(f"{name}: not a valid zip archive ({_said(e)})") from None
            raise FetchError(f"{name}: cannot unpack the archive: {e.strerror}") from None
        except (
            zipfile.BadZipFile,
            NotImplementedError,  # a compression method zipfile does not have
            RuntimeError,  # an encrypted entry
            EOFError,
            ValueError,  # a name that is not the UTF-8 its flag says (UnicodeDecodeError) ...
            struct.error,
            zlib.error,
            lzma.LZMAError,
        ) as e:
            raise FetchError(f"{name}: not a valid zip archive ({_said(e)})") from None
        download.unlink()
        download = tar
    extraction = Extraction(tree, _extract_limits(limits))
    extraction.layer(download, name)
    extraction.finish(name)


async def _http(target: Path, source: Http, read: ReadSource, policy: FetchPolicy, where: str, prefix: str) -> str:
    """Download into a temporary directory, check the digest, unpack, check the files, copy them (or the subPath) into
    target; the sha256 of what was downloaded (for the lock)."""
    url = http_url(source.url, f"{where}.url")
    what = f"Fetching http {public_url(source.url)}"
    name = file_name(url, f"{where}.url")
    authorization = await _http_authorization(source, url, read)
    with tempfile.TemporaryDirectory(prefix="kapply-http-", ignore_cleanup_errors=True) as scratch_dir:
        scratch = Path(scratch_dir)
        downloaded, tree = scratch / "download", scratch / "tree"
        tree.mkdir()
        try:
            fetching = http_get(url.with_user(None), authorization, downloaded, policy)
            sha256 = await asyncio.wait_for(fetching, policy.timeout)
        except TimeoutError:
            raise policy.too_late(f"{what}: Downloading URL: not done") from None
        except FetchError as e:
            raise FetchError(f"{what}: Downloading URL: {e}") from None
        if source.sha256 and sha256 != source.sha256:
            raise FetchError(
                f"{what}: Downloading URL: Expected digest to match 'sha256:{source.sha256}', but was 'sha256:{sha256}'"
            )
        try:
            await asyncio.to_thread(unpack, downloaded, tree, name, policy.limits)
        except (FetchError, OciError) as e:
            raise FetchError(f"{what}: Unpacking archive: {e}") from None
        _place(tree, source.sub_path, target, policy.limits, prefix, what, "the download")
    return sha256


def public_url(url: str) -> str:
    """The URL without credentials a user may have written into it (status and messages show this)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


async def fetch(
    sources: tuple[FetchSource, ...], root: Path, read: ReadSource, policy: FetchPolicy | None = None
) -> str:
    """Fetch every source into root (each under its path), each checked (`check_tree`) before the next is fetched and
    all of them together at the end; returns the lock text for status (kapp-controller puts vendir's lock there:
    which git commit, image or bundle digest reference (with its tag) and http sha256 each directory holds)."""
    policy = policy or FetchPolicy()
    lock = []
    for index, source in enumerate(sources):
        target = confined(root, source.path) if source.path else root
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise FetchError(f"Invalid path: {source.path} ({e.strerror})") from None
        entry: dict[str, object] = {"path": source.path or "."}
        if source.inline is not None:
            await _inline(target, source.inline, read)
            check_tree(target, policy.limits, source.path)
            entry["inline"] = {}
        elif source.git is not None:
            where = f"spec.fetch[{index}].git"
            sha = await _git(target, source.git, read, policy, where, source.path)
            entry["git"] = {"sha": sha, "url": public_url(source.git.url)}
        elif source.image is not None:
            image = source.image
            where = f"spec.fetch[{index}].image.url"
            pulled = RegistrySource(Kind.IMAGE, image.url, image.secret, image.tag_selection, image.sub_path, where)
            reference, tag = await _pull(target, pulled, read, policy, source.path)
            entry["image"] = {"url": reference, **({"tag": tag} if tag else {})}
        elif source.imgpkg_bundle is not None:
            bundle = source.imgpkg_bundle
            where = f"spec.fetch[{index}].imgpkgBundle.image"
            pulled = RegistrySource(Kind.IMGPKG_BUNDLE, bundle.image, bundle.secret, bundle.tag_selection, "", where)
            reference, tag = await _pull(target, pulled, read, policy, source.path)
            entry["imgpkgBundle"] = {"image": reference, **({"tag": tag} if tag else {})}
        elif source.http is not None:
            sha256 = await _http(target, source.http, read, policy, f"spec.fetch[{index}].http", source.path)
            entry["http"] = {"url": public_url(source.http.url), "sha256": sha256}
        elif source.helm_chart is not None:
            where = f"spec.fetch[{index}].helmChart"
            chart = source.helm_chart
            entry["helmChart"] = await fetch_helm.fetch_chart(target, chart, read, policy, where, source.path)
        lock.append(entry)
    if len(sources) > 1:
        check_tree(root, policy.limits)
    return yaml.safe_dump(
        {"apiVersion": "vendir.k14s.io/v1alpha1", "kind": "LockConfig", "directories": lock}, sort_keys=False
    )
