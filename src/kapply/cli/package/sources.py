"""Where `package repository add|update --url` fetches from. kctrl takes an OCI reference only (an imgpkg bundle);
kapply also takes a git repository or an http(s) archive, the fetch kind picked from the URL:

- `git@host:org/repo.git`, `ssh://...`, `git://...`, or any URL whose path ends in `.git`: `git` (its default branch,
  `HEAD`; git's `secretRef` with `--secret-ref`);
- an `http://` or `https://` URL whose path ends in `.tgz`, `.tar.gz`, `.tar` or `.zip`: `http`;
- anything else: an OCI reference, `imgpkgBundle`, as kctrl: a reference without tag or digest selects the highest
  tag within `--semver-tag-constraints` (`tagSelection.semver`; all versions when empty), a reference with one ignores
  them. The reference is read as kctrl reads it (go-containerregistry's weak validation, `_weak_identifier`), which
  takes more than a registry serves: `https://carvel.dev` is a repository `/carvel.dev` of a registry `https:`, so
  the PackageRepository is made and its fetch fails, and a later `repository update` mends it, as with kctrl.
"""

from __future__ import annotations

import re
import string
from enum import StrEnum
from urllib.parse import urlsplit

from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.oci.reference import DEFAULT_TAG

ARCHIVE_SUFFIXES = (".tgz", ".tar.gz", ".tar", ".zip")
GIT_SCHEMES = ("ssh", "git", "git+ssh")
# go-containerregistry's name package (kctrl 0.53's): the characters and lengths it checks.
_TAG_CHARS = frozenset(string.ascii_letters + string.digits + "_-.")
_REPOSITORY_CHARS = frozenset(string.ascii_lowercase + string.digits + "_-./")
_SHA256 = re.compile(r"sha256:[0-9a-f]{64}")
# A registry is an RFC 3986 authority (Go's url.Parse("//" + registry) gives it back as its host): host[:port].
_REGISTRY = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::[0-9]*)?")


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
    if scheme in ("http", "https") and parts.path.lower().endswith(ARCHIVE_SUFFIXES):
        return SourceKind.HTTP
    return SourceKind.IMGPKG_BUNDLE


def _repository(name: str) -> bool:
    """go-containerregistry's NewRepository, weakly: `[registry/]repository`, the first component a registry when
    it holds a `.` or a `:`."""
    first, slash, rest = name.partition("/")
    registry, repository = (first, rest) if slash and ("." in first or ":" in first) else ("", name)
    return 2 <= len(repository) <= 255 and set(repository) <= _REPOSITORY_CHARS and bool(_REGISTRY.fullmatch(registry))


def _tag(name: str) -> str | None:
    """go-containerregistry's NewTag, weakly: the tag (`latest` when none is written), None when not a reference."""
    base, _, tag = name.rpartition(":")
    if not base or "/" in tag:
        base, tag = name, ""
    if tag and not (len(tag) <= 127 and set(tag) <= _TAG_CHARS):
        return None
    return (tag or DEFAULT_TAG) if _repository(base) else None


def _weak_identifier(url: str) -> str:
    """The tag or digest of `url` as kctrl reads it (go-containerregistry's ParseReference with WeakValidation: a tag
    reference, else a digest one); KapplyError, in kctrl's words, when it is neither."""
    tag = _tag(url)
    if tag is not None:
        return tag
    base, at, digest = url.partition("@")
    if at and _SHA256.fullmatch(digest) and (_tag(base) is not None or _repository(base)):  # `repo[:tag]@digest`
        return digest
    raise KapplyError(f"Parsing OCI registry URL: could not parse reference: {url}")


def _names_no_tag(url: str) -> bool:
    """kctrl's test: the reference has no tag or digest (`latest` counts only when written)."""
    return _weak_identifier(url) == DEFAULT_TAG and not url.endswith(f":{DEFAULT_TAG}")


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
