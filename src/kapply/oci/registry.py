"""A Docker Registry HTTP API v2 client for pulling: manifests, image configs and layers, over aiohttp (kapply's HTTP
stack; docs/design.md says why not oras-py).

- Manifests are asked for as OCI image manifests, OCI indexes, Docker v2 schema 2 manifests or manifest lists. From an
  index, `manifest()` picks the image of the platform it is given (linux/amd64 by default), or refuses an index when
  given none (imgpkg's rule for `imgpkg pull`: "provide a specific digest to the image instead").
- Everything is checked against its sha256 digest before it is used: a manifest against the digest that named it (and
  the registry's `Docker-Content-Digest`), a config or layer against its descriptor (digest and size). A mismatch is
  refused. Other digest algorithms are refused too, since they could not be checked.
- Sizes are bounded (`Limits`): manifests and configs are read into memory up to 4 MiB (the limit of the reference
  registry, distribution), layers are streamed to a file and stopped at their descriptor's size. Every body is read
  at a minimum rate (`Limits.min_rate`, kapply.oci.transfer): a registry that trickles is stopped.
- Authentication: anonymous, then whatever a 401's `WWW-Authenticate` asks for: `Basic` with the credentials for
  the registry, or `Bearer`: a token from the challenge's realm for its service and scope (pull), fetched with the
  credentials (basic) when there are some, anonymously otherwise. A registry token given as credentials is sent as
  the bearer token. The answer is reused for the repository until the registry asks again.
- Transport: https always, except `plain_http` for registries on this machine (localhost, 127.0.0.1, [::1]), as
  kapp-controller's insecure registries; a token realm or a redirect may not downgrade to http elsewhere. Redirects
  (registries send blobs to a CDN) are followed by hand, at most 5, and credentials are not sent to another host.
  Proxies come from HTTPS_PROXY/HTTP_PROXY/NO_PROXY, never for loopback, as Go's http.ProxyFromEnvironment.
- Responses are never decompressed in transit (`Accept-Encoding: identity`), so digests are of what was served.
"""

from __future__ import annotations

import base64
import hashlib
import json
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlencode
from urllib.request import getproxies, proxy_bypass

import yarl

from kapply.http import ANYWHERE, Destinations, aiohttp, guarded_connector
from kapply.oci.auth import ANONYMOUS, Credentials, RegistryAuth
from kapply.oci.errors import OciError, shown
from kapply.oci.reference import LOOPBACK_HOSTS, SHA256_DIGEST, Reference
from kapply.oci.transfer import MinRate, TooSlow, paced

USER_AGENT = "kapply"
MAX_REDIRECTS = 5
CHUNK = 1 << 16
ERROR_BODY_MAX = 1 << 16  # of a failed response, read for its error codes
TOKEN_MAX = 1 << 20  # a token response
MAX_TAGS = 100_000  # of one repository, all pages of its tag list together
CONNECT_TIMEOUT = 30.0  # seconds
READ_TIMEOUT = 60.0  # seconds without a byte


class MediaType(StrEnum):
    OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
    OCI_INDEX = "application/vnd.oci.image.index.v1+json"
    DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
    DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"


ACCEPT = ", ".join(MediaType)
IMAGE_MANIFESTS = frozenset({MediaType.OCI_MANIFEST, MediaType.DOCKER_MANIFEST})
INDEXES = frozenset({MediaType.OCI_INDEX, MediaType.DOCKER_LIST})
# imgpkg's rule for whether an image is there: anything else is an error
ABSENT = frozenset({401, 403, 404})


@dataclass(frozen=True, slots=True)
class Limits:
    max_manifest_bytes: int = 4 << 20  # a manifest, an index or an image config
    max_blob_bytes: int = 1 << 30  # one layer, as served (compressed)
    max_layers: int = 256
    min_rate: MinRate = MinRate()  # of every body read: a manifest, a tag list, a token, a config, a layer


@dataclass(frozen=True, slots=True)
class Platform:
    os: str
    architecture: str
    variant: str = ""

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)


LINUX_AMD64 = Platform("linux", "amd64")


@dataclass(frozen=True, slots=True)
class Descriptor:
    media_type: str
    digest: str
    size: int


@dataclass(frozen=True, slots=True)
class Manifest:
    """An image manifest, checked against its digest. `reference` names the image by that digest."""

    reference: Reference
    media_type: str
    config: Descriptor
    layers: tuple[Descriptor, ...]


@dataclass(frozen=True, slots=True)
class Challenge:
    """A `WWW-Authenticate` challenge: its scheme (lower case) and parameters (names lower case)."""

    scheme: str
    params: Mapping[str, str]


def parse_challenge(header: str) -> Challenge:
    """`Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull"` and the
    like (RFC 7235 auth-params: token or quoted-string values, comma separated)."""
    scheme, _, rest = header.strip().partition(" ")
    params: dict[str, str] = {}
    i = 0
    while i < len(rest):
        while i < len(rest) and rest[i] in " ,":
            i += 1
        eq = rest.find("=", i)
        if eq == -1:
            break
        name = rest[i:eq].strip().lower()
        i = eq + 1
        if i < len(rest) and rest[i] == '"':
            i += 1
            value = []
            while i < len(rest) and rest[i] != '"':
                if rest[i] == "\\" and i + 1 < len(rest):
                    i += 1
                value.append(rest[i])
                i += 1
            i += 1  # the closing quote
            params[name] = "".join(value)
        else:
            end = rest.find(",", i)
            end = len(rest) if end == -1 else end
            params[name] = rest[i:end].strip()
            i = end
    return Challenge(scheme.lower(), params)


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class _Unauthorized(OciError):
    """A 401 that no credentials given could answer."""


class RegistryClient:
    """Pulls from registries; use `async with RegistryClient(...) as client:`. One client may talk to several
    registries, each with the credentials `auth` gives for it."""

    def __init__(
        self,
        auth: RegistryAuth = ANONYMOUS,
        *,
        plain_http: bool = False,
        tls: ssl.SSLContext | None = None,
        limits: Limits = Limits(),
        destinations: Destinations = ANYWHERE,
    ) -> None:
        """`tls`: the context https uses (e.g. trusting a registry's CA, as kapp-controller's `caCerts`); default:
        the system's trust store, certificates verified. `destinations`: the addresses it may connect to (an App's
        pull: not the controller's own machine)."""
        self.auth = auth
        self.plain_http = plain_http
        self.tls = tls
        self.limits = limits
        self.destinations = destinations
        self._session: aiohttp.ClientSession | None = None
        self._authorization: dict[tuple[str, str], str] = {}  # (host, repository) -> the Authorization that worked

    async def __aenter__(self) -> RegistryClient:
        self._session = aiohttp.ClientSession(
            connector=guarded_connector(self.destinations, ssl=self.tls if self.tls is not None else True),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT),
            headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity"},
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
        )
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- what callers ask for ----------------------------------------------------------------------------------------

    async def manifest(self, ref: Reference, platform: Platform | None = LINUX_AMD64) -> Manifest:
        """The image manifest `ref` names; from an index, the image for `platform` (an index is refused without)."""
        media_type, document, digest = await self._manifest_document(ref)
        if media_type in INDEXES:
            if platform is None:
                raise OciError(
                    f"{ref} is an image index (a multi-platform image); "
                    "name one of its images by digest (repository@sha256:...)"
                )
            chosen = _choose(ref, document, platform)
            media_type, document, digest = await self._manifest_document(ref.pinned(chosen))
            if media_type in INDEXES:
                raise OciError(f"{ref}: the {platform} entry of the index is an index itself; that is not supported")
        return self._image_manifest(ref.pinned(digest), media_type, document)

    async def tags(self, ref: Reference) -> list[str]:
        """The tags of `ref`'s repository (`GET /v2/<repository>/tags/list`), page after page as long as the registry
        links a next one (`Link: <...?last=...>; rel="next"`), at most MAX_TAGS."""
        repository = replace(ref, tag=None, digest=None)  # messages name the repository
        tags: list[str] = []
        query = ""
        while True:
            async with self._request(repository, "GET", f"tags/list{query}") as response:
                if response.status != 200:
                    raise await _failure(repository, "listing tags", response)
                body = await _read(repository, response, self.limits, self.limits.max_manifest_bytes, "the tag list")
                link = response.headers.get("Link", "")
            try:
                page = json.loads(body).get("tags") or []
            except (ValueError, AttributeError):
                raise OciError(f"{repository}: the tag list is not a JSON object") from None
            if not isinstance(page, list) or not all(isinstance(tag, str) for tag in page):
                raise OciError(f"{repository}: the tag list's `tags` is not a list of strings")
            tags.extend(page)
            if len(tags) > MAX_TAGS:
                raise OciError(f"{repository}: more than {MAX_TAGS} tags")
            following = _next_page(link)
            if not page or following is None:
                return tags
            query = f"?{following}"

    async def exists(self, ref: Reference) -> bool:
        """Whether the registry has the manifest `ref` names (absent also when access to it is refused, as imgpkg
        decides whether a bundle's images were copied with it)."""
        try:
            async with self._request(ref, "HEAD", f"manifests/{ref.identifier}", ACCEPT) as response:
                if response.status in ABSENT:
                    return False
                if response.status != 200:
                    raise await _failure(ref, "checking for the image", response)
                return True
        except _Unauthorized:
            return False

    async def blob(self, ref: Reference, descriptor: Descriptor) -> bytes:
        """A small blob (an image config) in memory, checked against its descriptor."""
        limit = self.limits.max_manifest_bytes
        if descriptor.size > limit:
            raise OciError(f"{ref}: blob {descriptor.digest} is {descriptor.size} bytes, more than {limit}")
        async with self._request(ref, "GET", f"blobs/{descriptor.digest}") as response:
            if response.status != 200:
                raise await _failure(ref, f"fetching blob {descriptor.digest}", response)
            data = await _read(ref, response, self.limits, descriptor.size, f"blob {descriptor.digest}")
        _check_blob(ref, descriptor, len(data), sha256_digest(data))
        return data

    async def download(self, ref: Reference, descriptor: Descriptor, path: Path) -> None:
        """A blob (a layer) streamed into a new file at `path`, checked against its descriptor; the file is removed
        when the check fails."""
        async with self._request(ref, "GET", f"blobs/{descriptor.digest}") as response:
            if response.status != 200:
                raise await _failure(ref, f"fetching blob {descriptor.digest}", response)
            _check_length(ref, response, descriptor.size, f"blob {descriptor.digest}")
            digest = hashlib.sha256()
            size = 0
            try:
                with open(path, "xb") as out:
                    async for chunk in paced(response.content, self.limits.min_rate, CHUNK):
                        size += len(chunk)
                        if size > descriptor.size:
                            raise _too_long(ref, f"blob {descriptor.digest}", descriptor.size)
                        digest.update(chunk)
                        out.write(chunk)
                _check_blob(ref, descriptor, size, "sha256:" + digest.hexdigest())
            except TooSlow as e:
                path.unlink(missing_ok=True)
                raise OciError(f"{ref}: blob {descriptor.digest}: {e}") from None
            except BaseException:
                path.unlink(missing_ok=True)
                raise

    # --- manifests ---------------------------------------------------------------------------------------------------

    async def _manifest_document(self, ref: Reference) -> tuple[str, dict[str, Any], str]:
        """(media type, the parsed document, its digest) of the manifest `ref` names, checked against its digest."""
        async with self._request(ref, "GET", f"manifests/{ref.identifier}", ACCEPT) as response:
            if response.status == 404:
                raise await _failure(ref, "not found", response)
            if response.status != 200:
                raise await _failure(ref, "fetching the manifest", response)
            body = await _read(ref, response, self.limits, self.limits.max_manifest_bytes, "the manifest")
            served_digest = response.headers.get("Docker-Content-Digest", "")
            content_type = response.headers.get("Content-Type", "").split(";")[0].strip()
        digest = sha256_digest(body)
        if ref.digest is not None and digest != ref.digest:
            raise OciError(f"{ref}: the registry served a manifest whose digest is {digest}; refusing it")
        if served_digest.startswith("sha256:") and served_digest != digest:
            raise OciError(
                f"{ref}: the manifest's digest is {digest}, but the registry says {shown(served_digest)}; refusing it"
            )
        try:
            document = json.loads(body)
        except ValueError:
            raise OciError(f"{ref}: the manifest is not JSON") from None
        if not isinstance(document, dict):
            raise OciError(f"{ref}: the manifest is not a JSON object")
        media_type = document.get("mediaType") or content_type
        if media_type not in IMAGE_MANIFESTS | INDEXES:
            raise OciError(
                f"{ref}: unsupported manifest type {shown(str(media_type))} "
                "(expected an OCI image manifest or index, or a Docker v2 schema 2 manifest or manifest list)"
            )
        return media_type, document, digest

    def _image_manifest(self, ref: Reference, media_type: str, document: dict[str, Any]) -> Manifest:
        config = _descriptor(ref, document.get("config"), "config")
        if config.size > self.limits.max_manifest_bytes:
            raise OciError(
                f"{ref}: the image config is {config.size} bytes, more than {self.limits.max_manifest_bytes}"
            )
        layers = document.get("layers")
        if not isinstance(layers, list):
            raise OciError(f"{ref}: the manifest has no list of layers")
        if len(layers) > self.limits.max_layers:
            raise OciError(f"{ref}: the image has {len(layers)} layers, more than {self.limits.max_layers}")
        descriptors = tuple(_descriptor(ref, layer, f"layer {i + 1}") for i, layer in enumerate(layers))
        for i, layer in enumerate(descriptors):
            if layer.size > self.limits.max_blob_bytes:
                raise OciError(f"{ref}: layer {i + 1} is {layer.size} bytes, more than {self.limits.max_blob_bytes}")
        return Manifest(ref, media_type, config, descriptors)

    # --- requests, authentication, redirects -------------------------------------------------------------------------

    def _scheme(self, ref: Reference) -> str:
        if not self.plain_http:
            return "https"
        if not ref.is_loopback:
            raise OciError(f"{ref}: plain http is allowed only for registries on localhost, 127.0.0.1 or [::1]")
        return "http"

    @asynccontextmanager
    async def _request(
        self,
        ref: Reference,
        method: str,
        path: str,
        accept: str | None = None,
        *,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """The response to `method` /v2/<repository>/<path> (with `body`, of `content_type`, when pushing: the
        registry's push API is kapply.oci.push), after answering the registry's challenge once; raises
        _Unauthorized when no credentials given can answer it."""
        url = yarl.URL(f"{self._scheme(ref)}://{ref.api_host}/v2/{ref.repository}/{path}", encoded=True)
        key = (ref.api_host, ref.repository)
        credentials = self.auth.for_registry(ref.registry)
        authorization = self._authorization.get(key)
        if authorization is None and credentials is not None and credentials.token:
            authorization = f"Bearer {credentials.token}"
        for attempt in range(2):
            headers = {"Accept": accept} if accept else {}
            if content_type is not None:
                headers["Content-Type"] = content_type
            if authorization is not None:
                headers["Authorization"] = authorization
            response = await self._send(ref, method, url, headers, body)
            try:
                if response.status != 401:
                    yield response
                    return
                challenge = parse_challenge(response.headers.get("WWW-Authenticate", ""))
            finally:
                response.release()
            if attempt == 1 or (credentials is not None and credentials.token):
                break
            authorization = await self._answer(ref, challenge, credentials)
            self._authorization[key] = authorization
        if credentials is None:
            raise _Unauthorized(f"{ref}: the registry requires credentials (401 Unauthorized); none were given")
        raise _Unauthorized(f"{ref}: the registry refused the credentials given for {ref.registry} (401 Unauthorized)")

    async def _answer(self, ref: Reference, challenge: Challenge, credentials: Credentials | None) -> str:
        """The Authorization header that answers `challenge`."""
        if challenge.scheme == "basic":
            if credentials is None:
                raise _Unauthorized(f"{ref}: the registry requires credentials (401 Unauthorized); none were given")
            pair = f"{credentials.username}:{credentials.password}".encode()
            return "Basic " + base64.b64encode(pair).decode()
        if challenge.scheme != "bearer" or not challenge.params.get("realm"):
            raise OciError(f"{ref}: the registry asks for authentication kapply does not support ({challenge.scheme})")
        realm = yarl.URL(challenge.params["realm"])
        if not self._may_use(realm, from_loopback=ref.is_loopback):
            raise OciError(f"{ref}: the registry's token service is not https; refusing to use it")
        query = {"scope": challenge.params.get("scope") or f"repository:{ref.repository}:pull"}
        if challenge.params.get("service"):
            query["service"] = challenge.params["service"]
        url = realm.update_query(query)
        headers = {}
        if credentials is not None and credentials.username:
            pair = f"{credentials.username}:{credentials.password}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        response = await self._send(ref, "GET", url, headers)
        try:
            if response.status in (401, 403):
                who = "the credentials given" if headers else "anonymous access"
                raise _Unauthorized(f"{ref}: the registry's token service refused {who} ({response.status})")
            if response.status != 200:
                raise await _failure(ref, "fetching a token", response)
            body = await _read(ref, response, self.limits, TOKEN_MAX, "the token")
        finally:
            response.release()
        try:
            answer = json.loads(body)
            token = answer.get("token") or answer.get("access_token")
        except (ValueError, AttributeError):
            token = None
        if not isinstance(token, str) or not token:
            raise OciError(f"{ref}: the registry's token service answered without a token")
        return f"Bearer {token}"

    def _may_use(self, url: yarl.URL, from_loopback: bool) -> bool:
        """https anywhere; http only to loopback, from a loopback registry asked for over plain http."""
        if url.scheme == "https":
            return True
        return url.scheme == "http" and self.plain_http and from_loopback and _loopback(url)

    async def _send(
        self, ref: Reference, method: str, url: yarl.URL, headers: dict[str, str], body: bytes | None = None
    ) -> aiohttp.ClientResponse:
        """One request, its redirects followed: never to a downgraded scheme, and with no Authorization for another
        host than the one it was meant for."""
        assert self._session is not None, "RegistryClient is used outside `async with`"
        origin = url.origin()
        for _ in range(MAX_REDIRECTS + 1):
            sent = headers if url.origin() == origin else {k: v for k, v in headers.items() if k != "Authorization"}
            try:
                self.destinations.check_literal(url.host or "")
            except OSError as e:
                raise OciError(f"{ref}: {e.strerror}") from None
            try:
                response = await self._session.request(
                    method, url, headers=sent, data=body, allow_redirects=False, proxy=_proxy(url)
                )
            except (aiohttp.ClientError, TimeoutError) as e:
                raise OciError(f"{ref}: cannot reach {url.host}: {type(e).__name__}: {shown(str(e), 200)}") from None
            location = response.headers.get("Location")
            if response.status not in (301, 302, 303, 307, 308) or location is None:
                return response
            response.release()
            target = url.join(yarl.URL(location))
            if not self._may_use(target, from_loopback=_loopback(url)):
                raise OciError(f"{ref}: the registry redirected to a non-https URL; refusing to follow it")
            url = target
            if response.status == 303:
                method = "GET"
        raise OciError(f"{ref}: more than {MAX_REDIRECTS} redirects")


# --- helpers --------------------------------------------------------------------------------------------------------


def _loopback(url: yarl.URL) -> bool:
    host = url.host or ""
    return host in LOOPBACK_HOSTS or f"[{host}]" in LOOPBACK_HOSTS


def _next_page(link: str) -> str | None:
    """The query (`n`, `last`) of the next page a tag list's `Link` header names, encoded; None without one. Only
    the query is taken: the next page is always asked of the same repository."""
    target, _, params = link.partition(";")
    if not target.strip().startswith("<") or not any(
        p.replace(" ", "").replace('"', "") == "rel=next" for p in params.split(";")
    ):
        return None
    query = yarl.URL(target.strip().strip("<>")).query
    kept = {key: query[key] for key in ("n", "last") if key in query}
    return urlencode(kept) if "last" in kept else None


def _proxy(url: yarl.URL) -> str | None:
    host = url.host or ""
    if _loopback(url) or proxy_bypass(host):
        return None
    return getproxies().get(url.scheme)


def _choose(ref: Reference, index: dict[str, Any], platform: Platform) -> str:
    """The digest of the index's image for `platform` (the first that matches; a variant only when asked for)."""
    entries = index.get("manifests")
    if not isinstance(entries, list):
        raise OciError(f"{ref}: the image index has no list of manifests")
    offered = []
    for entry in entries:
        described = entry.get("platform") if isinstance(entry, dict) else None
        if not isinstance(described, dict):
            continue
        found = Platform(
            str(described.get("os", "")), str(described.get("architecture", "")), str(described.get("variant", ""))
        )
        offered.append(str(found))
        if (found.os, found.architecture) == (platform.os, platform.architecture) and (
            not platform.variant or found.variant == platform.variant
        ):
            digest = entry.get("digest")
            if not isinstance(digest, str) or not SHA256_DIGEST.fullmatch(digest):
                raise OciError(f"{ref}: the index's {platform} entry has no sha256 digest")
            return digest
    listing = ", ".join(shown(p, 40) for p in offered) or "none"
    raise OciError(f"{ref}: the image index has no image for {platform} (platforms: {listing})")


def _descriptor(ref: Reference, value: Any, what: str) -> Descriptor:
    if not isinstance(value, dict):
        raise OciError(f"{ref}: the manifest's {what} is not a descriptor")
    digest, size, media_type = value.get("digest"), value.get("size"), value.get("mediaType", "")
    if not isinstance(digest, str) or not SHA256_DIGEST.fullmatch(digest):
        raise OciError(f"{ref}: the manifest's {what} has no sha256 digest (only sha256 is supported)")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise OciError(f"{ref}: the manifest's {what} has no valid size")
    if not isinstance(media_type, str):
        raise OciError(f"{ref}: the manifest's {what} has no valid media type")
    return Descriptor(media_type, digest, size)


def _too_long(ref: Reference, what: str, limit: int) -> OciError:
    return OciError(f"{ref}: {what} is longer than {limit} bytes; refusing it")


def _check_length(ref: Reference, response: aiohttp.ClientResponse, limit: int, what: str) -> None:
    if response.content_length is not None and response.content_length > limit:
        raise _too_long(ref, what, limit)


async def _read(ref: Reference, response: aiohttp.ClientResponse, limits: Limits, limit: int, what: str) -> bytes:
    """The body, refused past `limit` bytes whatever Content-Length says, or slower than the limits' minimum
    rate."""
    _check_length(ref, response, limit, what)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in paced(response.content, limits.min_rate, CHUNK):
            size += len(chunk)
            if size > limit:
                raise _too_long(ref, what, limit)
            chunks.append(chunk)
    except TooSlow as e:
        raise OciError(f"{ref}: {what}: {e}") from None
    return b"".join(chunks)


def _check_blob(ref: Reference, descriptor: Descriptor, size: int, digest: str) -> None:
    """A blob read whole (never longer than its descriptor's size: reading stopped there) against its descriptor."""
    if size != descriptor.size:
        raise OciError(
            f"{ref}: blob {descriptor.digest} is {size} bytes, not the {descriptor.size} its descriptor says; "
            "refusing it"
        )
    if digest != descriptor.digest:
        raise OciError(f"{ref}: blob {descriptor.digest} has the digest {digest}; refusing it")


async def _failure(ref: Reference, doing: str, response: aiohttp.ClientResponse) -> OciError:
    """An error for a response that is not the one expected: its status and the registry's error codes (not their
    messages, which are the registry's text)."""
    codes: list[str] = []
    try:
        body = await response.content.read(ERROR_BODY_MAX)
        errors = json.loads(body).get("errors")
        codes = [str(e["code"]) for e in errors if isinstance(e, dict) and isinstance(e.get("code"), str)]
    except (ValueError, AttributeError, TypeError, aiohttp.ClientError, TimeoutError):
        pass
    answered = " ".join([str(response.status), *(shown(c, 40).strip("'") for c in codes[:3])])
    return OciError(f"{ref}: {doing} (the registry answered {answered})")
