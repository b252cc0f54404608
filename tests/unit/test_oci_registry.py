"""The registry client against an in-process fake, for what a real registry does not do: serve content that does not
match its digest or its size, redirect elsewhere, ask for authentication over plain http, or answer with more than
it should. What a real registry does (manifests, indexes, blobs, basic and bearer authentication) is tested against
`crane registry serve` in tests/e2e/test_oci.py."""

from __future__ import annotations

import asyncio
import hashlib
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from aiohttp import web

from kapply.oci import Credentials, Limits, OciError, RegistryAuth, RegistryClient, parse_reference
from kapply.oci.registry import Descriptor, MediaType, parse_challenge

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


CONFIG = b'{"architecture":"amd64","os":"linux","config":{}}'
LAYER = b"not really a tar, the client does not look"


def manifest_of(config: bytes = CONFIG, layers: tuple[bytes, ...] = (LAYER,), **extra: Any) -> bytes:
    document = {
        "schemaVersion": 2,
        "mediaType": MediaType.OCI_MANIFEST.value,
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": digest_of(config),
            "size": len(config),
        },
        "layers": [
            {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest_of(layer), "size": len(layer)}
            for layer in layers
        ],
        **extra,
    }
    return json.dumps(document).encode()


class Fake:
    """A registry: `routes` maps a path to its handler; `seen` records (method, path, Authorization)."""

    def __init__(self, routes: dict[str, Handler]) -> None:
        self.routes = routes
        self.seen: list[tuple[str, str, str | None]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.method, request.path, request.headers.get("Authorization")))
        handler = self.routes.get(request.path)
        if handler is None:
            return web.json_response({"errors": [{"code": "NAME_UNKNOWN", "message": "no"}]}, status=404)
        return await handler(request)


@asynccontextmanager
async def serving(fake: Fake, tls: ssl.SSLContext | None = None) -> AsyncIterator[str]:
    """The fake on 127.0.0.1; yields its host:port."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", fake.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def body(data: bytes, status: int = 200, **headers: str) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=data, status=status, headers=headers)

    return handler


def streamed(data: bytes) -> Handler:
    """Chunked, with no Content-Length: only the bytes themselves can tell their size."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(data), 1000):
            await response.write(data[start : start + 1000])
        return response

    return handler


def redirect(location: str) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        raise web.HTTPTemporaryRedirect(location)

    return handler


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def image_routes(manifest: bytes = manifest_of(), config: bytes = CONFIG, layer: bytes = LAYER) -> dict[str, Handler]:
    return {
        "/v2/app/manifests/v1": body(manifest, **{"Content-Type": MediaType.OCI_MANIFEST.value}),
        f"/v2/app/blobs/{digest_of(CONFIG)}": body(config),
        f"/v2/app/blobs/{digest_of(LAYER)}": body(layer),
    }


async def pull_all(host: str, tmp_path: Path, **options: Any) -> bytes:
    """The manifest, config and layer of host/app:v1; the layer's bytes."""
    async with RegistryClient(plain_http=True, **options) as client:
        ref = parse_reference(f"{host}/app:v1")
        manifest = await client.manifest(ref)
        assert await client.blob(manifest.reference, manifest.config) == CONFIG
        await client.download(manifest.reference, manifest.layers[0], tmp_path / "layer")
        return (tmp_path / "layer").read_bytes()


def test_an_image_matching_its_digests_is_pulled(tmp_path: Path):
    async def go() -> None:
        fake = Fake(image_routes())
        async with serving(fake) as host:
            assert await pull_all(host, tmp_path) == LAYER
        assert [(method, path) for method, path, _ in fake.seen] == [
            ("GET", "/v2/app/manifests/v1"),
            ("GET", f"/v2/app/blobs/{digest_of(CONFIG)}"),
            ("GET", f"/v2/app/blobs/{digest_of(LAYER)}"),
        ]

    run(go())


def test_a_manifest_that_is_not_the_digest_asked_for_is_refused():
    async def go() -> None:
        served = manifest_of()
        asked = digest_of(manifest_of(layers=()))
        async with (
            serving(Fake({f"/v2/app/manifests/{asked}": body(served)})) as host,
            RegistryClient(plain_http=True) as client,
        ):
            ref = parse_reference(f"{host}/app@{asked}")
            with pytest.raises(OciError) as error:
                await client.manifest(ref)
        assert str(error.value) == (
            f"{ref}: the registry served a manifest whose digest is {digest_of(served)}; refusing it"
        )

    run(go())


def test_a_manifest_whose_docker_content_digest_disagrees_is_refused():
    async def go() -> None:
        lie = digest_of(b"something else")
        routes = {"/v2/app/manifests/v1": body(manifest_of(), **{"Docker-Content-Digest": lie})}
        async with serving(Fake(routes)) as host, RegistryClient(plain_http=True) as client:
            with pytest.raises(OciError, match=f"but the registry says '{lie}'; refusing it"):
                await client.manifest(parse_reference(f"{host}/app:v1"))

    run(go())


@pytest.mark.parametrize(
    ("config", "layer", "message"),
    [
        (CONFIG.replace(b"amd64", b"arm64"), LAYER, f"blob {digest_of(CONFIG)} has the digest"),
        (CONFIG, LAYER.upper(), f"blob {digest_of(LAYER)} has the digest"),
        (CONFIG, LAYER + b"!", f"blob {digest_of(LAYER)} is longer than {len(LAYER)} bytes; refusing it"),
        (CONFIG, LAYER[:-1], f"blob {digest_of(LAYER)} is {len(LAYER) - 1} bytes, not the {len(LAYER)} its descriptor"),
        (CONFIG + b" ", LAYER, f"blob {digest_of(CONFIG)} is longer than {len(CONFIG)} bytes; refusing it"),
    ],
)
def test_a_blob_that_is_not_its_descriptors_digest_or_size_is_refused_and_not_kept(
    tmp_path: Path, config, layer, message
):
    async def go() -> None:
        async with serving(Fake(image_routes(config=config, layer=layer))) as host:
            with pytest.raises(OciError) as error:
                await pull_all(host, tmp_path)
        assert message in str(error.value)
        assert not (tmp_path / "layer").exists()

    run(go())


@pytest.mark.parametrize("send", [body, streamed], ids=["content-length", "chunked"])
def test_a_manifest_over_the_limit_is_refused_before_it_is_read_whole(send):
    async def go() -> None:
        big = manifest_of(annotations={"padding": "x" * 5000})
        async with (
            serving(Fake({"/v2/app/manifests/v1": send(big)})) as host,
            RegistryClient(plain_http=True, limits=Limits(max_manifest_bytes=4096)) as client,
        ):
            with pytest.raises(OciError, match=r": the manifest is longer than 4096 bytes; refusing it$"):
                await client.manifest(parse_reference(f"{host}/app:v1"))

    run(go())


@pytest.mark.parametrize(
    ("manifest", "limits", "message"),
    [
        (manifest_of(layers=(LAYER, LAYER, LAYER)), Limits(max_layers=2), "the image has 3 layers, more than 2"),
        (manifest_of(), Limits(max_blob_bytes=10), f"layer 1 is {len(LAYER)} bytes, more than 10"),
        (manifest_of(), Limits(max_manifest_bytes=len(CONFIG) - 1 + 400), None),
        (
            json.dumps({"schemaVersion": 1, "name": "app", "tag": "v1", "fsLayers": []}).encode(),
            Limits(),
            "unsupported manifest type 'application/vnd.docker.distribution.manifest.v1\\+prettyjws'",
        ),
        (
            json.dumps(
                {"mediaType": MediaType.OCI_MANIFEST.value, "config": {"digest": "sha512:" + "a" * 128, "size": 1}}
            ).encode(),
            Limits(),
            "the manifest's config has no sha256 digest",
        ),
        (b"[]", Limits(), "the manifest is not a JSON object"),
    ],
)
def test_what_a_manifest_describes_is_bounded_and_checked(manifest, limits, message):
    async def go() -> None:
        content_type = "application/vnd.docker.distribution.manifest.v1+prettyjws" if b"fsLayers" in manifest else ""
        routes = {"/v2/app/manifests/v1": body(manifest, **({"Content-Type": content_type} if content_type else {}))}
        async with serving(Fake(routes)) as host, RegistryClient(plain_http=True, limits=limits) as client:
            if message is None:
                await client.manifest(parse_reference(f"{host}/app:v1"))
                return
            with pytest.raises(OciError, match=message):
                await client.manifest(parse_reference(f"{host}/app:v1"))

    run(go())


def test_a_failure_names_the_registrys_error_codes_but_not_its_messages():
    async def go() -> None:
        errors = {"errors": [{"code": "DENIED", "message": "internal detail /srv/secret"}]}
        routes = {"/v2/app/manifests/v1": body(json.dumps(errors).encode(), status=403)}
        async with serving(Fake(routes)) as host, RegistryClient(plain_http=True) as client:
            with pytest.raises(OciError) as error:
                await client.manifest(parse_reference(f"{host}/app:v1"))
        assert str(error.value) == f"{host}/app:v1: fetching the manifest (the registry answered 403 DENIED)"

    run(go())


def test_a_registry_that_cannot_be_reached_is_named():
    async def go() -> None:
        async with serving(Fake({})) as host:
            pass  # closed again: nothing listens there now
        async with RegistryClient(plain_http=True) as client:
            with pytest.raises(OciError, match=rf"^{host}/app:v1: cannot reach 127.0.0.1: ClientConnectorError"):
                await client.manifest(parse_reference(f"{host}/app:v1"))

    run(go())


def test_plain_http_is_for_registries_on_this_machine_only():
    async def go() -> None:
        async with RegistryClient(plain_http=True) as client:
            with pytest.raises(OciError, match="plain http is allowed only for registries on localhost"):
                await client.manifest(parse_reference("registry.example.com/app:v1"))

    run(go())


def test_credentials_stay_with_the_host_they_were_meant_for_across_redirects(tmp_path: Path):
    async def go() -> None:
        cdn = Fake({"/layer": body(LAYER)})
        async with serving(cdn) as cdn_host:
            routes = image_routes()
            routes[f"/v2/app/blobs/{digest_of(LAYER)}"] = redirect(f"http://{cdn_host}/layer")
            routes[f"/v2/app/blobs/{digest_of(CONFIG)}"] = redirect("/v2/app/config-here")
            routes["/v2/app/config-here"] = body(CONFIG)
            registry = Fake(routes)
            async with serving(registry) as host:
                auth = RegistryAuth({host: Credentials(token="registry-token")})
                assert await pull_all(host, tmp_path, auth=auth) == LAYER
        # a registry token goes as the bearer token, to the registry only (a same-host redirect keeps it)
        assert {authorization for _, _, authorization in registry.seen} == {"Bearer registry-token"}
        assert cdn.seen == [("GET", "/layer", None)]

    run(go())


def test_redirects_are_not_followed_forever():
    async def go() -> None:
        routes = {"/v2/app/manifests/v1": redirect("/v2/app/manifests/v1")}
        async with serving(Fake(routes)) as host, RegistryClient(plain_http=True) as client:
            with pytest.raises(OciError, match="more than 5 redirects"):
                await client.manifest(parse_reference(f"{host}/app:v1"))

    run(go())


@pytest.fixture(scope="module")
def tls(cluster_script: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server, client) contexts: the fake serves https with the local control plane's PKI, which the client trusts."""
    pki = tmp_path_factory.mktemp("pki")
    cluster_script.make_certs(pki)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    return server, ssl.create_default_context(cafile=str(pki / "ca.crt"))


def test_an_https_registry_may_not_send_the_client_to_plain_http(tls, tmp_path: Path):
    server, client_tls = tls

    async def go() -> None:
        plain = Fake({"/layer": body(LAYER)})
        async with serving(plain) as plain_host:
            routes = image_routes()
            routes[f"/v2/app/blobs/{digest_of(LAYER)}"] = redirect(f"http://{plain_host}/layer")
            async with serving(Fake(routes), tls=server) as host, RegistryClient(tls=client_tls) as client:
                manifest = await client.manifest(parse_reference(f"{host}/app:v1"))
                with pytest.raises(OciError, match="redirected to a non-https URL; refusing to follow it"):
                    await client.download(manifest.reference, manifest.layers[0], tmp_path / "layer")
        assert plain.seen == []

    run(go())


def test_a_token_realm_over_plain_http_gets_no_credentials(tls):
    server, client_tls = tls

    async def go() -> None:
        realm = Fake({"/token": body(b'{"token": "t"}')})
        async with serving(realm) as realm_host:

            async def challenge(request: web.Request) -> web.StreamResponse:
                header = f'Bearer realm="http://{realm_host}/token",service="s"'
                return web.Response(status=401, headers={"WWW-Authenticate": header})

            async with serving(Fake({"/v2/app/manifests/v1": challenge}), tls=server) as host:
                auth = RegistryAuth({host: Credentials("user", "password")})
                async with RegistryClient(auth, tls=client_tls) as client:
                    with pytest.raises(OciError, match="the registry's token service is not https; refusing to use it"):
                        await client.manifest(parse_reference(f"{host}/app:v1"))
        assert realm.seen == []

    run(go())


def test_only_basic_and_bearer_challenges_are_answered():
    async def go() -> None:
        async def challenge(request: web.Request) -> web.StreamResponse:
            return web.Response(status=401, headers={"WWW-Authenticate": 'Negotiate realm="x"'})

        async with (
            serving(Fake({"/v2/app/manifests/v1": challenge})) as host,
            RegistryClient(plain_http=True) as client,
        ):
            with pytest.raises(OciError, match=r"asks for authentication kapply does not support \(negotiate\)"):
                await client.manifest(parse_reference(f"{host}/app:v1"))

    run(go())


def test_an_image_is_absent_when_the_registry_says_404_401_or_403():
    async def go() -> None:
        routes = {
            "/v2/app/manifests/v1": body(b"", status=200),
            "/v2/gone/manifests/v1": body(b"", status=404),
            "/v2/denied/manifests/v1": body(b"", status=403),
            "/v2/private/manifests/v1": body(b"", status=401, **{"WWW-Authenticate": 'Basic realm="x"'}),
            "/v2/broken/manifests/v1": body(b"", status=500),
        }
        async with serving(Fake(routes)) as host, RegistryClient(plain_http=True) as client:
            for repository, present in [("app", True), ("gone", False), ("denied", False), ("private", False)]:
                assert await client.exists(parse_reference(f"{host}/{repository}:v1")) is present
            with pytest.raises(OciError, match="checking for the image \\(the registry answered 500\\)"):
                await client.exists(parse_reference(f"{host}/broken:v1"))

    run(go())


@pytest.mark.parametrize(
    ("header", "scheme", "params"),
    [
        (
            'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"',
            "bearer",
            {
                "realm": "https://auth.docker.io/token",
                "service": "registry.docker.io",
                "scope": "repository:library/nginx:pull",
            },
        ),
        ('Basic realm="Registry Realm"', "basic", {"realm": "Registry Realm"}),
        ("BEARER Realm=https://a/t, Service=s", "bearer", {"realm": "https://a/t", "service": "s"}),
        (
            r'Bearer realm="a\"b",scope="repository:x:pull,push"',
            "bearer",
            {"realm": 'a"b', "scope": "repository:x:pull,push"},
        ),
        ("", "", {}),
    ],
)
def test_challenges_are_parsed_as_rfc_7235_auth_params(header, scheme, params):
    challenge = parse_challenge(header)
    assert (challenge.scheme, dict(challenge.params)) == (scheme, params)


def test_descriptors_and_limits_are_plain_values():
    assert Descriptor("m", "sha256:" + "0" * 64, 1) == Descriptor("m", "sha256:" + "0" * 64, 1)
    assert Limits() == Limits(max_manifest_bytes=4 << 20, max_blob_bytes=1 << 30, max_layers=256)
