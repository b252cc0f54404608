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
- all layers together are bounded in bytes, entries and depth (`ExtractLimits`, the controller's fetch limits): the
  bytes are every member's declared size, whatever its type, and the data of every metadata header, counted before
  tarfile reads them;
- tarfile reads a metadata header's data (PAX `x` and `g`, GNU long names `L` and `K`) whole, into memory, and keeps
  every member it read: each such header is bounded (MAX_HEADER_BYTES, MAX_HEADER_CHAIN before one member, and the
  global ones, which persist, MAX_HEADER_BYTES together) before tarfile reads it, and members are not kept; sparse
  members are refused (their maps are read without bound);
- decompression is Python's gzip, bz2 and lzma readers', read to the end (their checksums checked, which tarfile's
  stream mode never does), and a header that is truncated or fails its checksum is an error (tarfile would take it
  for the end of the archive);
- zstd layers are refused (Python's tarfile cannot read them).

Refusals name the layer and the entry (quoted), never a file's content.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import shutil
import stat
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kapply.oci.errors import OciError, shown

CHUNK = 1 << 16
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAX_HEADER_BYTES = 1 << 20  # data of one metadata header (PAX, GNU long name), and of all global PAX headers together
MAX_HEADER_CHAIN = 8  # metadata headers before one member (each a recursion in tarfile)
# What tarfile reads whole into memory before the member they describe, by type.
METADATA = {
    tarfile.XHDTYPE: "PAX extended header",
    tarfile.XGLTYPE: "PAX global header",
    tarfile.SOLARIS_XHDTYPE: "Solaris extended header",
    tarfile.GNUTYPE_LONGNAME: "GNU long name",
    tarfile.GNUTYPE_LONGLINK: "GNU long link name",
}

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
            magic = f.read(8)
            if magic.startswith(ZSTD_MAGIC):
                raise OciError(f"{source}: zstd-compressed layers are not supported")
            f.seek(0)
            written: set[str] = set()  # paths this layer made: its whiteouts apply to earlier layers only
            try:
                with _stream(f, magic) as stream:
                    with _TarFile.open(fileobj=stream, mode="r|") as tar:
                        counted = 0
                        while (member := tar.next()) is not None:
                            tar.members.clear()  # stream mode keeps every member read, for nothing here
                            self._count(tar.header_bytes - counted, lambda why: _Refused(f"a metadata header {why}"))
                            counted = tar.header_bytes
                            self._entry(tar, member, written, source)
                    # the rest (a tar's padding), so that a compressed stream's checksum is checked at its end
                    while chunk := stream.read(CHUNK):
                        self._count(len(chunk), lambda why: _Refused(f"what follows the archive's end {why}"))
            except _Refused as e:
                raise OciError(f"{source}: {e}; refusing the layer") from None
            except _Corrupt as e:
                raise OciError(f"{source}: {e}") from None
            except (tarfile.TarError, EOFError, zlib.error) as e:
                raise OciError(f"{source}: not a valid tar archive ({_said(e)})") from None
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
        self._count(member.size, refuse)  # whatever its type: tarfile skips the data of those it does not read
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

    def _count(self, size: int, refuse: Callable[[str], Exception]) -> None:
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


def is_tar(path: Path, source: str) -> bool:
    """Whether the file is a tar archive, compressed (gzip, bzip2, xz) or not: its first block, decompressed, is a
    valid tar header. Only that block is read (tarfile.is_tarfile reads the first member whole, metadata headers
    included); OciError when the compressed stream breaks within it. `source` names the file in messages."""
    with open(path, "rb") as f:
        magic = f.read(8)
        f.seek(0)
        try:
            with _stream(f, magic) as stream:
                block = stream.read(tarfile.BLOCKSIZE)
        except _Corrupt as e:
            raise OciError(f"{source}: {e}") from None
    try:
        tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
    except tarfile.HeaderError:
        return False
    return True


# --- reading the archive ------------------------------------------------------------------------------------------


class _Refused(Exception):  # noqa: N818 (not an error of the code: the layer is refused, the message says why)
    """Why a layer is refused, found while tarfile reads it (Extraction.layer names the layer)."""


class _Corrupt(Exception):  # noqa: N818
    """A layer that is not a valid `what` (`tar archive`, `gzip stream`...), as `said`."""

    def __init__(self, what: str, said: str) -> None:
        super().__init__(f"not a valid {what} ({said})")


class _Stream(io.BufferedIOBase):
    """A layer's bytes, decompressed (by `what`, a COMPRESSIONS name, or not at all), as tarfile reads them; a
    decompressor's failure (a truncated stream, a bad checksum) is a _Corrupt naming the compression."""

    def __init__(self, source: IO[bytes] | io.BufferedIOBase, what: str) -> None:
        super().__init__()
        self.source = source
        self.what = what

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        try:
            return self.source.read(-1 if size is None else size)
        except (EOFError, OSError, zlib.error, lzma.LZMAError) as e:
            if self.what == "tar":
                raise
            raise _Corrupt(f"{self.what} stream", _said(e)) from None

    def close(self) -> None:
        self.source.close()
        super().close()


def _said(error: Exception) -> str:
    """What tarfile or a decompressor said (their own words: no content of the archive but a few bytes' repr)."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _stream(f: IO[bytes], magic: bytes) -> _Stream:
    """The layer in `f` as tarfile reads it: decompressed by Python's readers when its first bytes (`magic`) say
    gzip, bzip2 or xz (they check the checksums at the end)."""
    if magic.startswith(b"\x1f\x8b"):
        return _Stream(gzip.GzipFile(fileobj=f, mode="rb"), "gzip")
    if magic.startswith(b"BZh"):
        return _Stream(bz2.BZ2File(f), "bzip2")
    if magic.startswith(b"\xfd7zXZ\x00"):
        return _Stream(lzma.LZMAFile(f), "xz")
    return _Stream(f, "tar")


class _TarInfo(tarfile.TarInfo):
    """tarfile's member, bounded before tarfile reads what a header declares (see the module's docs). tarfile reads
    every header through `frombuf` and `_proc_member` (its per-type dispatch, the same since Python 3.2), and a
    metadata header's next one through this class too: the bounds hold for each header of a chain."""

    @classmethod
    def frombuf(cls, buf: bytes | bytearray, encoding: str, errors: str) -> Any:
        try:
            return super().frombuf(buf, encoding, errors)
        except tarfile.HeaderError as e:
            if not buf or buf == bytes(tarfile.BLOCKSIZE):
                raise  # the end of the archive
            raise _Corrupt(
                "tar archive", f"{'truncated' if len(buf) < tarfile.BLOCKSIZE else 'corrupt'} header: {e}"
            ) from None

    def _proc_member(self, tar: tarfile.TarFile) -> Any:
        assert isinstance(tar, _TarFile)
        what = METADATA.get(self.type)
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise _Refused(f"entry {shown(self.name)} is a sparse file, which is not supported")
        if what is None:
            tar.chain = 0
        else:
            tar.chain += 1
            if tar.chain > MAX_HEADER_CHAIN:
                raise _Refused(f"has more than {MAX_HEADER_CHAIN} metadata headers before one member")
            if self.size > MAX_HEADER_BYTES:
                raise _Refused(f"has a {what} of {self.size} bytes (at most {MAX_HEADER_BYTES} are allowed)")
            tar.header_bytes += self.size
            if self.type == tarfile.XGLTYPE:
                tar.global_bytes += self.size
                if tar.global_bytes > MAX_HEADER_BYTES:
                    raise _Refused(f"has PAX global headers of more than {MAX_HEADER_BYTES} bytes together")
        member = super()._proc_member(tar)  # type: ignore[misc]
        if member.sparse is not None:  # a PAX sparse map (formats 0.0 and 0.1 are read from the bounded header)
            raise _Refused(f"entry {shown(member.name)} is a sparse file, which is not supported")
        return member

    def _proc_gnusparse_10(self, *args: Any) -> None:
        raise _Refused("has a sparse file (PAX format 1.0), which is not supported")


class _TarFile(tarfile.TarFile):
    """tarfile.TarFile reading members as _TarInfo, with the tallies _TarInfo keeps."""

    tarinfo = _TarInfo
    members: list[tarfile.TarInfo]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.header_bytes = 0  # data of all metadata headers read
        self.global_bytes = 0  # of global PAX headers (tarfile keeps what they say for the rest of the archive)
        self.chain = 0  # metadata headers since the last member
        super().__init__(*args, **kwargs)  # reads the first member


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
