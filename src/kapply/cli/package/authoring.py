"""The files kctrl's package authoring commands write and read, byte for byte as kctrl 0.53 writes them:

- `package-build.yml`: a `kctrl.carvel.dev/v1alpha1` PackageBuild (the package's name, the App spec it is built
  with, what its bundle holds and where it is pushed);
- `package-resources.yml`: the Package, PackageMetadata and PackageInstall `package init` made (kapp-controller's
  own API groups, whatever groups the cluster's controller serves: these files are kctrl's format);
- `pkgrepo-build.yml` and `package-repository.yml`: a repository's build and its PackageRepository;
- a release's artifacts: `<dir>/packages/<name>/metadata.yml` and `package.yml` (or `<version>.yml` in a
  repository's layout).

kctrl reads each into Go structs and writes them back with sigs.k8s.io/yaml: keys sorted, and the fields Go always
writes present even when empty (`creationTimestamp: null`, a Package's `releasedAt: null` and
`valuesSchema: {openAPIv3: null}`, an install's empty `status`). `go_*` below add those fields, and `write_yaml`
writes with kapply.diff.yaml_text (go-yaml's layout). kctrl writes its files with mode 0777 less the umask; kapply
writes 0666 less the umask, as any other file it saves.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from kapply import yamlio
from kapply.errors import KapplyError
from kapply.objects import Obj

BUILD_FILE = "package-build.yml"
RESOURCES_FILE = "package-resources.yml"
REPO_BUILD_FILE = "pkgrepo-build.yml"
REPOSITORY_FILE = "package-repository.yml"

BUILD_API_VERSION = "kctrl.carvel.dev/v1alpha1"
DATA_API_VERSION = "data.packaging.carvel.dev/v1alpha1"
PACKAGING_API_VERSION = "packaging.carvel.dev/v1alpha1"
LOCAL_FETCH_ANNOTATION = "kctrl.carvel.dev/local-fetch-0"
REPOSITORY_VERSION_ANNOTATION = "kctrl.carvel.dev/repository-version"
SEPARATOR = "\n---\n"


def read_text(path: str, what: str = "") -> str | None:
    """The file's text, None when there is none; other errors as Go's `open <path>: <why>`."""
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise KapplyError(f"{what}open {path}: {getattr(e, 'strerror', None) or e}") from None


def load_mapping(text: str, path: str) -> Obj:
    return yamlio.load_mapping(text, f"'{path}'", KapplyError)


def write_yaml(path: str | Path, *documents: Obj) -> None:
    """The documents as kctrl writes them: each through go-yaml, joined by kctrl's `\\n---\\n`."""
    from kapply.diff.yaml_text import to_yaml

    text = SEPARATOR.join(to_yaml(doc) for doc in documents)
    try:
        Path(path).write_text(text)
    except OSError as e:
        raise KapplyError(f"Writing {path}: {e.strerror or e}") from None


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise KapplyError(f"Expected {obj.get('kind') or 'a resource'}'s metadata to be a map")
    meta.setdefault("creationTimestamp", None)
    return meta


def _spec(obj: Obj) -> dict[str, Any]:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        raise KapplyError(f"Expected {obj.get('kind') or 'a resource'}'s spec to be a map")
    return spec


def go_package(obj: Obj) -> Obj:
    """A Package with the fields Go always writes."""
    _meta(obj)
    spec = _spec(obj)
    spec.setdefault("refName", "")
    spec.setdefault("version", "")
    spec.setdefault("releasedAt", None)
    spec.setdefault("template", {})
    if not isinstance(spec.get("valuesSchema"), dict):
        spec["valuesSchema"] = {}
    spec["valuesSchema"].setdefault("openAPIv3", None)
    return obj


def go_metadata(obj: Obj) -> Obj:
    _meta(obj)
    _spec(obj)
    return obj


def go_install(obj: Obj) -> Obj:
    _meta(obj)
    _spec(obj)
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("conditions", None)
        status.setdefault("friendlyDescription", "")
        status.setdefault("observedGeneration", 0)
    return obj


def go_build(obj: Obj) -> Obj:
    _meta(obj)
    _spec(obj)
    return obj


# --- package-build.yml ------------------------------------------------------------------------------------------------


def new_build() -> Obj:
    return {"apiVersion": BUILD_API_VERSION, "kind": "PackageBuild", "metadata": {"creationTimestamp": None}}


def read_build(*, required: bool) -> Obj:
    """package-build.yml: a new PackageBuild when there is none (unless `required`: then Go's `open` error)."""
    text = read_text(BUILD_FILE)
    if text is None:
        if required:
            raise KapplyError(f"open {BUILD_FILE}: no such file or directory")
        return new_build()
    return go_build(load_mapping(text, BUILD_FILE))


def _path(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def build_app_spec(build: Obj) -> dict[str, Any] | None:
    """spec.template.spec.app.spec: the App spec the package is built with (templates, deploy)."""
    found = _path(build, "spec", "template", "spec", "app", "spec")
    return found if isinstance(found, dict) else None


def set_build_app_spec(build: Obj, app_spec: dict[str, Any]) -> None:
    template = _spec(build).setdefault("template", {}).setdefault("spec", {})
    template.setdefault("app", {})["spec"] = app_spec


def build_export(build: Obj) -> dict[str, Any]:
    """The first of spec.template.spec.export (made when there is none)."""
    template = _spec(build).setdefault("template", {}).setdefault("spec", {})
    exports = template.get("export")
    if not isinstance(exports, list) or not exports or not isinstance(exports[0], dict):
        exports = template["export"] = [{}]
    first: dict[str, Any] = exports[0]
    return first


def include_paths(build: Obj) -> list[str]:
    paths = build_export(build).get("includePaths")
    return [str(p) for p in paths] if isinstance(paths, list) else []


# --- package-resources.yml --------------------------------------------------------------------------------------------

KINDS = {
    "Package": (DATA_API_VERSION, go_package),
    "PackageMetadata": (DATA_API_VERSION, go_metadata),
    "PackageInstall": (PACKAGING_API_VERSION, go_install),
}


def read_resources(*, required: bool) -> dict[str, list[Obj]]:
    """package-resources.yml's Packages, PackageMetadatas and PackageInstalls by kind (empty lists without a file,
    unless `required`). A document of another kind is refused as kctrl refuses it."""
    found: dict[str, list[Obj]] = {kind: [] for kind in KINDS}
    text = read_text(RESOURCES_FILE, f"Reading config '{RESOURCES_FILE}': ")
    if text is None:
        if required:
            raise KapplyError(f"Reading config '{RESOURCES_FILE}': open {RESOURCES_FILE}: no such file or directory")
        return found
    for doc in yamlio.load_all(text, f"'{RESOURCES_FILE}'", KapplyError):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise KapplyError(f"Parsing resource config '{RESOURCES_FILE}': Expected a resource, found {type(doc)}")
        api_version, kind = str(doc.get("apiVersion") or ""), str(doc.get("kind") or "")
        expected = KINDS.get(kind)
        if expected is None or expected[0] != api_version:
            raise KapplyError(
                f"Parsing resource config '{RESOURCES_FILE}': Unknown apiVersion '{api_version}' or kind '{kind}' "
                "for resource"
            )
        found[kind].append(expected[1](doc))
    return found


def only(found: dict[str, list[Obj]], kind: str) -> Obj | None:
    docs = found[kind]
    if len(docs) > 1:
        raise KapplyError(f"More than 1 {kind} found")
    return copy.deepcopy(docs[0]) if docs else None


def save_resources(package: Obj, metadata: Obj, install: Obj) -> None:
    write_yaml(RESOURCES_FILE, go_package(package), go_metadata(metadata), go_install(install))


def chdir(directory: str) -> None:
    """`--chdir`, with Go's message when it fails."""
    if not directory:
        return
    try:
        os.chdir(directory)
    except OSError as e:
        raise KapplyError(f"chdir {directory}: {(e.strerror or str(e)).lower()}") from None
