"""The documents `kapply dev` reads, as kctrl dev reads them (its local.NewConfigFromFiles): files (`-` for stdin)
of YAML documents, each an App, PackageInstall, Package, PackageMetadata, Secret or ConfigMap, and exactly one App
or one PackageInstall among them, with kctrl's messages. kapply also reads its own groups' kinds
(`kapply.dev/v1alpha1` App, `packaging.kapply.dev`, `data.packaging.kapply.dev`), all of one vocabulary; empty
documents are skipped (kctrl refuses a document of comments only). A document without a namespace gets the one of
`-n` (`with_namespace`), as kctrl applies its namespace flag; PackageMetadatas keep theirs, as kctrl's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kapply.controller.vocabulary import CARVEL, KAPPLY, Vocabulary
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.yamlio import load_all


class ConfigError(KapplyError):
    pass


@dataclass(frozen=True, slots=True)
class Documents:
    """What the files hold, by kind, in the order read; `vocabulary`: the groups of their App, packaging kinds."""

    apps: tuple[Obj, ...] = ()
    installs: tuple[Obj, ...] = ()
    packages: tuple[Obj, ...] = ()
    metadatas: tuple[Obj, ...] = ()
    secrets: tuple[Obj, ...] = ()
    config_maps: tuple[Obj, ...] = ()
    vocabulary: Vocabulary = CARVEL

    @property
    def primary(self) -> Obj:
        """The App, else the PackageInstall: what is reconciled (its App has its name)."""
        return (self.apps or self.installs)[0]


_CORE = {"Secret": "secrets", "ConfigMap": "config_maps"}


def _kinds(vocabulary: Vocabulary) -> dict[tuple[str, str], str]:
    return {
        (vocabulary.app.api_version, "App"): "apps",
        (vocabulary.install.api_version, "PackageInstall"): "installs",
        (vocabulary.package.api_version, "Package"): "packages",
        (vocabulary.package_metadata.api_version, "PackageMetadata"): "metadatas",
    }


def _read(path: str, stdin: Callable[[], bytes]) -> bytes:
    if path == "-":
        try:
            return stdin()
        except OSError as e:
            raise ConfigError(f"Reading config from stdin: {e.strerror or e}") from None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        reason = (e.strerror or str(e)).lower()
        raise ConfigError(f"Reading config '{path}': open {path}: {reason}") from None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def read(paths: Sequence[str], stdin: Callable[[], bytes]) -> Documents:
    """The documents of the files, in order. ConfigError (kctrl's words, under `Reading App CR configuration
    files`) for a file that cannot be read or parsed, a document of another kind, and anything but exactly one App
    or one PackageInstall."""
    found: dict[str, list[Obj]] = {"apps": [], "installs": [], "packages": [], "metadatas": []}
    found.update({kind: [] for kind in _CORE.values()})
    vocabularies: set[Vocabulary] = set()
    try:
        for path in paths:
            for doc in load_all(_read(path, stdin), f"resource config '{path}'", ConfigError):
                if doc is None:
                    continue
                try:
                    field, vocabulary = _kind_of(doc)
                except ConfigError as e:
                    raise ConfigError(f"Parsing resource config '{path}': {e}") from None
                found[field].append(doc)
                if vocabulary is not None:
                    vocabularies.add(vocabulary)
        if not found["apps"] and not found["installs"]:
            raise ConfigError("Expected to find at least one App or PackageInstall, but found none")
        if len(found["apps"]) > 1 or len(found["installs"]) > 1:
            raise ConfigError("Expected to find exactly one App or PackageInstall, but found multiple")
        if len(vocabularies) > 1:
            raise ConfigError(
                f"Expected the documents to use one set of API groups, {CARVEL.app.group} and packaging.carvel.dev "
                f"or {KAPPLY.app.group} and packaging.kapply.dev, but found both"
            )
    except ConfigError as e:
        raise ConfigError(f"Reading App CR configuration files: {e}") from None
    return Documents(**{k: tuple(v) for k, v in found.items()}, vocabulary=vocabularies.pop())


def _kind_of(doc: Any) -> tuple[str, Vocabulary | None]:
    """Which list a document goes to, and the vocabulary its group is of (None for a Secret or ConfigMap)."""
    if not isinstance(doc, dict):
        raise ConfigError(f"Unmarshaling doc: expected a map, but found {type(doc).__name__}")
    api_version, kind = _text(doc.get("apiVersion")), _text(doc.get("kind"))
    if api_version == "v1" and kind in _CORE:
        field: str | None = _CORE[kind]
        vocabulary = None
    else:
        vocabulary = next((v for v in (CARVEL, KAPPLY) if (api_version, kind) in _kinds(v)), None)
        field = _kinds(vocabulary)[(api_version, kind)] if vocabulary is not None else None
    if field is None:
        raise ConfigError(f"Unknown apiVersion '{api_version}' or kind '{kind}' for resource")
    if not isinstance(doc.get("metadata", {}), dict):
        raise ConfigError(f"Unmarshaling {kind}: expected metadata to be a map")
    return field, vocabulary


def _namespaced(docs: tuple[Obj, ...], namespace: str) -> tuple[Obj, ...]:
    out = []
    for doc in docs:
        meta = dict(doc.get("metadata") or {})
        meta["namespace"] = meta.get("namespace") or namespace
        out.append({**doc, "metadata": meta})
    return tuple(out)


def with_namespace(documents: Documents, namespace: str) -> Documents:
    """Every App, PackageInstall, Package, Secret and ConfigMap without a namespace in `namespace`."""
    return replace(
        documents,
        apps=_namespaced(documents.apps, namespace),
        installs=_namespaced(documents.installs, namespace),
        packages=_namespaced(documents.packages, namespace),
        secrets=_namespaced(documents.secrets, namespace),
        config_maps=_namespaced(documents.config_maps, namespace),
    )


LOCAL_FETCH = "kctrl.carvel.dev/local-fetch-"  # kctrl's annotation prefix: `<prefix><fetch index>: <directory>`
LOCAL_MAX_BYTES = 32 << 20  # all files of the local directories together (they travel to the sandbox inline)


def local_directories(documents: Documents) -> dict[int, str]:
    """`--local`: the directories that replace fetch steps, by the steps' indexes, from the App's (or
    PackageInstall's) `kctrl.carvel.dev/local-fetch-<i>` annotations, as kctrl reads them."""
    found: dict[int, str] = {}
    annotations = (documents.primary.get("metadata") or {}).get("annotations") or {}
    for key, value in annotations.items():
        if key.startswith(LOCAL_FETCH):
            index = key.removeprefix(LOCAL_FETCH)
            if not index.isdigit():
                raise ConfigError(f'Calculating local vendir changes: strconv.Atoi: parsing "{index}": invalid syntax')
            found[int(index)] = str(value)
    return found


def _files(directory: Path) -> dict[str, str]:
    """Every regular file under `directory`, by its path within it, as text."""
    files: dict[str, str] = {}
    total = 0
    if not directory.is_dir():
        raise ConfigError(f"Reading local directory '{directory}': not a directory")
    for path in sorted(directory.rglob("*")):
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            raise ConfigError(f"Reading local directory '{directory}': '{path}' is not a regular file or directory")
        if path.is_dir():
            continue
        data = path.read_bytes()
        total += len(data)
        if total > LOCAL_MAX_BYTES:
            raise ConfigError(f"Reading local directory '{directory}': more than {LOCAL_MAX_BYTES >> 20} MiB of files")
        try:
            files[path.relative_to(directory).as_posix()] = data.decode()
        except UnicodeDecodeError:
            raise ConfigError(f"Reading local directory '{directory}': '{path}' is not UTF-8 text") from None
    return files


def _local_fetch(fetch: Any, directories: dict[int, str], cwd: Path) -> Any:
    """A spec's fetch steps with each step named by `directories` replaced by the directory's files, inline (its
    `path` kept, as kctrl keeps the step's directory); an index past the steps is ignored, as kctrl ignores it."""
    if not isinstance(fetch, list):
        return fetch
    steps = list(fetch)
    for index, directory in sorted(directories.items()):
        if index < len(steps):
            step: Obj = {"inline": {"paths": _files(cwd / directory)}}
            if isinstance(steps[index], dict) and steps[index].get("path"):
                step["path"] = steps[index]["path"]
            steps[index] = step
    return steps


def with_local_sources(documents: Documents, cwd: Path) -> Documents:
    """The App's fetch steps (a PackageInstall's: its Packages' template's) with the local directories in place
    (`--local`). The directories are read here, by the CLI, as the user's own files; their content then goes
    through the fetch and template stages in the sandbox as any inline source does."""
    directories = local_directories(documents)
    if not directories:
        return documents
    if documents.apps:
        app = documents.apps[0]
        spec = dict(app.get("spec") or {})
        spec["fetch"] = _local_fetch(spec.get("fetch"), directories, cwd)
        return replace(documents, apps=({**app, "spec": spec},))
    packages = []
    for package in documents.packages:
        spec = dict(package.get("spec") or {})
        template = dict(spec.get("template") or {})
        inner = dict(template.get("spec") or {})
        inner["fetch"] = _local_fetch(inner.get("fetch"), directories, cwd)
        packages.append({**package, "spec": {**spec, "template": {**template, "spec": inner}}})
    return replace(documents, packages=tuple(packages))
