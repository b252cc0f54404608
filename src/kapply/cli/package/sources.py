"""Where `package repository add|update --url` fetches from. kctrl takes an OCI reference only (an imgpkg bundle);
kapply also takes a git repository or an http(s) archive, the fetch kind picked from the URL:

- `git@host:org/repo.git`, `ssh://...`, `git://...`, or any URL whose path ends in `.git`: `git` (its default branch,
  `HEAD`; git's `secretRef` with `--secret-ref`);
- an `http://` or `https://` URL whose path ends in `.tgz`, `.tar.gz`, `.tar` or `.zip`: `http`;
- another `http(s)://` URL: refused (neither a repository nor an archive kapply can tell);
- anything else: an OCI reference, `imgpkgBundle`, as kctrl: a reference without tag or digest selects the highest
  tag within `--semver-tag-constraints` (`tagSelection.semver`; all versions when empty), a reference with one ignores
  them.
"""

from __future__ import annotations

from enum import StrEnum
from urllib.parse import urlsplit

from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.oci.errors import OciError
from kapply.oci.reference import DEFAULT_TAG, parse_reference

ARCHIVE_SUFFIXES = (".tgz", ".tar.gz", ".tar", ".zip")
GIT_SCHEMES = ("ssh", "git", "git+ssh")


class SourceKind(StrEnum):
    """A repository's fetch source, named as the PackageRepository's `spec.fetch` names it."""

    IMGPKG_BUNDLE = "imgpkgBundle"
    GIT = "git"
    HTTP = "http"


def source_kind(url: str) -> SourceKind:
    """The fetch kind a `--url` names (module docs); KapplyError for an http(s) URL that is neither."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower() if "://" in url else ""
    if url.startswith("git@") or scheme in GIT_SCHEMES or (parts.path if scheme else url).endswith(".git"):
        return SourceKind.GIT
    if scheme in ("http", "https"):
        if parts.path.lower().endswith(ARCHIVE_SUFFIXES):
            return SourceKind.HTTP
        raise KapplyError(
            f"Expected --url '{url}' to be an OCI reference, a git repository (ending in .git) or an http(s) archive "
            f"({', '.join(ARCHIVE_SUFFIXES)})"
        )
    return SourceKind.IMGPKG_BUNDLE


def _names_no_tag(url: str) -> bool:
    """kctrl's test: the reference has no tag or digest (`latest` counts only when written)."""
    try:
        reference = parse_reference(url)
    except OciError as e:
        raise KapplyError(f"Parsing OCI registry URL: {e}") from None
    return reference.digest is None and reference.tag == DEFAULT_TAG and not url.endswith(f":{DEFAULT_TAG}")


def repository_fetch(url: str, semver_constraints: str, secret_ref: str) -> Obj:
    """A PackageRepository's `spec.fetch` for `--url`, `--semver-tag-constraints` and `--secret-ref`."""
    kind = source_kind(url)
    source: Obj
    if kind is SourceKind.IMGPKG_BUNDLE:
        source = {"image": url}
        if _names_no_tag(url):
            source["tagSelection"] = {"semver": {"constraints": semver_constraints} if semver_constraints else {}}
    elif semver_constraints:
        named = "a git repository" if kind is SourceKind.GIT else "an http archive"
        raise KapplyError(f"Expected --semver-tag-constraints only with an OCI reference (--url names {named})")
    else:
        source = {"url": url}
    if secret_ref:
        source["secretRef"] = {"name": secret_ref}
    return {kind.value: source}


def updated_fetch(existing: Obj, url: str, semver_constraints: str, secret_ref: str) -> Obj:
    """`spec.fetch` after `repository update`: the new source, keeping the existing one's `secretRef` when
    `--secret-ref` is not given and the source kind stays the same (kctrl keeps it)."""
    fetch = repository_fetch(url, semver_constraints, secret_ref)
    ((kind, source),) = fetch.items()
    kept = (existing.get(kind) or {}).get("secretRef") if isinstance(existing.get(kind), dict) else None
    if not secret_ref and kept:
        source["secretRef"] = kept
    return fetch
