"""Pushing an image to a registry (the Docker Registry HTTP API v2's push side), as `kapply package release` and
`kapply package repository release` push their imgpkg bundles (kapply.oci.imgpkg builds them):

- each blob (the layers, then the config) is first looked for (`HEAD /v2/<repository>/blobs/<digest>`) and uploaded
  only when missing, in one piece: `POST /v2/<repository>/blobs/uploads/` opens an upload, whose `Location` (on the
  same registry: anything else is refused) is then `PUT` with `?digest=` and the bytes;
- then the manifest is `PUT` at the tag (`/v2/<repository>/manifests/<tag>`); the registry's `Docker-Content-Digest`
  must be the manifest's own digest.

Authentication, plain http for loopback registries and proxies are kapply.oci.registry's `RegistryClient`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import yarl

from kapply.oci.errors import OciError
from kapply.oci.reference import Reference
from kapply.oci.registry import RegistryClient, _failure, sha256_digest


@dataclass(frozen=True, slots=True)
class Blob:
    media_type: str
    data: bytes

    @property
    def digest(self) -> str:
        return sha256_digest(self.data)


async def push_image(
    client: RegistryClient, ref: Reference, manifest: bytes, media_type: str, blobs: Sequence[Blob]
) -> str:
    """Push `blobs` and then `manifest` (of `media_type`) to `ref`'s tag; the manifest's digest."""
    if ref.tag is None:
        raise OciError(f"{ref}: pushing needs a tag")
    for blob in blobs:
        await _push_blob(client, ref, blob)
    digest = sha256_digest(manifest)
    async with client._request(ref, "PUT", f"manifests/{ref.tag}", body=manifest, content_type=media_type) as response:
        if response.status not in (200, 201):
            raise await _failure(ref, "pushing the manifest", response)
        said = response.headers.get("Docker-Content-Digest")
    if said is not None and said != digest:
        raise OciError(f"{ref}: the registry stored the manifest as {said}, not as its digest {digest}")
    return digest


async def _push_blob(client: RegistryClient, ref: Reference, blob: Blob) -> None:
    async with client._request(ref, "HEAD", f"blobs/{blob.digest}") as response:
        if response.status == 200:
            return
    async with client._request(ref, "POST", "blobs/uploads/") as response:
        if response.status != 202:
            raise await _failure(ref, "starting a blob upload", response)
        location = response.headers.get("Location", "")
    path = upload_path(ref, location, client.plain_http)
    separator = "&" if "?" in path else "?"
    target = f"{path}{separator}digest={blob.digest}"
    async with client._request(ref, "PUT", target, body=blob.data, content_type="application/octet-stream") as response:
        if response.status not in (201, 204):
            raise await _failure(ref, f"uploading blob {blob.digest}", response)


def upload_path(ref: Reference, location: str, plain_http: bool) -> str:
    """The part after /v2/<repository>/ of the upload URL a registry gave (relative, or absolute on the same
    registry), with its query: what `RegistryClient._request` is asked for."""
    url = yarl.URL(location, encoded=True)
    if url.is_absolute():
        scheme = "http" if plain_http else "https"
        if url.scheme != scheme or url.raw_authority != ref.api_host:
            raise OciError(f"{ref}: the registry gave an upload location on another host or scheme; refusing it")
    prefix = f"/v2/{ref.repository}/"
    if not url.raw_path.startswith(prefix):
        raise OciError(f"{ref}: the registry gave an upload location outside the repository; refusing it")
    rest = url.raw_path.removeprefix(prefix)
    return f"{rest}?{url.raw_query_string}" if url.raw_query_string else rest


def tagged(ref: Reference, tag: str) -> Reference:
    """`ref`'s repository at `tag` (what a release pushes to)."""
    return replace(ref, tag=tag, digest=None)
