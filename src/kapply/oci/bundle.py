"""Fetching an App's `image` or `imgpkgBundle` source into a directory, as kapp-controller does through vendir and
imgpkg (`imgpkg pull -i` / `-b`).

- `image`: every layer of the image, in order. An imgpkg bundle may be fetched this way too (vendir pulls it as a
  plain image: its files, `.imgpkg/` included, and nothing done with its lock).
- `imgpkgBundle`: the image must be a bundle, i.e. its config carries the label `dev.carvel.imgpkg.bundle`; its
  layers are unpacked and its `.imgpkg/images.yml` (an ImagesLock: the digest references of the images the bundle's
  configuration uses) is read. When every image of the lock is also in the bundle's own repository (the bundle was
  copied with its images, `imgpkg copy -b ... --to-repo ...`), the lock is rewritten to name them there, in the
  fetched `.imgpkg/images.yml` and in what `fetch()` returns, as `imgpkg pull -b` does; otherwise it is left as the
  bundle has it. A kbld template step (kapp-controller's, and kapply.controller.template's) then reads that lock to
  resolve the configuration's image references (`kbld: {paths: ["-", .imgpkg/images.yml]}`). imgpkg decides by
  looking each image up in the bundle's repository (a 404, 401 or 403 means not copied), or by the bundle's
  image-locations image when `imgpkg copy` left one; kapply always looks the images up, which gives the same answer
  for a bundle copied whole.
- An image index is refused unless a platform is given (imgpkg refuses one: "provide a specific digest").

Nested bundles (`imgpkg pull --recursive`) are not fetched: kapp-controller pulls the named bundle only.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from kapply import yamlio
from kapply.http import ANYWHERE, Destinations
from kapply.oci.auth import ANONYMOUS, RegistryAuth
from kapply.oci.errors import OciError, shown
from kapply.oci.extract import Extraction, ExtractLimits
from kapply.oci.reference import Reference, parse_reference
from kapply.oci.registry import Limits, Manifest, Platform, RegistryClient

BUNDLE_LABEL = "dev.carvel.imgpkg.bundle"
IMGPKG_DIR = ".imgpkg"
IMAGES_LOCK = "images.yml"
LOCK_API_VERSION = "imgpkg.carvel.dev/v1alpha1"
LOCK_KIND = "ImagesLock"
LOCK_MAX_BYTES = 4 << 20


class Kind(StrEnum):
    """The App fetch source kinds served from a registry."""

    IMAGE = "image"
    IMGPKG_BUNDLE = "imgpkgBundle"


@dataclass(frozen=True, slots=True)
class LockedImage:
    image: str  # a digest reference
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ImagesLock:
    """imgpkg's ImagesLock (`.imgpkg/images.yml`)."""

    images: tuple[LockedImage, ...]

    def document(self) -> dict[str, Any]:
        """As imgpkg writes it (annotations left out when there are none)."""
        images: list[dict[str, Any]] = []
        for locked in self.images:
            entry: dict[str, Any] = {"image": locked.image}
            if locked.annotations:
                entry["annotations"] = dict(locked.annotations)
            images.append(entry)
        return {"apiVersion": LOCK_API_VERSION, "kind": LOCK_KIND, "images": images}


@dataclass(frozen=True, slots=True)
class Fetched:
    """What was fetched: the image by digest, whether it is a bundle, and (for `imgpkgBundle`) its ImagesLock, as
    written into the directory: `relocated` when its images were found in the bundle's repository and it names them
    there."""

    reference: Reference
    kind: Kind
    is_bundle: bool
    images_lock: ImagesLock | None = None
    relocated: bool = False


async def fetch(
    url: str,
    kind: Kind,
    destination: Path,
    *,
    auth: RegistryAuth = ANONYMOUS,
    plain_http: bool = False,
    tls: ssl.SSLContext | None = None,
    platform: Platform | None = None,
    registry_limits: Limits | None = None,
    extract_limits: ExtractLimits | None = None,
    destinations: Destinations = ANYWHERE,
) -> Fetched:
    """Fetch the image or bundle `url` names into `destination`, an empty directory. OciError, naming `url`, when
    the registry, the image or its content is refused; `destination` then holds whatever was unpacked so far.
    `auth`, `plain_http`, `tls` and `destinations` are RegistryClient's; the limits default to `Limits()` and
    `ExtractLimits()`."""
    ref = parse_reference(url)
    if any(destination.iterdir()):
        raise OciError(f"Fetching {ref}: the destination directory is not empty")
    client = RegistryClient(
        auth, plain_http=plain_http, tls=tls, limits=registry_limits or Limits(), destinations=destinations
    )
    async with client:
        manifest = await client.manifest(ref, platform)
        pinned = manifest.reference
        is_bundle = _is_bundle(pinned, await client.blob(pinned, manifest.config))
        if kind is Kind.IMGPKG_BUNDLE and not is_bundle:
            raise OciError(
                f"{pinned}: expected an imgpkg bundle, but the image is not one (its config has no label "
                f"{BUNDLE_LABEL}); fetch it as `image`"
            )
        await _unpack(client, manifest, destination, extract_limits or ExtractLimits())
        if kind is Kind.IMAGE:
            return Fetched(pinned, kind, is_bundle)
        lock = read_images_lock(destination, pinned)
        relocated = await _relocated(client, lock, pinned)
        if relocated is not None:
            _write_images_lock(destination, relocated)
            return Fetched(pinned, kind, True, relocated, relocated=True)
        return Fetched(pinned, kind, True, lock)


def _is_bundle(ref: Reference, config: bytes) -> bool:
    try:
        document = json.loads(config)
    except ValueError:
        raise OciError(f"{ref}: the image config is not JSON") from None
    labels = (document.get("config") or {}).get("Labels") if isinstance(document, dict) else None
    return isinstance(labels, dict) and BUNDLE_LABEL in labels


async def _unpack(client: RegistryClient, manifest: Manifest, destination: Path, limits: ExtractLimits) -> None:
    """Each layer downloaded (and checked) into a temporary directory, then unpacked, in order."""
    extraction = Extraction(destination, limits)
    count = len(manifest.layers)
    with tempfile.TemporaryDirectory(prefix="kapply-oci-") as blobs:
        for i, layer in enumerate(manifest.layers, 1):
            blob = Path(blobs, f"layer-{i}")
            await client.download(manifest.reference, layer, blob)
            source = f"{manifest.reference}, layer {i}/{count} ({layer.digest[:19]})"
            await asyncio.to_thread(extraction.layer, blob, source)
            blob.unlink()
    await asyncio.to_thread(extraction.finish, str(manifest.reference))


def read_images_lock(directory: Path, ref: Reference) -> ImagesLock:
    """The bundle's `.imgpkg/images.yml` in `directory` (a real directory and a regular file, not symlinks)."""
    where = f"{IMGPKG_DIR}/{IMAGES_LOCK}"
    path = directory / IMGPKG_DIR / IMAGES_LOCK
    try:
        folder, info = os.lstat(directory / IMGPKG_DIR), os.lstat(path)
    except FileNotFoundError:
        raise OciError(f"{ref}: the bundle has no {where}") from None
    if not stat.S_ISDIR(folder.st_mode) or not stat.S_ISREG(info.st_mode):
        raise OciError(f"{ref}: the bundle's {where} is not a regular file in a directory")
    if info.st_size > LOCK_MAX_BYTES:
        raise OciError(f"{ref}: the bundle's {where} is more than {LOCK_MAX_BYTES} bytes")
    return parse_images_lock(path.read_bytes(), f"{ref} {where}")


def parse_images_lock(data: bytes, source: str) -> ImagesLock:
    """An ImagesLock document; every image must be a digest reference."""
    document = yamlio.load_mapping(data, source, OciError)

    def bad(why: str) -> OciError:
        return OciError(f"Reading {source}: {why}")

    if document.get("apiVersion") != LOCK_API_VERSION or document.get("kind") != LOCK_KIND:
        raise bad(f"expected apiVersion {LOCK_API_VERSION} and kind {LOCK_KIND}")
    entries = document.get("images") or []
    if not isinstance(entries, list):
        raise bad("expected `images` to be a list")
    images = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("image"), str):
            raise bad(f"images[{i}] has no `image`")
        if parse_reference(entry["image"]).digest is None:
            raise bad(f"images[{i}] ({shown(entry['image'])}) is not a digest reference")
        annotations = entry.get("annotations") or {}
        if not isinstance(annotations, dict) or not all(isinstance(v, str) for v in annotations.values()):
            raise bad(f"images[{i}] has annotations that are not strings")
        images.append(LockedImage(entry["image"], annotations))
    return ImagesLock(tuple(images))


async def _relocated(client: RegistryClient, lock: ImagesLock, bundle: Reference) -> ImagesLock | None:
    """The lock with each image in the bundle's repository, when every one of them is there; else None."""
    moved = []
    for locked in lock.images:
        digest = parse_reference(locked.image).digest
        assert digest is not None
        candidate = bundle.pinned(digest)
        if not await client.exists(candidate):
            return None
        moved.append(LockedImage(str(candidate), locked.annotations))
    return ImagesLock(tuple(moved))


def _write_images_lock(directory: Path, lock: ImagesLock) -> None:
    """Replace the fetched lock (a regular file: read_images_lock checked) with `lock`, through a new file."""
    path = directory / IMGPKG_DIR / IMAGES_LOCK
    fd, staged = tempfile.mkstemp(dir=path.parent, prefix=".images-", suffix=".yml")
    with os.fdopen(fd, "w") as out:
        out.write(yaml.safe_dump(lock.document(), sort_keys=False, default_flow_style=False))
    os.chmod(staged, 0o644)
    os.replace(staged, path)
