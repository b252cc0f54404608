"""Unpacking image layers (tar, gzipped or not) into a directory, as untrusted input.

A layer is whatever the registry served under a digest someone chose, so nothing in it may reach outside the
directory, and the result must be safe for the template tools that read it afterwards:

- an entry's name may not be absolute or hold `..`, and may not go through a symlink (every directory on its path
  must be a real directory), so nothing is ever written outside the directory;
- a symlink's target must be relative and resolve inside the directory, when it is made and once all layers are
  unpacked (a later symlink could change where an earlier one leads); vendir and kapply's fetch check refuse the
  same ones;
- a hard link must name a regular file unpacked before it; it becomes a copy (the controller's fetch check refuses
  hard links on disk, and a copy cannot alias anything);
- devices, FIFOs and other special entries are refused; modes keep only the owner's execute bit (no setuid,
  setgid or sticky bits), owners and times are not kept;
- whiteouts (`.wh.<name>`, `.wh..wh..opq`, the OCI layer spec's deletions) remove what earlier layers unpacked;
- all layers together are bounded in bytes, entries and depth (`ExtractLimits`, the controller's fetch limits);
- zstd layers are refused (Python's tarfile cannot read them).

Refusals name the layer and the entry (quoted), never a file's content.
"""

from __future__ import annotations

import gzip
import lzma
import os
import shutil
import stat
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from kapply.oci.errors import OciError, shown

CHUNK = 1 << 16
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

Refuse = Callable[[str], OciError]  # the error for an entry, given why


@dataclass(frozen=True, slots=True)
class ExtractLimits:
    """The most all layers of one image may unpack to."""

    max_bytes: int = 1 << 30  # bytes of files
    max_files: int = 100_000  # entries: files, directories, symlinks
    max_depth: int = 64  # directories within directories


class Extraction:
    """Layers unpacked in order into `root` (which must exist), with one tally for all of them. Call `layer()` for
    each layer, then `finish()`."""

    def __init__(self, root: Path, limits: ExtractLimits = ExtractLimits()) -> None:
        self.root = os.path.realpath(root)
        self.limits = limits
        self.bytes = 0
        self.entries = 0

    def layer(self, blob: Path, source: str) -> None:
        """Unpack one layer from the file `blob`; `source` names it in messages."""
        with open(blob, "rb") as f:
            if f.read(4) == ZSTD_MAGIC:
                raise OciError(f"{source}: zstd-compressed layers are not supported")
            f.seek(0)
            written: set[str] = set()  # paths this layer made: its whiteouts apply to earlier layers only
            try:
                with tarfile.open(fileobj=f, mode="r|*") as tar:
                    for member in tar:
                        self._entry(tar, member, written, source)
            except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, lzma.LZMAError) as e:
                raise OciError(f"{source}: not a valid tar archive ({type(e).__name__})") from None
            except OSError as e:
                raise OciError(f"{source}: cannot unpack the layer: {e.strerror or type(e).__name__}") from None

    def finish(self, source: str) -> None:
        """Check every symlink of the whole tree once all layers are in: each must still resolve inside."""
        for path in _symlinks(self.root):
            if not _within(os.path.realpath(path), self.root):
                relative = os.path.relpath(path, self.root)
                raise OciError(f"{source}: symlink {shown(relative)} resolves outside the directory; refusing it")

    # --- one entry ---------------------------------------------------------------------------------------------------

    def _entry(self, tar: tarfile.TarFile, member: tarfile.TarInfo, written: set[str], source: str) -> None:
        def refuse(why: str) -> OciError:
            return OciError(f"{source}: entry {shown(member.name)} {why}; refusing the layer")

        parts = _parts(member.name, refuse)
        if not parts:
            if member.isdir():
                return  # the archive's root, "./"
            raise refuse("has no name")
        self._count_entry(refuse)
        depth = len(parts) if member.isdir() else len(parts) - 1
        if depth > self.limits.max_depth:
            raise refuse(f"is nested more than {self.limits.max_depth} directories deep")
        relative = "/".join(parts)
        name = parts[-1]
        if name.startswith(WHITEOUT):
            self._whiteout(parts, written, refuse)
            return
        parent = self._parent(parts, refuse, create=True)
        assert parent is not None
        path = os.path.join(parent, name)
        if member.isdir():
            if not os.path.isdir(path) or os.path.islink(path):
                _remove(path)
                os.mkdir(path, 0o755)
        elif member.isreg():
            self._count(member.size, refuse)
            reader = tar.extractfile(member)
            assert reader is not None
            _remove(path)
            _write(path, reader, _mode(member.mode))
        elif member.issym():
            target = member.linkname
            if not target or "\0" in target:
                raise refuse("is a symlink with no target")
            if os.path.isabs(target):
                raise refuse("is a symlink to an absolute path")
            if not _within(os.path.realpath(os.path.join(parent, target)), self.root):
                raise refuse("is a symlink that resolves outside the directory")
            _remove(path)
            os.symlink(target, path)
        elif member.islnk():
            linked = "/".join(_parts(member.linkname, lambda why: refuse(f"is a hard link whose target {why}")))
            source_path = os.path.join(self.root, linked)
            if not linked or not self._is_regular_inside(linked):
                raise refuse("is a hard link to something that is not a file unpacked before it")
            self._count(os.lstat(source_path).st_size, refuse)
            if source_path != path:
                _remove(path)
                with open(source_path, "rb") as original:
                    _write(path, original, stat.S_IMODE(os.lstat(source_path).st_mode))
        else:
            raise refuse("is a device, FIFO or other special file")
        written.add(relative)

    def _parent(self, parts: list[str], refuse: Refuse, create: bool) -> str | None:
        """The entry's directory, made as needed when `create` (else None when missing); refused when any directory
        on the way is not a real one."""
        current = self.root
        for i, part in enumerate(parts[:-1]):
            current = os.path.join(current, part)
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                if not create:
                    return None
                self._count_entry(refuse)  # a directory it implies is an entry too
                os.mkdir(current, 0o755)
                continue
            if stat.S_ISLNK(info.st_mode):
                raise refuse(f"goes through the symlink {shown('/'.join(parts[: i + 1]))}")
            if not stat.S_ISDIR(info.st_mode):
                raise refuse(f"is under {shown('/'.join(parts[: i + 1]))}, which is not a directory")
        return current

    def _whiteout(self, parts: list[str], written: set[str], refuse: Refuse) -> None:
        """Remove what earlier layers put where the whiteout says (nothing when its directory is not there)."""
        name = parts[-1]
        if name != OPAQUE and name[len(WHITEOUT) :] in ("", ".", ".."):
            raise refuse("is a whiteout of nothing")
        parent = self._parent(parts, refuse, create=False)
        if parent is None:
            return
        prefix = "/".join(parts[:-1])
        if name == OPAQUE:
            for child in os.listdir(parent):
                if f"{prefix}/{child}".lstrip("/") not in written:
                    _remove(os.path.join(parent, child))
            return
        hidden = name[len(WHITEOUT) :]
        if f"{prefix}/{hidden}".lstrip("/") not in written:
            _remove(os.path.join(parent, hidden))

    def _count_entry(self, refuse: Refuse) -> None:
        self.entries += 1
        if self.entries > self.limits.max_files:
            raise refuse(f"is more than {self.limits.max_files} entries")

    def _count(self, size: int, refuse: Refuse) -> None:
        self.bytes += size
        if self.bytes > self.limits.max_bytes:
            raise refuse(f"takes the image past {self.limits.max_bytes} bytes")

    def _is_regular_inside(self, relative: str) -> bool:
        """A regular file at `relative`, reached through real directories only."""
        current = self.root
        parts = relative.split("/")
        for i, part in enumerate(parts):
            current = os.path.join(current, part)
            try:
                info = os.lstat(current)
            except OSError:  # missing, or under a file
                return False
            if i < len(parts) - 1 and not stat.S_ISDIR(info.st_mode):
                return False
        return stat.S_ISREG(info.st_mode)


def _parts(name: str, refuse: Refuse) -> list[str]:
    """A tar name as path components (`./` and empty ones dropped); refused when absolute or holding `..`."""
    if "\0" in name:
        raise refuse("has a NUL in its name")
    if name.startswith("/"):
        raise refuse("is an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise refuse("leaves the directory (..)")
    return parts


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _mode(mode: int) -> int:
    """rw-r--r--, with execute bits when the owner's was set."""
    return 0o755 if mode & 0o100 else 0o644


def _remove(path: str) -> None:
    """Remove whatever is at `path` (never following a symlink), if anything."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _write(path: str, reader: IO[bytes], mode: int) -> None:
    """A new file at `path` (never through a symlink, never over an existing one) with what `reader` holds."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "wb") as out:
        while chunk := reader.read(CHUNK):
            out.write(chunk)


def _symlinks(root: str) -> Iterator[str]:
    pending = [root]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_symlink():
                    yield entry.path
                elif entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
