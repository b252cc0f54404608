"""A PackageRepository's template stage: from the fetched files to the Packages and PackageMetadatas it deploys, as
kapp-controller's pkgrepository/app_template.go makes them.

1. The content must have a `packages/` directory at its root.
2. Every file under it is read: through ytt (`--ignore-unknown-comments`: repository files may be ytt templates, and
   plain YAML with `#` comments is fine), or, when the controller has no ytt, as plain YAML (`*.yml`, `*.yaml`).
3. Documents that are not a Package or PackageMetadata of `data.packaging.carvel.dev/v1alpha1` (or kapply's
   `data.packaging.kapply.dev/v1alpha1`) are dropped silently, as kapp-controller drops them (a later repository
   format may bring kinds this controller does not know).
4. Each is read as kapp-controller's Go types read it: fields they do not know are dropped, a field of the wrong type
   fails (`Deserializing resource: ...`); it is written under the data group the controller serves (kapply's, or
   kapp-controller's in carvel mode: kapply.controller.vocabulary), without a namespace (the repository's
   is forced), with kapp-controller's annotations (the repository that brought it, no last-applied copy, no wait,
   create falling back to update), and a Package's kapp-controller name `<refName>.<version>` becomes kapply's
   (names.package_name).
5. For an `imgpkgBundle` source only (an `image`, git, http or inline source has no lock kapp-controller reads),
   kbld rewrites the image references of what step 4 made to the digests of the bundle's ImagesLock
   (`kbld -f - -f .imgpkg/images.yml --build=false`, kapp-controller's last template pass): a Package's
   `template.spec.fetch[].imgpkgBundle.image` written `example.com/pkg:1.0.0` and locked under that
   `kbld.carvel.dev/id` becomes the locked `...@sha256:...` reference (the bundle's own repository when it was copied
   with its images: kapply.oci.bundle rewrote the lock as `imgpkg pull -b` does), with kbld's `kbld.k14s.io/images`
   annotation; a reference the lock does not name is resolved by kbld against its registry (a digest reference is
   kept as it is). The lock path is confined to the fetch directory after following symlinks. When the controller has
   no kbld ($KAPPLY_KBLD unset and none on PATH) the references are kept as written, as step 2 reads plain YAML
   without ytt.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kapply import objects, programs, yamlio
from kapply.controller.fetch import FetchError
from kapply.controller.runner import ToolError, run
from kapply.controller.spec import SpecError
from kapply.controller.template import STDIN, kbld
from kapply.errors import KapplyError, ManifestError
from kapply.objects import Obj
from kapply.packaging import names, spec

PACKAGES_DIRECTORY = "packages"
IMAGES_LOCK = ".imgpkg/images.yml"  # an imgpkg bundle's ImagesLock
KBLD_PATHS = (STDIN, IMAGES_LOCK)  # kapp-controller's kbld pass over a bundle's documents
INVALID_CONTENT = "Invalid package repository content: must contain 'packages/' directory but did not"
# Set on every document (kapp-controller's overlay sets them, replacing any value the repository gave).
ANNOTATIONS = {
    objects.DISABLE_ORIGINAL: "",
    objects.DISABLE_WAIT: "",
    "kapp.k14s.io/create-strategy": "fallback-on-update-or-noop",
}
_DATA_API_VERSIONS = {f"{g}/{names.VERSION}" for g in (names.CARVEL_DATA_GROUP, names.DATA_GROUP)}
_KINDS = {names.PACKAGE.kind, names.PACKAGE_METADATA.kind}

# The fields kapp-controller's types (v0.53) know, by kind: None keeps a value whole; a dict lists known subfields; a
# list holds the schema of its items. Anything else is dropped, as a decode into the Go types and back drops it.
_Schema = dict[str, Any]
_PACKAGE: _Schema = {
    "refName": None,
    "version": None,
    "licenses": None,
    "releasedAt": None,
    "capacityRequirementsDescription": None,
    "releaseNotes": None,
    "template": {"spec": None},
    "valuesSchema": {"openAPIv3": None},
    "includedSoftware": [{"displayName": None, "version": None, "description": None}],
    "kappControllerVersionSelection": {"constraints": None},
    "kubernetesVersionSelection": {"constraints": None},
}
_PACKAGE_METADATA: _Schema = {
    "displayName": None,
    "longDescription": None,
    "shortDescription": None,
    "iconSVGBase64": None,
    "providerName": None,
    "maintainers": [{"name": None}],
    "categories": None,
    "supportDescription": None,
}
_SCHEMAS = {names.PACKAGE.kind: _PACKAGE, names.PACKAGE_METADATA.kind: _PACKAGE_METADATA}
_METADATA = ("name", "labels", "annotations")


class ContentError(KapplyError):
    """The repository's content cannot be made into Packages; `stderr` is what ytt said, `exit_code` its status (-1:
    no tool failed, as kapp-controller reports a failure of its own)."""

    def __init__(self, message: str, stderr: str = "", exit_code: int = -1) -> None:
        super().__init__(message)
        self.stderr = stderr
        self.exit_code = exit_code


def check_layout(root: Path) -> Path:
    """The `packages/` directory of the fetched content (a symlink does not count, as with kapp-controller)."""
    directory = root / PACKAGES_DIRECTORY
    if not directory.is_dir() or directory.is_symlink():
        raise ContentError(INVALID_CONTENT)
    return directory


def tool_available(tool: str) -> bool:
    """Whether the controller has `tool` (ytt, kbld: $KAPPLY_<TOOL> or PATH). A $KAPPLY_<TOOL> that names no program
    is an error, not a reason to go without the tool."""
    try:
        programs.find(tool)
    except programs.ProgramNotFound as e:
        if os.environ.get(programs.ENV[tool]):
            raise ContentError(f"Templating dir: {e}") from None
        return False
    return True


def ytt_available() -> bool:
    """Whether the controller has ytt ($KAPPLY_YTT or PATH)."""
    return tool_available("ytt")


async def read_documents(root: Path, directory: Path) -> list[Any]:
    """The documents of every file under `directory`: ytt's output when the controller has ytt, else the YAML files'."""
    if not ytt_available():
        return plain_documents(directory)
    try:
        ran = await run("ytt", "-f", str(directory), "--ignore-unknown-comments", cwd=root)
    except ToolError as e:
        raise ContentError(f"Templating dir: {e}", e.stderr, e.exit_code) from e
    return _load(ran.stdout, "ytt output")


def plain_documents(directory: Path) -> list[Any]:
    """The documents of the `.yml` and `.yaml` files under `directory`, files in the order of their paths (ytt's
    order)."""
    found = sorted(
        Path(current, name).relative_to(directory)
        for current, _, files in os.walk(directory)
        for name in files
        if name.endswith((".yml", ".yaml"))
    )
    docs: list[Any] = []
    for relative in found:
        try:
            text = (directory / relative).read_bytes()
        except OSError as e:
            raise ContentError(f"Templating dir: Reading '{PACKAGES_DIRECTORY}/{relative}': {e.strerror}") from None
        docs += _load(text, f"{PACKAGES_DIRECTORY}/{relative}")
    return docs


def _load(text: str | bytes, source: str) -> list[Any]:
    try:
        return yamlio.load_all(text, source, ManifestError)
    except ManifestError as e:
        raise ContentError(f"Templating dir: {e}") from None


def _prune(value: Any, schema: Any) -> Any:
    if schema is None:
        return value
    if isinstance(schema, list):
        return [_prune(item, schema[0]) for item in value] if isinstance(value, list) else value
    if not isinstance(value, dict):
        return value  # a wrong type: the type check says so
    return {k: _prune(v, schema[k]) for k, v in value.items() if k in schema}


def is_repository_kind(doc: Any) -> bool:
    """A Package or PackageMetadata of kapp-controller's or kapply's data group: what a repository may bring."""
    return isinstance(doc, dict) and doc.get("apiVersion") in _DATA_API_VERSIONS and doc.get("kind") in _KINDS


def repository_object(doc: Obj, namespace: str, repository: str, api_version: str) -> Obj:
    """One Package or PackageMetadata as the repository deploys it (see the module's docs), under `api_version` (the
    data group the controller serves); ContentError for a field of the wrong type."""
    kind = doc["kind"]
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        raise ContentError(f"Deserializing resource: Expected metadata to be a map, got {type(meta).__name__}")
    body = _prune(doc.get("spec"), _SCHEMAS[kind]) if doc.get("spec") is not None else {}
    obj: Obj = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {k: meta[k] for k in _METADATA if meta.get(k) is not None},
        "spec": body,
    }
    try:
        if kind == names.PACKAGE.kind:
            package = spec.parse_package(obj)
            if obj["metadata"].get("name") == f"{package.ref_name}.{package.version}":
                obj["metadata"]["name"] = names.package_name(package.ref_name, package.version)
        else:
            spec.parse_package_metadata(obj)
        for field in ("labels", "annotations"):
            values = obj["metadata"].get(field) or {}
            if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
                raise SpecError(f"Expected metadata.{field} to be a map of strings")
    except SpecError as e:
        raise ContentError(f"Deserializing resource: {e}") from None
    annotations = {**(obj["metadata"].get("annotations") or {}), **ANNOTATIONS}
    annotations[names.REPOSITORY_REF_ANNOTATION] = f"{namespace}/{repository}"
    obj["metadata"]["annotations"] = annotations
    return obj


def repository_objects(docs: list[Any], namespace: str, repository: str, api_version: str) -> list[Obj]:
    """The Packages and PackageMetadatas among a repository's documents, as it deploys them (under `api_version`)."""
    return [repository_object(doc, namespace, repository, api_version) for doc in docs if is_repository_kind(doc)]


async def resolve_images(objs: list[Obj], root: Path) -> list[Obj]:
    """`objs` (repository_objects') with their image references rewritten by kbld to the digests of the fetched
    bundle's ImagesLock `root/.imgpkg/images.yml` (step 5 of the module's docs); `objs` as they are when the controller
    has no kbld. ContentError when the lock leaves the fetch directory or kbld fails (what it said in `stderr`)."""
    if not tool_available("kbld"):
        return objs
    # as JSON documents: YAML that every parser reads alike (a string such as `1e3` stays a string)
    stream = "".join(f"---\n{json.dumps(obj)}\n" for obj in objs)
    try:
        printed = await kbld(KBLD_PATHS, root, stream)
    except ToolError as e:
        raise ContentError(f"Templating dir: {e}", e.stderr, e.exit_code) from e
    except FetchError as e:  # a symlinked lock leading outside: its path said, never its content
        raise ContentError(f"Templating dir: {e}") from None
    resolved = [doc for doc in _load(printed, "kbld output") if doc is not None]
    if len(resolved) != len(objs) or not all(is_repository_kind(doc) for doc in resolved):
        raise ContentError("Templating dir: Expected kbld to print back the Packages and PackageMetadatas it was given")
    return resolved
