"""An App's `image`, `imgpkgBundle` and `http` sources: the spec read into values with messages naming the field, tag
selection, http downloads (digest, credentials, redirects, limits) against in-process servers on 127.0.0.1, and
downloaded archives unpacked as untrusted input: hostile zips and tars are refused naming the entry, and nothing is
ever written outside the directory (canaries live in tmp_path only). tests/e2e/test_controller_oci_http.py runs the
same sources through the controller process against a real registry."""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import io
import json
import stat
import tarfile
import zipfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from kapply.controller.fetch import (
    Archive,
    FetchError,
    FetchPolicy,
    Limits,
    archive_kind,
    fetch,
    file_name,
    http_url,
    select_tag,
    unpack,
)
from kapply.controller.settings import Settings
from kapply.controller.spec import (
    FetchSource,
    Http,
    Image,
    ImgpkgBundle,
    SpecError,
    TagSelection,
    parse_spec,
)
from kapply.objects import Obj
from kapply.oci import OciError, RegistryClient, parse_reference

LIMITS = Limits()
PLAIN_HTTP = FetchPolicy(limits=LIMITS, allow_plain_http_registries=True)
HTTPS_ONLY = FetchPolicy(limits=LIMITS)
CM = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"


# --- the spec -------------------------------------------------------------------------------------------------------


def app_with(*fetch: Obj) -> Obj:
    return {
        "metadata": {"name": "app", "namespace": "ns"},
        "spec": {"serviceAccountName": "sa", "fetch": list(fetch), "template": [{"ytt": {}}], "deploy": [{"kapp": {}}]},
    }


def sources_of(*fetch: Obj) -> tuple[FetchSource, ...]:
    return parse_spec(app_with(*fetch)).fetch


def error_of(*fetch: Obj) -> str:
    with pytest.raises(SpecError) as e:
        parse_spec(app_with(*fetch))
    return str(e.value)


def test_image_imgpkg_bundle_and_http_sources_are_read_into_values() -> None:
    semver = {"constraints": ">=1.0.0 <2.0.0", "prereleases": {"identifiers": ["rc"]}}
    sources = sources_of(
        {
            "path": "img",
            "image": {
                "url": "registry.example/app/config",
                "secretRef": {"name": "pull-secret"},
                "subPath": "config",
                "tagSelection": {"semver": semver},
            },
        },
        {"imgpkgBundle": {"image": "registry.example/app/bundle:v1", "tagSelection": {"semver": {}}}},
        {
            "http": {
                "url": "https://example.com/app.tgz",
                "sha256": "AB" * 32,
                "secretRef": {"name": "http-auth"},
                "subPath": "app",
            }
        },
    )
    assert sources == (
        FetchSource(
            "img",
            image=Image(
                "registry.example/app/config", "pull-secret", "config", TagSelection(">=1.0.0 <2.0.0", ("rc",))
            ),
        ),
        FetchSource("1", imgpkg_bundle=ImgpkgBundle("registry.example/app/bundle:v1", "", TagSelection("", None))),
        FetchSource("2", http=Http("https://example.com/app.tgz", "ab" * 32, "http-auth", "app")),
    )


def test_prereleases_without_identifiers_admit_every_prerelease() -> None:
    (source,) = sources_of({"image": {"url": "r.example/a", "tagSelection": {"semver": {"prereleases": {}}}}})
    assert source.image is not None and source.image.tag_selection == TagSelection("", ())


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"image": {}}, "Expected spec.fetch[0].image.url to be non-empty"),
        ({"image": {"url": 5}}, "Expected spec.fetch[0].image.url to be a string, got int"),
        ({"image": "r.example/a"}, "Expected spec.fetch[0].image to be a map, got str"),
        ({"imgpkgBundle": {"image": ""}}, "Expected spec.fetch[0].imgpkgBundle.image to be non-empty"),
        ({"http": {"sha256": "ab" * 32}}, "Expected spec.fetch[0].http.url to be non-empty"),
        (
            {"image": {"url": "r.example/a", "secretRef": {"name": "../other"}}},
            "Expected spec.fetch[0].image.secretRef.name to be a lowercase RFC 1123 subdomain",
        ),
        (
            {"imgpkgBundle": {"image": "r.example/a", "secretRef": {}}},
            "Expected spec.fetch[0].imgpkgBundle.secretRef.name to be non-empty",
        ),
        (
            {"http": {"url": "https://example.com/a", "secretRef": {"name": "Upper"}}},
            "Expected spec.fetch[0].http.secretRef.name to be a lowercase RFC 1123 subdomain",
        ),
        (
            {"http": {"url": "https://example.com/a", "sha256": "sha256:" + "ab" * 32}},
            "Expected spec.fetch[0].http.sha256 to be 64 hexadecimal digits (without 'sha256:')",
        ),
        (
            {"http": {"url": "https://example.com/a", "sha256": "abc"}},
            "Expected spec.fetch[0].http.sha256 to be 64 hexadecimal digits",
        ),
        (
            {"image": {"url": "r.example/a", "tagSelection": {"gitTag": {}}}},
            "Expected spec.fetch[0].image.tagSelection to have semver",
        ),
        (
            {"imgpkgBundle": {"image": "r.example/a", "tagSelection": {"semver": {"constraints": 1}}}},
            "Expected spec.fetch[0].imgpkgBundle.tagSelection.semver.constraints to be a string, got int",
        ),
        (
            {"image": {"url": "r.example/a", "tagSelection": {"semver": {"prereleases": {"identifiers": "rc"}}}}},
            "Expected spec.fetch[0].image.tagSelection.semver.prereleases.identifiers to be a list, got str",
        ),
    ],
)
def test_a_malformed_source_fails_naming_its_field(entry: Obj, message: str) -> None:
    assert error_of(entry).startswith(message)


def test_an_unknown_source_is_refused_and_the_message_lists_what_kapply_fetches() -> None:
    assert error_of({"inline": {}}, {"svn": {"url": "x"}}) == (
        "Fetching (1): Unsupported way to fetch templates (svn; kapply fetches inline, image, http, git, helmChart, "
        "imgpkgBundle)"
    )


def test_an_item_with_two_sources_uses_the_first_in_kapp_controllers_order() -> None:
    (source,) = sources_of({"git": {"url": "https://example.com/r.git"}, "image": {"url": "r.example/a"}})
    assert source.image == Image("r.example/a") and source.git is None


def test_the_policy_carries_the_controllers_flags() -> None:
    policy = FetchPolicy.from_settings(Settings(allow_file_urls=True, allow_plain_http_registries=True))
    assert (policy.allow_file_urls, policy.allow_plain_http_registries) == (True, True)
    assert not FetchPolicy.from_settings(Settings()).allow_plain_http_registries


# --- tag selection --------------------------------------------------------------------------------------------------

TAGS = ["latest", "v0.9.0", "1.0.0", "v1.2.0", "1.10.0-rc.1", "2.0.0", "sha256-abc.sig"]


@pytest.mark.parametrize(
    ("selection", "chosen"),
    [
        (TagSelection(), "2.0.0"),
        (TagSelection(">=1.0.0 <2.0.0"), "v1.2.0"),  # 1.2.0 < 1.10.0-rc.1, but prereleases are left out
        (TagSelection(">=1.0.0 <2.0.0", ()), "1.10.0-rc.1"),
        (TagSelection(">=1.0.0 <2.0.0", ("beta",)), "v1.2.0"),
        (TagSelection("<1.0.0"), "v0.9.0"),
    ],
)
def test_the_highest_tag_the_selection_admits_is_chosen(selection: TagSelection, chosen: str) -> None:
    assert select_tag(TAGS, selection) == chosen


def test_no_matching_tag_is_vendirs_message() -> None:
    with pytest.raises(FetchError) as e:
        select_tag(TAGS, TagSelection(">=3.0.0"))
    assert str(e.value) == (
        "Determining tag selection: Expected to find at least one version, but did not "
        "(details: all=5 -> after-prereleases-filter=4 -> after-constraints-filter=0)"
    )


def test_a_constraint_that_does_not_parse_is_named() -> None:
    with pytest.raises(FetchError, match=r"^Determining tag selection: Selecting versions: Parsing version constraint"):
        select_tag(TAGS, TagSelection("~>1"))


# --- servers on 127.0.0.1 -------------------------------------------------------------------------------------------

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Server:
    """An http server: `routes` maps a path to a handler; `seen` records (path, Authorization) of each request."""

    def __init__(self, routes: dict[str, Handler]) -> None:
        self.routes = routes
        self.seen: list[tuple[str, str | None]] = []
        self.host = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.path_qs, request.headers.get("Authorization")))
        handler = self.routes.get(request.path)
        if handler is None:
            return web.Response(status=404, text="404: Not Found")
        return await handler(request)

    def url(self, path: str) -> str:
        return f"http://{self.host}{path}"


@asynccontextmanager
async def serving(*servers: Server) -> AsyncIterator[None]:
    runners = []
    for server in servers:
        application = web.Application()
        application.router.add_route("*", "/{tail:.*}", server.handle)
        runner = web.AppRunner(application)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server.host = f"127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        runners.append(runner)
    try:
        yield
    finally:
        for runner in runners:
            await runner.cleanup()


def body(data: bytes, status: int = 200, **headers: str) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=data, status=status, headers=headers)

    return handler


def redirect(location: Callable[[], str]) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(location())

    return handler


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def secrets(**by_name: dict[str, str]) -> Callable[[str, str], Awaitable[Obj | None]]:
    """A ReadSource holding Secrets (values as given, stored base64 as the API returns them)."""

    async def read(kind: str, name: str) -> Obj | None:
        if kind != "Secret" or name not in by_name:
            return None
        data = {k: base64.b64encode(v.encode()).decode() for k, v in by_name[name].items()}
        return {"metadata": {"name": name}, "data": data}

    return read


def fetch_with(
    servers: tuple[Server, ...],
    sources: Callable[[], tuple[FetchSource, ...]],
    root: Path,
    policy: FetchPolicy = HTTPS_ONLY,
    read: Callable[[str, str], Awaitable[Obj | None]] | None = None,
) -> dict[str, Any]:
    """Serve, fetch the sources (built once the servers have their addresses) into root; the lock."""

    async def go() -> str:
        async with serving(*servers):
            return await fetch(sources(), root, read or secrets(), policy)

    root.mkdir(exist_ok=True)
    return dict(yaml.safe_load(asyncio.run(go())))


def fetch_error(*args: Any, **kwargs: Any) -> str:
    with pytest.raises(FetchError) as e:
        fetch_with(*args, **kwargs)
    return str(e.value)


def files(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): f"-> {p.readlink()}"
        if p.is_symlink()
        else "<dir>"
        if p.is_dir()
        else p.read_text()
        for p in sorted(directory.rglob("*"))
    }


# --- archives -------------------------------------------------------------------------------------------------------


def tar_bytes(members: dict[str, bytes | tuple[bytes, str]], compress: bool = False) -> bytes:
    """A tar of files (name -> content) and links (name -> (tarfile type, target))."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, value in members.items():
            info = tarfile.TarInfo(name)
            if isinstance(value, tuple):
                info.type, info.linkname = value
                tar.addfile(info)
            else:
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value))
    return gzip.compress(buffer.getvalue()) if compress else buffer.getvalue()


def zip_bytes(members: dict[str, bytes], modes: dict[str, int] | None = None) -> bytes:
    """A zip of `members`; `modes` sets an entry's unix mode (file type included) in its external attributes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, content in members.items():
            info = zipfile.ZipInfo(name)
            if modes and name in modes:
                info.external_attr = modes[name] << 16
            zipped.writestr(info, content)
    return buffer.getvalue()


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """`canary` (a file to steal or overwrite) beside `tree` (where an archive is unpacked) and `download`."""
    (tmp_path / "canary").write_text("precious")
    (tmp_path / "tree").mkdir()
    return tmp_path


def unpack_bytes(place: Path, data: bytes, name: str = "app.tgz", limits: Limits = LIMITS) -> dict[str, str]:
    (place / "download").write_bytes(data)
    unpack(place / "download", place / "tree", name, limits)
    return files(place / "tree")


def refusal(place: Path, data: bytes, limits: Limits = LIMITS) -> str:
    with pytest.raises((FetchError, OciError)) as e:
        unpack_bytes(place, data, limits=limits)
    assert (place / "canary").read_text() == "precious"
    assert {p.name for p in place.iterdir()} <= {"canary", "download", "download.tar", "tree"}  # a zip becomes a tar
    return str(e.value)


def test_archives_are_told_from_their_bytes_not_their_name(tmp_path: Path) -> None:
    for data, kind in (
        (tar_bytes({"a": b"a"}, compress=True), Archive.TAR),
        (tar_bytes({"a": b"a"}), Archive.TAR),
        (zip_bytes({"a": b"a"}), Archive.ZIP),
        (zip_bytes({}), Archive.ZIP),
        (CM, Archive.FILE),
        (gzip.compress(CM), Archive.FILE),  # a gzipped file that is no tar is kept as it is, as vendir keeps it
        (b"", Archive.FILE),
    ):
        (tmp_path / "f").write_bytes(data)
        assert archive_kind(tmp_path / "f", "f") is kind, data[:10]


def test_a_tgz_a_tar_and_a_zip_are_unpacked_and_any_other_file_kept_as_the_urls_last_segment(tmp_path: Path) -> None:
    layout = {"config/cm.yml": CM, "config/nested/x.txt": b"x"}
    expected = {"config": "<dir>", "config/cm.yml": CM.decode(), "config/nested": "<dir>", "config/nested/x.txt": "x"}
    for i, data in enumerate((tar_bytes(layout, compress=True), tar_bytes(layout), zip_bytes(layout))):
        (tmp_path / str(i) / "tree").mkdir(parents=True)
        assert unpack_bytes(tmp_path / str(i), data) == expected
    (tmp_path / "plain" / "tree").mkdir(parents=True)
    assert unpack_bytes(tmp_path / "plain", CM, name="cm.yml") == {"cm.yml": CM.decode()}


def test_a_zip_keeps_modes_symlinks_within_and_directories(place: Path) -> None:
    data = zip_bytes(
        {"bin/": b"", "bin/run.sh": b"#!/bin/sh\n", "cm.yml": CM, "link.yml": b"cm.yml"},
        modes={"bin/run.sh": stat.S_IFREG | 0o755, "link.yml": stat.S_IFLNK | 0o777},
    )
    assert unpack_bytes(place, data) == {
        "bin": "<dir>",
        "bin/run.sh": "#!/bin/sh\n",
        "cm.yml": CM.decode(),
        "link.yml": "-> cm.yml",
    }
    assert (place / "tree" / "bin" / "run.sh").stat().st_mode & 0o100


@pytest.mark.parametrize(
    ("members", "modes", "message"),
    [
        ({"../canary": b"stolen"}, {}, "entry '../canary' leaves the directory (..)"),
        ({"a/../../canary": b"stolen"}, {}, "entry 'a/../../canary' leaves the directory (..)"),
        ({"{place}/planted": b"x"}, {}, "entry '{place}/planted' is an absolute path"),
        ({"up": b"../canary"}, {"up": stat.S_IFLNK | 0o777}, "entry 'up' is a symlink that resolves outside"),
        ({"abs": b"{place}/canary"}, {"abs": stat.S_IFLNK | 0o777}, "entry 'abs' is a symlink to an absolute path"),
        (
            {"d": b".", "d/x": b"through"},
            {"d": stat.S_IFLNK | 0o777},
            "entry 'd/x' goes through the symlink 'd'",
        ),
        ({"fifo": b""}, {"fifo": stat.S_IFIFO | 0o644}, "entry 'fifo' is a device, FIFO or other special file"),
        ({"dev": b""}, {"dev": stat.S_IFCHR | 0o644}, "entry 'dev' is a device, FIFO or other special file"),
    ],
)
def test_a_hostile_zip_is_refused_naming_the_entry_and_nothing_leaves_the_directory(
    place: Path, members: dict[str, bytes], modes: dict[str, int], message: str
) -> None:
    def placed(text: str) -> str:  # absolute names point into tmp_path, never at the real system
        return text.replace("{place}", str(place))

    data = zip_bytes({placed(k): placed(v.decode()).encode() for k, v in members.items()}, modes)
    assert placed(message) in refusal(place, data)
    assert not (place / "planted").exists()


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({"../canary": b"stolen"}, "entry '../canary' leaves the directory (..)"),
        ({"link": (tarfile.SYMTYPE, "../canary")}, "entry 'link' is a symlink that resolves outside"),
        ({"link": (tarfile.SYMTYPE, "{place}/canary")}, "entry 'link' is a symlink to an absolute path"),
        ({"hard": (tarfile.LNKTYPE, "../canary")}, "entry 'hard' is a hard link whose target leaves the directory"),
        ({"dev": (tarfile.CHRTYPE, "")}, "entry 'dev' is a device, FIFO or other special file"),
    ],
)
def test_a_hostile_tarball_is_refused_by_the_image_layers_rules(
    place: Path, members: dict[str, bytes | tuple[bytes, str]], message: str
) -> None:
    placed = {k: (v[0], v[1].replace("{place}", str(place))) if isinstance(v, tuple) else v for k, v in members.items()}
    assert message in refusal(place, tar_bytes(placed, compress=True))


def test_a_zip_over_the_limits_is_refused_before_it_is_unpacked(place: Path) -> None:
    many = zip_bytes({f"f{i}": b"x" for i in range(20)})
    assert refusal(place, many, Limits(max_files=10)).startswith("Checking size: Expected at most 10 files")
    big = zip_bytes({"big": b"0" * 10_000})  # compresses to a few bytes: the declared size counts
    assert refusal(place, big, Limits(max_bytes=1000)).startswith("Checking size: Expected at most 1000 bytes")
    deep = zip_bytes({"/".join("d" * 10) + "/f": b"x"})
    assert "is nested more than 5 directories deep" in refusal(place, deep, Limits(max_depth=5))


def test_a_zip_that_lies_about_an_entrys_size_or_is_broken_is_refused(place: Path) -> None:
    data = bytearray(zip_bytes({"a.yml": b"a" * 100}))
    data[-30:-20] = b"\0" * 10  # the end record's sizes and offsets
    assert "not a valid zip archive" in refusal(place, bytes(data))
    encrypted = bytearray(zip_bytes({"a.yml": b"a"}))
    encrypted[6] |= 1  # the local header's "encrypted" flag
    central = encrypted.rfind(b"PK\x01\x02")
    encrypted[central + 8] |= 1  # and the central directory's
    assert "not a valid zip archive (RuntimeError: " in refusal(place, bytes(encrypted))


def test_a_download_whose_url_names_no_file_is_kept_as_content() -> None:
    assert file_name(http_url("https://example.com/", "u"), "u") == "content"
    assert file_name(http_url("https://example.com/dir/cm.yml?x=1", "u"), "u") == "cm.yml"
    with pytest.raises(FetchError, match="Expected the last segment of u's path to be a file name"):
        file_name(http_url("https://example.com/a%00b", "u"), "u")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/a.tgz", "Expected spec.fetch[0].http.url to be an http or https URL"),
        ("file:///nonexistent/kapply-canary", "Expected spec.fetch[0].http.url to be an http or https URL"),
        ("/nonexistent/kapply-canary", "Expected spec.fetch[0].http.url to be an http or https URL"),
        ("https://example.com/a\nb", "Expected spec.fetch[0].http.url to have no control characters"),
    ],
)
def test_only_http_and_https_urls_are_fetched(tmp_path: Path, url: str, message: str) -> None:
    assert fetch_error((), lambda: (FetchSource("", http=Http(url)),), tmp_path / "root") == message


# --- http -----------------------------------------------------------------------------------------------------------


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_an_http_tarball_with_its_sha256_is_unpacked_and_locked(tmp_path: Path) -> None:
    archive = tar_bytes({"app/cm.yml": CM, "other/x.yml": b"x"}, compress=True)
    server = Server({"/app.tgz": body(archive)})
    lock = fetch_with(
        (server,),
        lambda: (FetchSource("", http=Http(server.url("/app.tgz"), sha(archive), sub_path="app")),),
        tmp_path / "root",
    )
    assert files(tmp_path / "root") == {"cm.yml": CM.decode()}  # only the subPath
    assert lock["directories"] == [{"path": ".", "http": {"url": server.url("/app.tgz"), "sha256": sha(archive)}}]


def test_a_sha256_mismatch_is_vendirs_message_and_nothing_is_unpacked(tmp_path: Path) -> None:
    archive = tar_bytes({"cm.yml": CM}, compress=True)
    server = Server({"/app.tgz": body(archive)})
    wrong = "0" * 64
    message = fetch_error(
        (server,), lambda: (FetchSource("", http=Http(server.url("/app.tgz"), wrong)),), tmp_path / "root"
    )
    assert message == (
        f"Fetching http {server.url('/app.tgz')}: Downloading URL: Expected digest to match 'sha256:{wrong}', "
        f"but was 'sha256:{sha(archive)}'"
    )
    assert files(tmp_path / "root") == {}


def test_a_missing_subpath_and_a_failed_request_are_named(tmp_path: Path) -> None:
    server = Server({"/app.tgz": body(tar_bytes({"a/cm.yml": CM}))})
    message = fetch_error(
        (server,), lambda: (FetchSource("", http=Http(server.url("/app.tgz"), sub_path="b")),), tmp_path / "r1"
    )
    assert message == f"Fetching http {server.url('/app.tgz')}: Expected directory 'b' (subPath) to exist"
    message = fetch_error((server,), lambda: (FetchSource("", http=Http(server.url("/missing.tgz"))),), tmp_path / "r2")
    assert (
        message
        == f"Fetching http {server.url('/missing.tgz')}: Downloading URL: Expected 200 OK, but was '404 Not Found'"
    )


def test_credentials_go_to_the_urls_origin_only_and_never_into_status(tmp_path: Path) -> None:
    elsewhere = Server({"/cm.yml": body(CM)})
    origin = Server({"/start": redirect(lambda: "/moved"), "/moved": redirect(lambda: elsewhere.url("/cm.yml"))})
    read = secrets(auth={"username": "user", "password": "s3cret"})
    lock = fetch_with(
        (origin, elsewhere),
        lambda: (FetchSource("", http=Http(origin.url("/start"), secret="auth")),),
        tmp_path / "root",
        read=read,
    )
    assert origin.seen == [("/start", basic("user", "s3cret")), ("/moved", basic("user", "s3cret"))]
    assert elsewhere.seen == [("/cm.yml", None)]
    assert files(tmp_path / "root") == {"start": CM.decode()}  # named after the URL asked for, as vendir names it
    assert "s3cret" not in json.dumps(lock)


def test_a_urls_own_user_and_password_are_sent_but_never_shown(tmp_path: Path) -> None:
    server = Server({"/cm.yml": body(CM)})
    lock = fetch_with(
        (server,),
        lambda: (FetchSource("", http=Http(f"http://user:pa55@{server.host}/cm.yml")),),
        tmp_path / "root",
    )
    assert server.seen == [("/cm.yml", basic("user", "pa55"))]
    assert lock["directories"][0]["http"]["url"] == server.url("/cm.yml")


def test_an_unknown_secret_key_or_a_missing_secret_is_refused(tmp_path: Path) -> None:
    server = Server({"/cm.yml": body(CM)})
    read = secrets(auth={"username": "u", "token": "t"})
    message = fetch_error(
        (server,),
        lambda: (FetchSource("", http=Http(server.url("/cm.yml"), secret="auth")),),
        tmp_path / "r1",
        read=read,
    )
    assert message == "Unknown secret field 'token' in secret 'auth'"
    message = fetch_error(
        (server,), lambda: (FetchSource("", http=Http(server.url("/cm.yml"), secret="nope")),), tmp_path / "r2"
    )
    assert message == "Secret 'nope' not found"
    assert server.seen == []


def test_redirects_are_bounded_and_stay_on_http(tmp_path: Path) -> None:
    loop = Server({"/loop": redirect(lambda: "/loop")})
    message = fetch_error((loop,), lambda: (FetchSource("", http=Http(loop.url("/loop"))),), tmp_path / "r1")
    assert message == f"Fetching http {loop.url('/loop')}: Downloading URL: Stopped after 10 redirects"
    away = Server({"/away": redirect(lambda: "file:///nonexistent/kapply-canary")})
    message = fetch_error((away,), lambda: (FetchSource("", http=Http(away.url("/away"))),), tmp_path / "r2")
    assert message.endswith("Downloading URL: Expected every redirect to lead to an http or https URL")


def test_a_download_over_the_byte_limit_is_stopped(tmp_path: Path) -> None:
    server = Server({"/big": body(b"x" * 5000)})
    policy = FetchPolicy(limits=Limits(max_bytes=1000))
    message = fetch_error((server,), lambda: (FetchSource("", http=Http(server.url("/big"))),), tmp_path / "r", policy)
    assert message.endswith(
        "Downloading URL: Checking size: Expected at most 1000 bytes of files (KAPPLY_FETCH_MAX_BYTES)"
    )


def test_a_hostile_http_archive_leaves_the_canary_alone(tmp_path: Path) -> None:
    (tmp_path / "canary").write_text("precious")
    archive = zip_bytes({"../canary": b"overwritten", "link": str(tmp_path / "canary").encode()})
    server = Server({"/evil.zip": body(archive)})
    message = fetch_error((server,), lambda: (FetchSource("", http=Http(server.url("/evil.zip"))),), tmp_path / "root")
    assert message.startswith(
        f"Fetching http {server.url('/evil.zip')}: Unpacking archive: evil.zip: entry '../canary'"
    )
    assert (tmp_path / "canary").read_text() == "precious"
    assert files(tmp_path / "root") == {}


# --- registries (an in-process one; tests/e2e/test_controller_oci_http.py uses crane's) -------------------------------

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


class Registry(Server):
    """A registry serving images pushed to it; tags listed as `tags/list` pages of `page` tags each."""

    def __init__(self, page: int = 0) -> None:
        super().__init__({})
        self.tags: dict[str, list[str]] = {}
        self.page = page

    def push(self, repository: str, tag: str, layer: bytes, labels: dict[str, str] | None = None) -> str:
        config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Labels": labels or {}}}).encode()
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **descriptor(config)},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **descriptor(layer)}],
            }
        ).encode()
        for blob in (config, layer):
            self.routes[f"/v2/{repository}/blobs/sha256:{sha(blob)}"] = body(blob)
        headers = {"Content-Type": OCI_MANIFEST}
        self.routes[f"/v2/{repository}/manifests/{tag}"] = body(manifest, **headers)
        self.routes[f"/v2/{repository}/manifests/sha256:{sha(manifest)}"] = body(manifest, **headers)
        self.tags.setdefault(repository, []).append(tag)
        self.routes[f"/v2/{repository}/tags/list"] = self._list(repository)
        return f"sha256:{sha(manifest)}"

    def _list(self, repository: str) -> Handler:
        async def handler(request: web.Request) -> web.StreamResponse:
            tags = sorted(self.tags[repository])
            if not self.page:
                return web.json_response({"name": repository, "tags": tags})
            last = request.query.get("last", "")
            rest = [t for t in tags if t > last]
            page, more = rest[: self.page], rest[self.page :]
            headers = (
                {"Link": f'</v2/{repository}/tags/list?n={self.page}&last={page[-1]}>; rel="next"'} if more else {}
            )
            return web.json_response({"name": repository, "tags": page}, headers=headers)

        return handler


def descriptor(blob: bytes) -> dict[str, Any]:
    return {"digest": f"sha256:{sha(blob)}", "size": len(blob)}


def test_tags_are_listed_page_after_page(tmp_path: Path) -> None:
    registry = Registry(page=2)
    for tag in ("1.0.0", "1.1.0", "1.2.0", "2.0.0", "latest"):
        registry.push("app", tag, tar_bytes({"cm.yml": CM}, compress=True))

    async def go() -> list[str]:
        async with serving(registry), RegistryClient(plain_http=True) as client:
            return await client.tags(parse_reference(f"{registry.host}/app"))

    assert asyncio.run(go()) == ["1.0.0", "1.1.0", "1.2.0", "2.0.0", "latest"]
    assert [path for path, _ in registry.seen] == [
        "/v2/app/tags/list",
        "/v2/app/tags/list?n=2&last=1.1.0",
        "/v2/app/tags/list?n=2&last=2.0.0",
    ]


def test_an_image_is_pulled_with_the_highest_matching_tag_and_locked_by_digest(tmp_path: Path) -> None:
    registry = Registry()
    for version in ("1.0.0", "1.4.0", "2.0.0"):
        registry.push("app", version, tar_bytes({f"config/{version}.yml": CM, "README": b"r"}, compress=True))
    digest = registry.push("app", "1.5.0", tar_bytes({"config/1.5.0.yml": CM, "README": b"r"}, compress=True))
    selection = TagSelection("<2.0.0")
    lock = fetch_with(
        (registry,),
        lambda: (FetchSource("", image=Image(f"{registry.host}/app", sub_path="config", tag_selection=selection)),),
        tmp_path / "root",
        PLAIN_HTTP,
    )
    assert files(tmp_path / "root") == {"1.5.0.yml": CM.decode()}
    assert lock["directories"] == [{"path": ".", "image": {"url": f"{registry.host}/app@{digest}", "tag": "1.5.0"}}]


def test_a_registry_is_reached_over_https_unless_the_controller_allows_plain_http(tmp_path: Path) -> None:
    registry = Registry()
    registry.push("app", "v1", tar_bytes({"cm.yml": CM}, compress=True))
    message = fetch_error(
        (registry,), lambda: (FetchSource("", image=Image(f"{registry.host}/app:v1")),), tmp_path / "r"
    )
    assert message.startswith(f"Fetching image: {registry.host}/app:v1: cannot reach 127.0.0.1: ")
    assert registry.seen == []  # the TLS handshake failed: no request was ever read


def test_tag_selection_needs_a_url_without_tag_or_digest(tmp_path: Path) -> None:
    for url in ("r.example/app:v1", "r.example:5000/app@sha256:" + "a" * 64):
        message = fetch_error(
            (), lambda url=url: (FetchSource("", image=Image(url, tag_selection=TagSelection())),), tmp_path / "r"
        )
        assert message == (
            "Fetching image: Expected spec.fetch[0].image.url to name no tag or digest: tagSelection picks the tag"
        )


def test_an_imgpkg_bundle_must_be_one_and_its_lock_is_written(tmp_path: Path) -> None:
    registry = Registry()
    lock_file = yaml.safe_dump({"apiVersion": "imgpkg.carvel.dev/v1alpha1", "kind": "ImagesLock", "images": []})
    layer = tar_bytes({"config/cm.yml": CM, ".imgpkg/images.yml": lock_file.encode()}, compress=True)
    digest = registry.push("bundle", "v1", layer, labels={"dev.carvel.imgpkg.bundle": "true"})
    registry.push("plain", "v1", layer)
    lock = fetch_with(
        (registry,),
        lambda: (FetchSource("", imgpkg_bundle=ImgpkgBundle(f"{registry.host}/bundle:v1")),),
        tmp_path / "a",
        PLAIN_HTTP,
    )
    assert lock["directories"] == [
        {"path": ".", "imgpkgBundle": {"image": f"{registry.host}/bundle@{digest}", "tag": "v1"}}
    ]
    assert set(files(tmp_path / "a")) == {".imgpkg", ".imgpkg/images.yml", "config", "config/cm.yml"}
    message = fetch_error(
        (registry,),
        lambda: (FetchSource("", imgpkg_bundle=ImgpkgBundle(f"{registry.host}/plain:v1")),),
        tmp_path / "b",
        PLAIN_HTTP,
    )
    assert (
        message.startswith("Fetching imgpkgBundle: ")
        and "expected an imgpkg bundle, but the image is not one" in message
    )


def test_a_hostile_layer_is_refused_naming_the_entry_and_the_canary_stays(tmp_path: Path) -> None:
    (tmp_path / "canary").write_text("precious")
    registry = Registry()
    registry.push("evil", "v1", tar_bytes({"../canary": b"overwritten"}, compress=True))
    registry.push("link", "v1", tar_bytes({"steal": (tarfile.SYMTYPE, str(tmp_path / "canary"))}, compress=True))
    for repository, entry in (
        ("evil", "'../canary' leaves the directory"),
        ("link", "'steal' is a symlink to an absolute path"),
    ):
        message = fetch_error(
            (registry,),
            lambda repository=repository: (FetchSource("", image=Image(f"{registry.host}/{repository}:v1")),),
            tmp_path / repository,
            PLAIN_HTTP,
        )
        assert message.startswith(f"Fetching image: {registry.host}/{repository}@sha256:") and entry in message
        assert files(tmp_path / repository) == {}
    assert (tmp_path / "canary").read_text() == "precious"


def test_registry_credentials_come_from_the_sources_secret(tmp_path: Path) -> None:
    registry = Registry()
    registry.push("app", "v1", tar_bytes({"cm.yml": CM}, compress=True))
    read = secrets(pull={"username": "u", "password": "p", "nonsense": "x"})
    message = fetch_error(
        (registry,),
        lambda: (FetchSource("", image=Image(f"{registry.host}/app:v1", secret="pull")),),
        tmp_path / "r",
        PLAIN_HTTP,
        read,
    )
    assert message == "Unknown secret field 'nonsense' in secret 'pull'"
    message = fetch_error(
        (registry,),
        lambda: (FetchSource("", image=Image(f"{registry.host}/app:v1", secret="none")),),
        tmp_path / "s",
        PLAIN_HTTP,
    )
    assert message == "Secret 'none' not found"
