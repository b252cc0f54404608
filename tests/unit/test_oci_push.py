"""kapply.oci.push against an in-process registry: blobs uploaded only when missing (a POST, then a PUT of the bytes
at the upload's location with their digest), then the manifest at the tag; what a registry says back is checked.
Pushing to the real registry (`crane registry serve`) and reading the bundle back with imgpkg is
tests/compat/test_kctrl_authoring.py."""

from __future__ import annotations

import asyncio
import hashlib

import pytest
from aiohttp import web

from kapply.oci import OciError, RegistryClient, parse_reference
from kapply.oci.push import Blob, push_image, tagged
from tests.unit.test_oci_registry import Fake, serving

MANIFEST = b'{"schemaVersion":2}'
MEDIA_TYPE = "application/vnd.docker.distribution.manifest.v2+json"


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class Store:
    """The fake registry's repository `team/bundle`: its blobs and tagged manifests."""

    def __init__(self, *, location: str = "/v2/team/bundle/blobs/uploads/u1?_state=s", said: str = "") -> None:
        self.blobs: dict[str, bytes] = {}
        self.manifests: dict[str, tuple[str, bytes]] = {}
        self.location = location
        self.said = said  # a Docker-Content-Digest to answer with instead of the manifest's

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path.removeprefix("/v2/team/bundle/")
        if request.method == "HEAD" and path.startswith("blobs/sha256:"):
            return web.Response(status=200 if path.removeprefix("blobs/") in self.blobs else 404)
        if request.method == "POST" and path == "blobs/uploads/":
            return web.Response(status=202, headers={"Location": self.location})
        if request.method == "PUT" and path == "blobs/uploads/u1":
            assert request.query["_state"] == "s", "the location's query is kept"
            data = await request.read()
            if digest(data) != request.query["digest"]:
                return web.json_response({"errors": [{"code": "DIGEST_INVALID"}]}, status=400)
            self.blobs[request.query["digest"]] = data
            return web.Response(status=201)
        if request.method == "PUT" and path.startswith("manifests/"):
            data = await request.read()
            self.manifests[path.removeprefix("manifests/")] = (request.headers["Content-Type"], data)
            return web.Response(status=201, headers={"Docker-Content-Digest": self.said or digest(data)})
        return web.json_response({"errors": [{"code": "UNSUPPORTED"}]}, status=405)


class Recorder(Fake):
    """test_oci_registry's fake, answering as `store`."""

    def __init__(self, store: Store) -> None:
        super().__init__({})
        self.store = store

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.method, request.path, None))
        return await self.store.handle(request)


def push(store: Store, blobs: list[Blob]) -> tuple[str, list[tuple[str, str, str | None]]]:
    async def go() -> tuple[str, list[tuple[str, str, str | None]]]:
        fake = Recorder(store)
        async with serving(fake) as host, RegistryClient(plain_http=True) as client:
            ref = tagged(parse_reference(f"{host}/team/bundle"), "1.0.0")
            pushed = await push_image(client, ref, MANIFEST, MEDIA_TYPE, blobs)
        return pushed, fake.seen

    return asyncio.run(go())


def test_blobs_then_the_manifest_are_pushed() -> None:
    store = Store()
    layer, config = Blob("layer", b"layer bytes"), Blob("config", b"{}")
    pushed, seen = push(store, [layer, config])
    assert pushed == digest(MANIFEST)
    assert store.blobs == {layer.digest: b"layer bytes", config.digest: b"{}"}
    assert store.manifests == {"1.0.0": (MEDIA_TYPE, MANIFEST)}
    assert [method for method, _, _ in seen] == ["HEAD", "POST", "PUT", "HEAD", "POST", "PUT", "PUT"]


def test_a_blob_the_registry_has_is_not_uploaded_again() -> None:
    store = Store()
    store.blobs[digest(b"{}")] = b"{}"
    _, seen = push(store, [Blob("config", b"{}")])
    assert [method for method, _, _ in seen] == ["HEAD", "PUT"]


def test_what_the_registry_says_back_is_checked() -> None:
    with pytest.raises(OciError, match="stored the manifest as sha256:0+, not as its digest"):
        push(Store(said="sha256:" + "0" * 64), [])
    with pytest.raises(OciError, match="upload location on another host or scheme"):
        push(Store(location="http://elsewhere.example/v2/team/bundle/blobs/uploads/u1"), [Blob("b", b"x")])
    with pytest.raises(OciError, match="starting a blob upload \\(the registry answered 405 UNSUPPORTED\\)"):
        push(Refusing(), [Blob("b", b"x")])


class Refusing(Store):
    """A registry that takes no uploads."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.method == "POST":
            return web.json_response({"errors": [{"code": "UNSUPPORTED"}]}, status=405)
        return await super().handle(request)


def test_pushing_needs_a_tag() -> None:
    ref = parse_reference("127.0.0.1:5000/team/bundle@sha256:" + "1" * 64)

    async def go() -> None:
        async with RegistryClient(plain_http=True) as client:
            await push_image(client, ref, MANIFEST, MEDIA_TYPE, [])

    with pytest.raises(OciError, match="pushing needs a tag"):
        asyncio.run(go())
