"""Building an imgpkg bundle as `imgpkg push -b REF -f DIR` builds it, to push with kapply.oci.push.

The image is one gzipped tar layer, an image config whose label `dev.carvel.imgpkg.bundle` marks it a bundle, and a
Docker v2 schema 2 manifest (imgpkg's media types). The layer is laid out as imgpkg (Go's archive/tar) lays it out, so
that the same files give the same uncompressed layer, byte for byte: `.` first, then every directory and regular
file under the bundle's root in lexical order of its path, as USTAR headers with no trailing `/` on directory names,
modes 0700 (directories) and 0600 (files), owner 0:0 with no names, modification time 0, and no padding after the
two zero blocks that end the archive. (The gzip stream is Python's, so the compressed layer, and so the manifest's
digest, differ from imgpkg's.)

What goes in is given as `Entry`s (a path in the bundle, and the content of a file or None for a directory);
`entries_from` reads them from directories and files on disk, refusing symlinks and anything but regular files and
directories, since what is pushed must be exactly what was listed.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kapply.oci.errors import OciError, shown
from kapply.oci.push import Blob
from kapply.oci.registry import MediaType, sha256_digest

BUNDLE_LABEL = "dev.carvel.imgpkg.bundle"
IMGPKG_DIR = ".imgpkg"
IMAGES_LOCK = "images.yml"
CONFIG_MEDIA_TYPE = "application/vnd.docker.container.image.v1+json"
LAYER_MEDIA_TYPE = "application/vnd.docker.image.rootfs.diff.tar.gzip"
MANIFEST_MEDIA_TYPE = MediaType.DOCKER_MANIFEST.value
BLOCK = 512
DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
MAX_BUNDLE_BYTES = 1 << 30  # of the files read into a bundle


@dataclass(frozen=True, slots=True)
class Entry:
    """A path in the bundle (`/`-separated, relative, no `.` or `..` parts) and a file's content, or None for a
    directory."""

    path: str
    content: bytes | None = None


@dataclass(frozen=True, slots=True)
class Bundle:
    """The image to push: its manifest and the blobs it names (the layer, then the config)."""

    manifest: bytes
    blobs: tuple[Blob, Blob]
    listing: tuple[str, ...]  # imgpkg's `dir: <path>` / `file: <path>` lines, in the layer's order

    @property
    def media_type(self) -> str:
        return MANIFEST_MEDIA_TYPE


def build(entries: Iterable[Entry]) -> Bundle:
    """The bundle of `entries` (directories that hold an entry are added; `.` is always first)."""
    ordered = _with_parents(entries)
    tar = layer_tar(ordered)
    layer = Blob(LAYER_MEDIA_TYPE, gzip.compress(tar, mtime=0))
    config = Blob(CONFIG_MEDIA_TYPE, image_config(sha256_digest(tar)))
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": {"mediaType": config.media_type, "size": len(config.data), "digest": config.digest},
        "layers": [{"mediaType": layer.media_type, "size": len(layer.data), "digest": layer.digest}],
    }
    listing = tuple(f"{'dir' if e.content is None else 'file'}: {e.path}" for e in ordered)
    return Bundle(_compact(manifest), (layer, config), listing)


def image_config(diff_id: str) -> bytes:
    """imgpkg's image config (its fields in Go's order), with kapply named as the layer's author."""
    config = {
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": [{"author": "kapply", "created": "0001-01-01T00:00:00Z", "created_by": "kapply"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "config": {"Labels": {BUNDLE_LABEL: "true"}},
    }
    return _compact(config)


def _compact(document: object) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def _with_parents(entries: Iterable[Entry]) -> list[Entry]:
    by_path: dict[str, Entry] = {".": Entry(".")}
    for entry in entries:
        parts = entry.path.split("/")
        if not entry.path or entry.path.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise OciError(f"Bundle path {shown(entry.path)} is not a relative path within the bundle")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if by_path.get(parent, Entry(parent)).content is not None:
                raise OciError(f"Bundle path {shown(parent)} is both a file and a directory")
            by_path[parent] = Entry(parent)
        existing = by_path.get(entry.path)
        if existing is not None and (existing.content is None) != (entry.content is None):
            raise OciError(f"Bundle path {shown(entry.path)} is both a file and a directory")
        by_path[entry.path] = entry
    # filepath.Walk's order: a directory's entries sorted by name, each directory followed by what it holds
    return sorted(by_path.values(), key=lambda e: [] if e.path == "." else e.path.split("/"))


def layer_tar(entries: Sequence[Entry]) -> bytes:
    """The uncompressed layer: each entry's USTAR header (and a file's content, padded to 512 bytes), then two zero
    blocks."""
    out = bytearray()
    for entry in entries:
        content = entry.content
        out += _header(
            entry.path, DIRECTORY_MODE if content is None else FILE_MODE, len(content or b""), content is None
        )
        if content:
            out += content + b"\0" * (-len(content) % BLOCK)
    return bytes(out + b"\0" * (2 * BLOCK))


def _header(name: str, mode: int, size: int, directory: bool) -> bytes:
    encoded = name.encode()
    prefix = b""
    if len(encoded) > 100:  # USTAR's split at a `/`: the name's last <= 100 bytes, a prefix of <= 155
        cut = encoded.rfind(b"/", 0, 156)
        if cut <= 0 or len(encoded) - cut - 1 > 100:
            raise OciError(f"Bundle path {shown(name)} is too long for a tar header")
        prefix, encoded = encoded[:cut], encoded[cut + 1 :]
    fields = [
        encoded.ljust(100, b"\0"),
        b"%07o\0" % mode,
        b"%07o\0" % 0,  # uid
        b"%07o\0" % 0,  # gid
        b"%011o\0" % size,
        b"%011o\0" % 0,  # mtime
        b" " * 8,  # the checksum, counted as spaces
        b"5" if directory else b"0",
        b"\0" * 100,  # linkname
        b"ustar\x0000",
        b"\0" * 32,  # uname
        b"\0" * 32,  # gname
        b"%07o\0" % 0,  # devmajor
        b"%07o\0" % 0,  # devminor
        prefix.ljust(155, b"\0"),
    ]
    header = b"".join(fields).ljust(BLOCK, b"\0")
    checksum = b"%06o\0 " % sum(header)
    return header[:148] + checksum + header[156:]


def entries_from(root: Path, paths: Sequence[str]) -> list[Entry]:
    """The directories and files at `paths` (relative to `root`, each within it), everything under a directory
    included, at the same paths in the bundle. Symlinks and special files are refused, and so are more than
    MAX_BUNDLE_BYTES of content."""
    found: list[Entry] = []
    total = 0
    resolved_root = root.resolve()
    for path in paths:
        relative = Path(os.path.normpath(path))
        if relative.is_absolute() or relative.parts[:1] == ("..",):
            raise OciError(f"Path {shown(path)} to put in the bundle is not within {root}")
        for current, kind in _walk(root, relative):
            if kind == "dir":
                if str(current) != ".":
                    found.append(Entry(current.as_posix()))
                continue
            data = (root / current).read_bytes()
            total += len(data)
            if total > MAX_BUNDLE_BYTES:
                raise OciError(f"The bundle's files are more than {MAX_BUNDLE_BYTES} bytes")
            found.append(Entry(current.as_posix(), data))
    if not all((resolved_root / e.path).resolve().is_relative_to(resolved_root) for e in found):
        raise OciError(f"A path to put in the bundle leaves {root}")
    return found


def _walk(root: Path, relative: Path) -> Iterable[tuple[Path, str]]:
    try:
        info = (root / relative).lstat()
    except OSError as e:
        raise OciError(f"Reading {shown(str(relative))} for the bundle: {e.strerror or e}") from None
    if stat.S_ISLNK(info.st_mode):
        raise OciError(f"{shown(str(relative))} is a symlink; a bundle holds only directories and regular files")
    if stat.S_ISREG(info.st_mode):
        yield relative, "file"
        return
    if not stat.S_ISDIR(info.st_mode):
        raise OciError(f"{shown(str(relative))} is not a directory or a regular file")
    yield relative, "dir"
    for child in sorted(os.listdir(root / relative)):
        yield from _walk(root, relative / child)
