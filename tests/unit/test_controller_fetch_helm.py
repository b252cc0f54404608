"""An App's `helmChart` source (kapply.controller.fetch_helm): the spec read into values, the version chosen from a
repository's index.yaml as helm chooses it, the chart downloaded from in-process servers on 127.0.0.1 (an http
repository with basic credentials, an OCI registry serving helm's media types) and unpacked as untrusted input into
the fetch path as vendir lays it out. Canaries live in tmp_path only. tests/e2e/test_controller_helm_chart.py runs
the same sources through the controller process against a repository and a registry pushed to with the real helm."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
import yarl

from kapply.controller.fetch import FetchError, FetchPolicy, Limits
from kapply.controller.fetch_helm import (
    CHART_MEDIA_TYPES,
    CONFIG_MEDIA_TYPE,
    chart_url,
    check,
    choose,
    index_url,
    oci_reference,
)
from kapply.controller.spec import FetchSource, HelmChart, SpecError, parse_spec
from kapply.objects import Obj
from tests.unit.test_controller_fetch_sources import (
    HTTPS_ONLY,
    OCI_MANIFEST,
    PLAIN_HTTP,
    Registry,
    Server,
    basic,
    body,
    descriptor,
    fetch_error,
    fetch_with,
    files,
    secrets,
    sha,
    tar_bytes,
)

CHART_YAML = b"apiVersion: v2\nname: hello\nversion: 1.2.0\nappVersion: '4.5'\n"
TEMPLATE = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}'}\n"


def chart_tgz(more: dict[str, bytes | tuple[bytes, str]] | None = None) -> bytes:
    members: dict[str, bytes | tuple[bytes, str]] = {
        "hello/Chart.yaml": CHART_YAML,
        "hello/templates/cm.yaml": TEMPLATE,
    }
    members.update(more or {})
    return tar_bytes(members, compress=True)


# --- the spec -------------------------------------------------------------------------------------------------------


def app_with(entry: Obj) -> Obj:
    spec = {"serviceAccountName": "sa", "fetch": [entry], "template": [{"ytt": {}}], "deploy": [{"kapp": {}}]}
    return {"metadata": {"name": "a", "namespace": "n"}, "spec": spec}


def test_a_helm_chart_source_is_read_into_values() -> None:
    chart = {
        "name": "hello",
        "version": "1.2.0",
        "repository": {"url": "https://charts.example", "secretRef": {"name": "c"}},
    }
    (source,) = parse_spec(app_with({"helmChart": chart, "path": "x"})).fetch
    assert source == FetchSource("x", helm_chart=HelmChart("hello", "https://charts.example", "1.2.0", "c"))
    (source,) = parse_spec(app_with({"helmChart": {**chart, "helmVersion": "3"}})).fetch
    assert source.helm_chart == HelmChart("hello", "https://charts.example", "1.2.0", "c")


@pytest.mark.parametrize(
    ("chart", "message"),
    [
        ({"repository": {"url": "https://c.example"}}, "Expected spec.fetch[0].helmChart.name to be non-empty"),
        ({"name": "hello"}, "Expected spec.fetch[0].helmChart.repository.url to be non-empty"),
        ({"name": "hello", "repository": "x"}, "Expected spec.fetch[0].helmChart.repository to be a map, got str"),
        (
            {"name": "hello", "repository": {"url": "https://c.example"}, "helmVersion": "2"},
            "Unsupported helm version '2' in spec.fetch[0].helmChart.helmVersion (kapply fetches as helm 3)",
        ),
        (
            {"name": "hello", "repository": {"url": "https://c.example", "secretRef": {"name": "../x"}}},
            "Expected spec.fetch[0].helmChart.repository.secretRef.name to be a lowercase RFC 1123 subdomain",
        ),
    ],
)
def test_a_malformed_helm_chart_source_is_refused_naming_its_field(chart: Obj, message: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_spec(app_with({"helmChart": chart}))
    assert str(e.value).startswith(message)


@pytest.mark.parametrize(
    ("chart", "message"),
    [
        (HelmChart("../x", "https://c.example"), "Expected f.name to be a chart name"),
        (HelmChart("a/b", "https://c.example"), "Expected f.name to be a chart name"),
        (HelmChart("--foo", "https://c.example"), "Expected f.name to be a chart name"),
        (HelmChart("hello", "https://c.example", "--foo"), "Expected f.version not to start with '-'"),
        (HelmChart("hello", "https://c.example", "1\n2"), "Expected f.version to have no control characters"),
    ],
)
def test_names_that_are_paths_or_options_and_option_versions_are_refused(chart: HelmChart, message: str) -> None:
    with pytest.raises(FetchError) as e:
        check(chart, "f")
    assert str(e.value).startswith(message)


# --- choosing a version ---------------------------------------------------------------------------------------------


def index(*versions: str, name: str = "hello") -> dict[str, Any]:
    return {"apiVersion": "v1", "entries": {name: [{"version": v, "urls": [f"{name}-{v}.tgz"]} for v in versions]}}


@pytest.mark.parametrize(
    ("asked", "chosen"),
    [
        ("", "2.0.0"),  # the highest that is no prerelease
        ("1.2.0", "1.2.0"),
        ("nightly", "nightly"),  # written exactly as asked: chosen though it is no version
        (">=1.0.0 <2.0.0", "1.2.0"),
        (">=1.0.0, <2.0.0", "1.2.0"),  # helm's comma
        ("3.0.0-rc.1", "3.0.0-rc.1"),
    ],
)
def test_the_version_is_chosen_as_helm_chooses_it(asked: str, chosen: str) -> None:
    found = choose(index("1.0.0", "1.2.0", "2.0.0", "3.0.0-rc.1", "nightly"), HelmChart("hello", "u", asked), "u")
    assert found == (chosen, f"hello-{chosen}.tgz")


def test_a_chart_or_version_not_in_the_index_is_helms_message() -> None:
    with pytest.raises(FetchError, match=r'^chart "other" not found in https://c.example repository$'):
        choose(index("1.0.0"), HelmChart("other", "u"), "https://c.example")
    with pytest.raises(FetchError, match=r'^chart "hello" version "9.9.9" not found in https://c.example repository$'):
        choose(index("1.0.0"), HelmChart("hello", "u", "9.9.9"), "https://c.example")
    with pytest.raises(FetchError, match=r'^chart "hello" version "\^1": Expected a version or a range of versions: '):
        choose(index("1.0.0"), HelmChart("hello", "u", "^1"), "https://c.example")
    no_urls = {"entries": {"hello": [{"version": "1.0.0", "urls": []}]}}
    with pytest.raises(FetchError, match=r'^chart "hello" has no downloadable URLs$'):
        choose(no_urls, HelmChart("hello", "u"), "https://c.example")
    with pytest.raises(FetchError, match="to be a map"):
        choose(["not", "a", "map"], HelmChart("hello", "u"), "https://c.example")


def test_chart_urls_resolve_against_the_repository_as_a_directory() -> None:
    repository = yarl.URL("https://c.example/charts")
    assert index_url(repository) == yarl.URL("https://c.example/charts/index.yaml")
    assert index_url(yarl.URL("https://c.example/charts/?t=1")) == yarl.URL("https://c.example/charts/index.yaml?t=1")
    assert chart_url(repository, "hello-1.0.0.tgz", "w") == yarl.URL("https://c.example/charts/hello-1.0.0.tgz")
    assert chart_url(repository, "/x/hello.tgz", "w") == yarl.URL("https://c.example/x/hello.tgz")
    assert chart_url(repository, "https://cdn.example/h.tgz", "w") == yarl.URL("https://cdn.example/h.tgz")
    for bad in ("file:///etc/passwd", "ftp://c.example/h.tgz"):
        with pytest.raises(FetchError, match="Expected w to be an http or https URL"):
            chart_url(repository, bad, "w")


def test_an_oci_chart_is_named_by_its_repository_name_and_version() -> None:
    assert oci_reference(HelmChart("hello", "oci://r.example/charts/", "1.0.0+b1"), "f") == (
        "r.example/charts/hello:1.0.0_b1"
    )
    with pytest.raises(
        FetchError, match=r"Expected f.version to be non-empty \(an oci:// repository names a version\)"
    ):
        oci_reference(HelmChart("hello", "oci://r.example/charts"), "f")


# --- a helm repository over http ------------------------------------------------------------------------------------


def repository(chart: bytes, *, url: str = "hello-1.2.0.tgz", versions: tuple[str, ...] = ("1.0.0", "1.2.0")) -> Server:
    listed = {"apiVersion": "v1", "entries": {"hello": [{"version": v, "urls": [url]} for v in versions]}}
    return Server({"/charts/index.yaml": body(yaml.safe_dump(listed).encode()), "/charts/hello-1.2.0.tgz": body(chart)})


def helm_source(server: Server | Registry, version: str = "", secret: str = "", path: str = "") -> FetchSource:
    url = f"oci://{server.host}/charts" if isinstance(server, Registry) else server.url("/charts")
    return FetchSource(path, helm_chart=HelmChart("hello", url, version, secret))


def test_a_chart_is_fetched_from_a_repository_with_credentials_and_locked(tmp_path: Path) -> None:
    server = repository(chart_tgz({"hello/charts/sub/Chart.yaml": b"name: sub\nversion: 0.1.0\n"}))
    lock = fetch_with(
        (server,),
        lambda: (helm_source(server, secret="c", path="chart"),),
        tmp_path / "root",
        read=secrets(c={"username": "user", "password": "s3cret"}),
    )
    assert files(tmp_path / "root") == {
        "chart": "<dir>",
        "chart/Chart.yaml": CHART_YAML.decode(),
        "chart/charts": "<dir>",
        "chart/charts/sub": "<dir>",
        "chart/charts/sub/Chart.yaml": "name: sub\nversion: 0.1.0\n",
        "chart/templates": "<dir>",
        "chart/templates/cm.yaml": TEMPLATE.decode(),
    }
    assert lock["directories"] == [{"path": "chart", "helmChart": {"version": "1.2.0", "appVersion": "4.5"}}]
    assert server.seen == [
        ("/charts/index.yaml", basic("user", "s3cret")),
        ("/charts/hello-1.2.0.tgz", basic("user", "s3cret")),
    ]
    assert "s3cret" not in json.dumps(lock)


def test_credentials_never_go_to_a_chart_served_from_another_origin(tmp_path: Path) -> None:
    elsewhere = Server({"/hello.tgz": body(chart_tgz())})
    server = Server({})

    async def serve_index(request: Any) -> Any:  # the index names the other server's address, known once it serves
        listed = {"entries": {"hello": [{"version": "1.2.0", "urls": [elsewhere.url("/hello.tgz")]}]}}
        return await body(yaml.safe_dump(listed).encode())(request)

    server.routes["/charts/index.yaml"] = serve_index
    fetch_with(
        (server, elsewhere),
        lambda: (helm_source(server, secret="c"),),
        tmp_path / "root",
        read=secrets(c={"username": "user", "password": "s3cret"}),
    )
    assert server.seen == [("/charts/index.yaml", basic("user", "s3cret"))]
    assert elsewhere.seen == [("/hello.tgz", None)]
    assert (tmp_path / "root/templates/cm.yaml").read_bytes() == TEMPLATE


def test_an_unknown_secret_key_is_refused_as_vendir_refuses_it(tmp_path: Path) -> None:
    server = repository(chart_tgz())
    message = fetch_error(
        (server,), lambda: (helm_source(server, secret="c"),), tmp_path / "root", read=secrets(c={"token": "t"})
    )
    assert message.endswith(": Unknown secret field 'token' in secret 'c'")
    assert server.seen == []


def test_an_index_over_its_limit_is_stopped(tmp_path: Path) -> None:
    big = b"entries: {}\n" + b"#" * 5000
    server = Server({"/charts/index.yaml": body(big)})
    policy = FetchPolicy(limits=Limits(max_bytes=4096))
    message = fetch_error((server,), lambda: (helm_source(server),), tmp_path / "root", policy)
    assert message == (
        f"Fetching helm chart {server.url('/charts')}@hello:latest: Downloading index.yaml: Expected it to be at most "
        "4096 bytes"
    )


def test_a_version_not_in_the_repository_and_a_missing_index_are_named(tmp_path: Path) -> None:
    server = repository(chart_tgz())
    message = fetch_error((server,), lambda: (helm_source(server, "9.9.9"),), tmp_path / "root")
    shown = server.url("/charts")
    assert (
        message
        == f'Fetching helm chart {shown}@hello:9.9.9: chart "hello" version "9.9.9" not found in {shown} repository'
    )
    empty = Server({})
    message = fetch_error((empty,), lambda: (helm_source(empty),), tmp_path / "root2")
    assert message.endswith("Downloading index.yaml: Expected 200 OK, but was '404 Not Found'")


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    (tmp_path / "canary").mkdir()
    (tmp_path / "canary" / "secret").write_text("precious")
    return tmp_path / "canary"


@pytest.mark.parametrize(
    ("more", "why"),
    [
        ({"hello/../../canary/secret": b"stolen"}, "entry 'hello/../../canary/secret' leaves the directory (..)"),
        ({"hello/link": (tarfile.SYMTYPE, "../../canary")}, "entry 'hello/link' is a symlink that resolves outside"),
        ({"hello/abs": (tarfile.SYMTYPE, "/etc")}, "entry 'hello/abs' is a symlink to an absolute path"),
        ({"hello/fifo": (tarfile.FIFOTYPE, "")}, "entry 'hello/fifo' is a device, FIFO or other special file"),
    ],
)
def test_a_hostile_chart_is_refused_naming_the_entry_and_the_canary_stays(
    tmp_path: Path, canary: Path, more: dict[str, Any], why: str
) -> None:
    server = repository(chart_tgz(more))
    message = fetch_error((server,), lambda: (helm_source(server),), tmp_path / "root")
    assert f": Unpacking chart: hello-1.2.0.tgz: {why}" in message
    assert (canary / "secret").read_text() == "precious"
    assert not any((tmp_path / "root").iterdir())


@pytest.mark.parametrize(
    ("chart", "message"),
    [
        (
            tar_bytes({"hello/Chart.yaml": CHART_YAML}),
            "Unpacking chart: hello-1.2.0.tgz: Expected a gzipped tar archive",
        ),
        (
            tar_bytes({"a/Chart.yaml": CHART_YAML, "b/Chart.yaml": CHART_YAML}, compress=True),
            "Finding single helm chart: Expected single directory in charts directory, but was: ['a' 'b']",
        ),
        (tar_bytes({"hello/values.yaml": b"a: 1"}, compress=True), "Reading Chart.yaml: the chart has no Chart.yaml"),
        (
            tar_bytes({"hello/Chart.yaml": b"name: hello\n"}, compress=True),
            "Retrieving helm chart metadata: Expected non-empty chart version",
        ),
        (
            tar_bytes({"hello/Chart.yaml": (tarfile.SYMTYPE, "values.yaml"), "hello/values.yaml": b"v"}, compress=True),
            "Reading Chart.yaml: Expected a regular file",
        ),
    ],
)
def test_a_chart_that_is_not_one_is_refused(tmp_path: Path, chart: bytes, message: str) -> None:
    server = repository(chart)
    assert message in fetch_error((server,), lambda: (helm_source(server),), tmp_path / "root")


# --- an OCI registry ------------------------------------------------------------------------------------------------


def push_chart(registry: Registry, tag: str, chart: bytes, config_type: str = CONFIG_MEDIA_TYPE) -> str:
    config = json.dumps({"name": "hello", "version": tag}).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": config_type, **descriptor(config)},
            "layers": [{"mediaType": CHART_MEDIA_TYPES[0], **descriptor(chart)}],
        }
    ).encode()
    for blob in (config, chart):
        registry.routes[f"/v2/charts/hello/blobs/sha256:{sha(blob)}"] = body(blob)
    registry.routes[f"/v2/charts/hello/manifests/{tag}"] = body(manifest, **{"Content-Type": OCI_MANIFEST})
    return f"sha256:{sha(manifest)}"


def test_a_chart_is_pulled_from_a_registry_and_locked(tmp_path: Path) -> None:
    registry = Registry()
    push_chart(registry, "1.2.0_b1", chart_tgz())
    lock = fetch_with((registry,), lambda: (helm_source(registry, "1.2.0+b1"),), tmp_path / "root", PLAIN_HTTP)
    assert files(tmp_path / "root") == {
        "Chart.yaml": CHART_YAML.decode(),
        "templates": "<dir>",
        "templates/cm.yaml": TEMPLATE.decode(),
    }
    assert lock["directories"] == [{"path": ".", "helmChart": {"version": "1.2.0", "appVersion": "4.5"}}]


def test_a_registry_artifact_that_is_no_chart_or_over_plain_http_without_the_flag_is_refused(tmp_path: Path) -> None:
    registry = Registry()
    push_chart(registry, "1.0.0", chart_tgz(), config_type="application/vnd.oci.image.config.v1+json")
    message = fetch_error((registry,), lambda: (helm_source(registry, "1.0.0"),), tmp_path / "root", PLAIN_HTTP)
    assert f"expected a helm chart (config media type {CONFIG_MEDIA_TYPE})" in message
    message = fetch_error((registry,), lambda: (helm_source(registry, "1.0.0"),), tmp_path / "root", HTTPS_ONLY)
    assert message.startswith(f"Fetching helm chart oci://{registry.host}/charts@hello:1.0.0: ")
    assert "cannot reach" in message, message  # https to a registry that speaks plain http
