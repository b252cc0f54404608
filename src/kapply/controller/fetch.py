"""Fetching an App's sources into a directory: inline files, files from ConfigMaps and Secrets, and git.

Every path is confined to the fetch directory (`Invalid path: ...`). Secrets' values are read with the controller's
rights, in the App's namespace only (as kapp-controller does), and never appear in status or messages.
"""

from __future__ import annotations

import base64
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit, urlunsplit

import yaml

from kapply.controller.spec import FetchSource, Git, Inline, SourceRef
from kapply.controller.tools import ToolError, run
from kapply.errors import KapplyError
from kapply.objects import Obj

# Reads a ConfigMap or Secret of the App's namespace by (kind, name); None when it does not exist.
ReadSource = Callable[[str, str], Awaitable[Obj | None]]


class FetchError(KapplyError):
    """Fetching failed; `stderr` is what a tool said (git), if anything."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


def confined(root: Path, relative: str) -> Path:
    """root/relative, refusing a path that leaves root (`..`, absolute paths)."""
    parts = PurePosixPath(relative).parts
    if PurePosixPath(relative).is_absolute() or ".." in parts:
        raise FetchError(f"Invalid path: {relative}")
    return root.joinpath(*parts)


def _write(root: Path, relative: str, content: bytes) -> None:
    path = confined(root, relative)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)


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
        return sorted((k, base64.b64decode(v)) for k, v in data.items())
    return sorted((k, str(v).encode()) for k, v in data.items())


def _ref_name(ref: str) -> str:
    """kapp-controller writes refs as `origin/main`; git checks out `main`."""
    return ref.removeprefix("origin/")


async def _git(root: Path, git: Git, read: ReadSource) -> str:
    """Clone and check out; the commit fetched (for the lock)."""
    env = {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}
    url = git.url
    with tempfile.TemporaryDirectory(prefix="kapply-git-") as secret_dir:
        if git.secret:
            credentials = dict(await source_data(SourceRef("Secret", git.secret), read))
            if "ssh-privatekey" in credentials:
                key = Path(secret_dir) / "key"
                key.write_bytes(credentials["ssh-privatekey"])
                key.chmod(0o600)
                known = Path(secret_dir) / "known_hosts"
                known.write_bytes(credentials.get("ssh-knownhosts", b""))
                checking = "yes" if "ssh-knownhosts" in credentials else "no"
                env["GIT_SSH_COMMAND"] = (
                    f"ssh -i {key} -o UserKnownHostsFile={known} -o StrictHostKeyChecking={checking}"
                )
            elif "username" in credentials and url.startswith("https://"):
                askpass = Path(secret_dir) / "askpass"
                askpass.write_text('#!/bin/sh\ncase "$1" in Username*) echo "$GIT_USER";; *) echo "$GIT_PASS";; esac\n')
                askpass.chmod(0o700)
                env |= {
                    "GIT_ASKPASS": str(askpass),
                    "GIT_USER": credentials["username"].decode(),
                    "GIT_PASS": credentials.get("password", b"").decode(),
                }
        clone = root / ".git-clone"
        try:
            await run("git", "clone", "--quiet", "--no-checkout", "--", url, str(clone), env=env)
            ref = _ref_name(git.ref) or "HEAD"
            try:
                await run("git", "checkout", "--quiet", f"origin/{ref}", cwd=str(clone), env=env)
            except ToolError:
                await run("git", "checkout", "--quiet", ref, cwd=str(clone), env=env)
            commit = (await run("git", "rev-parse", "HEAD", cwd=str(clone), env=env)).stdout.strip()
        except ToolError as e:
            raise FetchError(f"Fetching git {public_url(url)}: {e}", e.stderr.replace(url, public_url(url))) from e
    source = confined(clone, git.sub_path) if git.sub_path else clone
    if not source.is_dir():
        raise FetchError(f"Fetching git {public_url(url)}: subPath '{git.sub_path}' is not a directory at {commit}")
    for entry in source.iterdir():
        if entry.name != ".git":
            entry.rename(root / entry.name)
    shutil.rmtree(clone)
    return commit


def public_url(url: str) -> str:
    """The URL without credentials a user may have written into it (status and messages show this)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


async def fetch(sources: tuple[FetchSource, ...], root: Path, read: ReadSource) -> str:
    """Fetch every source into root (each under its path); returns the lock text for status (kapp-controller puts
    vendir's lock there: which git commit each directory holds)."""
    lock = []
    for source in sources:
        target = confined(root, source.path) if source.path else root
        target.mkdir(parents=True, exist_ok=True)
        entry: dict[str, object] = {"path": source.path or "."}
        if source.inline is not None:
            await _inline(target, source.inline, read)
            entry["inline"] = {}
        elif source.git is not None:
            entry["git"] = {"sha": await _git(target, source.git, read), "url": public_url(source.git.url)}
        lock.append(entry)
    return yaml.safe_dump(
        {"apiVersion": "vendir.k14s.io/v1alpha1", "kind": "LockConfig", "directories": lock}, sort_keys=False
    )
