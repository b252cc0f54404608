"""Fetching a `helmChart` source: a chart by name and version from a helm repository or an OCI registry, as
kapp-controller fetches it through vendir (`helm fetch <name> --repo <url> --version <v> --untar`, or `helm pull
oci://<repository>/<name> --version <v> --untar`), without running helm: the chart is untrusted input like any other
source, so it is downloaded and unpacked by the rules of kapply.controller.fetch (and in the sandbox with them).

- A helm repository (`https://`, `http://`): its `index.yaml` (at most INDEX_MAX_BYTES, or the fetch byte limit when
  lower) is read and the chart's version chosen as helm chooses it: the entry whose version is written exactly as
  asked, else the highest version within the range asked (carvel's semver ranges, a comma read as a space), else,
  when no version is asked, the highest one that is no prerelease. The chart's first URL (relative ones resolved
  against the repository's URL, as helm does) is downloaded. `repository.secretRef`'s `username` and `password` go
  to the repository's own origin (scheme, host and port) only: helm does not pass them to a chart served elsewhere
  (its `--pass-credentials` is off), and neither does a redirect (kapply.controller.fetch.http_get).
- An OCI registry (`oci://host/path`): the artifact `host/path/<name>:<version>` (a `+` in the version is a `_` in
  the tag, helm's rule) is pulled with kapply.oci: its config must be helm's, its chart layer (helm's media type, or
  the legacy `application/tar+gzip`) is downloaded and checked against its digest. A version is required, as vendir
  requires it. `repository.secretRef` holds registry credentials, read as for an `image` source.
- The chart archive must be a gzipped tar; it is unpacked by kapply.oci.extract's rules (no entry outside the
  directory, no symlink leading out, no devices, the fetch limits), its one top-level directory (vendir's "single
  helm chart") must hold a `Chart.yaml` with a version, and that directory's contents are what the fetch path holds.

The status's lock is vendir's: `helmChart: {version, appVersion}` of the Chart.yaml fetched.

kapply.controller.fetch imports this module, and this module uses fetch's primitives (FetchError, http_get, the
tree checks) through the module object at call time only, so either may be imported first.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yarl

from kapply import yamlio
from kapply.controller import fetch as base
from kapply.controller.spec import HelmChart, Http
from kapply.oci import ExtractLimits, OciError, RegistryClient, parse_reference
from kapply.oci import Limits as RegistryLimits
from kapply.oci.extract import Extraction
from kapply.oci.registry import Descriptor
from kapply.versions import SelectionError, SemverError, VersionSelection, parse_range, select_version

OCI_SCHEME = "oci://"
INDEX_MAX_BYTES = 64 << 20  # a repository's index.yaml (the largest public ones are a few tens of MiB)
CHART_YAML_MAX_BYTES = 1 << 20
CONFIG_MEDIA_TYPE = "application/vnd.cncf.helm.config.v1+json"
CHART_MEDIA_TYPES = ("application/vnd.cncf.helm.chart.content.v1.tar+gzip", "application/tar+gzip")  # and legacy
GZIP_MAGIC = b"\x1f\x8b"
# A chart name: what helm's Chart.yaml allows as a directory name, and never a path or an option.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,249}")


@dataclass(frozen=True, slots=True)
class ChartMeta:
    """What vendir's lock records of a fetched chart (its Chart.yaml)."""

    version: str
    app_version: str


def describe(chart: HelmChart) -> str:
    """vendir's description of the source: `<repository url>@<name>:<version or latest>`."""
    return f"{base.public_url(chart.url)}@{chart.name}:{chart.version or 'latest'}"


def check(chart: HelmChart, where: str) -> None:
    """Refuse a name that is no chart name (a path, an option) and a version that could be taken for an option or
    holds spaces or control characters. `where` names the source (`spec.fetch[0].helmChart`)."""
    if not _NAME.fullmatch(chart.name):
        raise base.FetchError(
            f"Expected {where}.name to be a chart name (letters, digits, '.', '_' and '-', not starting with '.', "
            f"'_' or '-', no '/'), got {_quoted(chart.name)}"
        )
    if chart.version.startswith("-"):
        raise base.FetchError(f"Expected {where}.version not to start with '-'")
    if any(ord(c) < 32 or ord(c) == 127 for c in chart.version):
        raise base.FetchError(f"Expected {where}.version to have no control characters")


def _quoted(text: str) -> str:
    """`text` quoted for a message, cut at 80 characters."""
    return repr(text[:80] + ("..." if len(text) > 80 else ""))


# --- a helm repository's index ----------------------------------------------------------------------------------------


def index_url(repository: yarl.URL) -> yarl.URL:
    """Where helm reads a repository's index: `<url>/index.yaml` (the URL's query kept)."""
    return repository.with_path(repository.path.rstrip("/") + "/index.yaml", keep_query=True)


def chart_url(repository: yarl.URL, url: str, where: str) -> yarl.URL:
    """A chart URL of the index, resolved as helm resolves it: an absolute URL as it is, a relative one against the
    repository's URL (taken as a directory). Only http and https."""
    return base.http_url(url, where) if "://" in url else _relative(repository, url, where)


def _relative(repository: yarl.URL, url: str, where: str) -> yarl.URL:
    if any(ord(c) < 32 or ord(c) == 127 for c in url):
        raise base.FetchError(f"Expected {where} to have no control characters")
    directory = repository.with_path(repository.path.rstrip("/") + "/", keep_query=False)
    try:
        resolved = directory.join(yarl.URL(url))
    except ValueError as e:
        raise base.FetchError(f"Expected {where} to be a URL: {e}") from None
    if resolved.scheme not in base.HTTP_SCHEMES or not resolved.host:
        raise base.FetchError(f"Expected {where} to be an http or https URL")
    return resolved


def choose(index: Any, chart: HelmChart, shown_url: str) -> tuple[str, str]:
    """(the version chosen, its first URL) from the parsed index.yaml, as helm's `repo.IndexFile.Get` chooses: the
    entry written exactly as `chart.version`, else the highest version in that range (no version: the highest that is
    no prerelease). Entries without a string version or URLs are skipped (helm drops invalid ones)."""
    asked = f"chart {_go_quote(chart.name)}" + (f" version {_go_quote(chart.version)}" if chart.version else "")
    not_found = base.FetchError(f"{asked} not found in {shown_url} repository")
    if not isinstance(index, dict):
        raise base.FetchError(f"Expected {shown_url}/index.yaml to be a map")
    entries = index.get("entries")
    listed = entries.get(chart.name) if isinstance(entries, dict) else None
    if not isinstance(listed, list):
        raise not_found
    urls: dict[str, Any] = {}
    for entry in listed:
        if isinstance(entry, dict) and isinstance(entry.get("version"), str):
            urls.setdefault(entry["version"], entry.get("urls"))
    version = chart.version if chart.version in urls else _highest(list(urls), chart.version, asked, not_found)
    found = urls[version]
    if not isinstance(found, list) or not found or not isinstance(found[0], str) or not found[0]:
        raise base.FetchError(f"{asked} has no downloadable URLs")
    return version, found[0]


def _highest(versions: list[str], asked_range: str, asked: str, not_found: base.FetchError) -> str:
    """The highest of `versions` within `asked_range` (a comma read as a space), or that is no prerelease when it is
    empty; `not_found` when there is none."""
    constraints = asked_range.replace(",", " ")
    if constraints:
        try:
            parse_range(constraints)
        except SemverError as e:
            raise base.FetchError(f"{asked}: Expected a version or a range of versions: {e}") from None
    try:
        return select_version(versions, VersionSelection(constraints))
    except SelectionError:
        raise not_found from None


def _go_quote(text: str) -> str:
    """Go's %q of a short text (helm's messages quote names and versions so)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in escaped[:200]) + '"'


# --- fetching --------------------------------------------------------------------------------------------------------


async def fetch_chart(
    target: Path, chart: HelmChart, read: base.ReadSource, policy: base.FetchPolicy, where: str, prefix: str
) -> dict[str, str]:
    """Fetch the chart into a temporary directory, unpack and check it, copy its directory's contents into target;
    vendir's lock entry (`version`, `appVersion`)."""
    what = f"Fetching helm chart {describe(chart)}"
    check(chart, where)
    with tempfile.TemporaryDirectory(prefix="kapply-helm-", ignore_cleanup_errors=True) as scratch_dir:
        scratch = Path(scratch_dir)
        tree = scratch / "tree"
        tree.mkdir()
        try:
            if chart.url.startswith(OCI_SCHEME):
                fetching = _pull(scratch, chart, read, policy, where)
            else:
                fetching = _download(scratch, chart, read, policy, where)
            archive, version = await asyncio.wait_for(fetching, policy.timeout)
        except TimeoutError:
            raise policy.too_late(f"{what}: not fetched") from None
        except (base.FetchError, OciError) as e:
            raise base.FetchError(f"{what}: {e}") from None
        try:
            await asyncio.to_thread(_unpack, archive, f"{chart.name}-{version}.tgz", tree, policy.limits)
            directory, meta = single_chart(tree)
        except (base.FetchError, OciError) as e:
            raise base.FetchError(f"{what}: {e}") from None
        base._place(directory, "", target, policy.limits, prefix, what, "the chart")
    return {"version": meta.version, "appVersion": meta.app_version}


async def _download(
    scratch: Path, chart: HelmChart, read: base.ReadSource, policy: base.FetchPolicy, where: str
) -> tuple[Path, str]:
    """The repository's index.yaml, then the chart it names; the chart archive's path and the version chosen."""
    repository = base.http_url(chart.url, f"{where}.repository.url")
    authorization = await base._http_authorization(Http(chart.url, secret=chart.secret), repository, read)
    repository = repository.with_user(None)
    cap = min(INDEX_MAX_BYTES, policy.limits.max_bytes)
    index_policy = replace(policy, limits=replace(policy.limits, max_bytes=cap))
    try:
        await base.http_get(index_url(repository), authorization, scratch / "index.yaml", index_policy)
    except base.FetchError as e:
        if str(e) == str(index_policy.limits.too_many_bytes()):
            raise base.FetchError(f"Downloading index.yaml: Expected it to be at most {cap} bytes") from None
        raise base.FetchError(f"Downloading index.yaml: {e}") from None
    shown = base.public_url(chart.url)
    index = yamlio.load((scratch / "index.yaml").read_bytes(), f"{shown}/index.yaml", base.FetchError)
    version, url = choose(index, chart, shown)
    location = chart_url(repository, url, f"the URL of {chart.name} {version} in {shown}/index.yaml")
    same_origin = location.origin() == repository.origin()
    archive = scratch / "chart.tgz"
    try:
        await base.http_get(location, authorization if same_origin else None, archive, policy)
    except base.FetchError as e:
        raise base.FetchError(f"Downloading chart {base.public_url(str(location))}: {e}") from None
    return archive, version


def oci_reference(chart: HelmChart, where: str) -> str:
    """`<host/path>/<name>:<tag>` of an `oci://` repository (helm's tag: the version with `+` as `_`)."""
    if not chart.version:
        raise base.FetchError(f"Expected {where}.version to be non-empty (an oci:// repository names a version)")
    repository = chart.url.removeprefix(OCI_SCHEME).rstrip("/")
    return f"{repository}/{chart.name}:{chart.version.replace('+', '_')}"


async def _pull(
    scratch: Path, chart: HelmChart, read: base.ReadSource, policy: base.FetchPolicy, where: str
) -> tuple[Path, str]:
    """The chart layer of the OCI artifact, checked against its digest; the archive's path and the version."""
    ref = parse_reference(oci_reference(chart, where))
    auth = await base._registry_auth(chart.secret, read)
    plain_http = policy.allow_plain_http_registries and ref.is_loopback
    limits = RegistryLimits(max_blob_bytes=policy.limits.max_bytes, min_rate=policy.min_rate)
    client = RegistryClient(auth, plain_http=plain_http, limits=limits, destinations=policy.destinations)
    async with client:
        manifest = await client.manifest(ref, platform=None)
        layer = chart_layer(str(manifest.reference), manifest.config, manifest.layers)
        archive = scratch / "chart.tgz"
        await client.download(manifest.reference, layer, archive)
    return archive, chart.version


def chart_layer(ref: str, config: Descriptor, layers: tuple[Descriptor, ...]) -> Descriptor:
    """The chart's layer of a helm artifact (its config helm's, one layer of a chart media type), as helm's registry
    client requires them."""
    if config.media_type != CONFIG_MEDIA_TYPE:
        got = _quoted(config.media_type)
        raise base.FetchError(f"{ref}: expected a helm chart (config media type {CONFIG_MEDIA_TYPE}), got {got}")
    charts = [layer for layer in layers if layer.media_type in CHART_MEDIA_TYPES]
    if len(charts) != 1:
        raise base.FetchError(f"{ref}: expected one layer of media type {CHART_MEDIA_TYPES[0]}, found {len(charts)}")
    return charts[0]


# --- the chart's files --------------------------------------------------------------------------------------------


def _unpack(archive: Path, name: str, tree: Path, limits: base.Limits) -> None:
    """A gzipped tar, by kapply.oci.extract's rules, into the empty directory `tree`; `name` names it in messages."""
    with open(archive, "rb") as f:
        if f.read(2) != GZIP_MAGIC:
            raise base.FetchError(f"Unpacking chart: {name}: Expected a gzipped tar archive (a helm chart .tgz)")
    extraction = Extraction(tree, ExtractLimits(limits.max_bytes, limits.max_files, limits.max_depth))
    try:
        extraction.layer(archive, name)
        extraction.finish(name)
    except OciError as e:
        raise base.FetchError(f"Unpacking chart: {e}") from None


def single_chart(tree: Path) -> tuple[Path, ChartMeta]:
    """The one directory at the top of the unpacked chart (vendir's rule), and its Chart.yaml's version and
    appVersion."""
    directories = sorted(entry.name for entry in os.scandir(tree) if entry.is_dir(follow_symlinks=False))
    if len(directories) != 1:
        listed = " ".join(_quoted(name) for name in directories[:5])
        raise base.FetchError(
            f"Finding single helm chart: Expected single directory in charts directory, but was: [{listed}]"
        )
    directory = tree / directories[0]
    return directory, chart_meta(directory / "Chart.yaml")


def chart_meta(path: Path) -> ChartMeta:
    """The version (required) and appVersion of a Chart.yaml, a regular file of at most CHART_YAML_MAX_BYTES."""
    where = "Retrieving helm chart metadata"
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise base.FetchError(f"{where}: Reading Chart.yaml: the chart has no Chart.yaml") from None
    if not stat.S_ISREG(info.st_mode):
        raise base.FetchError(f"{where}: Reading Chart.yaml: Expected a regular file")
    if info.st_size > CHART_YAML_MAX_BYTES:
        raise base.FetchError(f"{where}: Reading Chart.yaml: Expected at most {CHART_YAML_MAX_BYTES} bytes")
    meta = yamlio.load_mapping(path.read_bytes(), "Chart.yaml", lambda m: base.FetchError(f"{where}: {m}"))
    version, app_version = meta.get("version"), meta.get("appVersion")
    if not isinstance(version, str | int | float) or isinstance(version, bool) or not str(version):
        raise base.FetchError(f"{where}: Expected non-empty chart version")
    shown = "" if app_version is None or isinstance(app_version, dict | list) else str(app_version)
    return ChartMeta(str(version), shown)
