"""Templating an App's fetched files into the YAML it deploys: ytt, kustomize, helm template and kbld, run as programs
(cue and sops too: template_cue, template_sops).

Steps run in order: the first reads the fetch directory, each later one the YAML the previous one printed (as
kapp-controller chains them); kustomize, helm and cue can only start from files, so they must come first. sops
decrypts files in place and prints nothing: the step after it reads the fetch directory again.

The fetched files are the App author's, checked by fetch (no symlink leaves the fetch directory). Here: every path a
step names is confined to the fetch directory after following symlinks; each tool runs in the fetch directory with
the scrubbed environment of `runner.run`, and every value of the App's comes after `--` or as `--flag=value`, never
as an option of its own (a helm release name `--post-renderer=./x` would otherwise run a program). kustomize follows
`resources: [../../elsewhere]` out of the directory it builds and loads remote bases and files itself: every
kustomization it can reach is read first (`check_kustomization`), and one that names a remote base or file or a path
outside the fetch directory is refused. kbld never builds (`--build=false`): it rewrites image references to the
digests an ImagesLock (`.imgpkg/images.yml`) or its own configuration names, and asks the image's registry for the
digest of any other tag, as kapp-controller's kbld does.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from kapply.controller.downward import AppContext, DownwardError, values_file
from kapply.controller.fetch import FetchError, ReadSource, confined, source_data
from kapply.controller.runner import ToolError, run
from kapply.controller.spec import SourceRef, TemplateStep, TemplateTool, ValuesSource
from kapply.controller.template_cue import cue
from kapply.controller.template_sops import sops
from kapply.errors import KapplyError


class TemplateError(KapplyError):
    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


def scoped(root: Path, path: str) -> Path:
    """A path a template step names, read as kapp-controller's memdir.ScopedPath reads it: joined to the fetch
    directory `root` and cleaned, so that an absolute path (`/service`) is within root, never the machine's, and
    `a/../b` is `b`; one that leaves root is refused (`Invalid path: ...`), as is one through a symlink leading out
    (`confined`)."""
    base = str(root).rstrip("/") or "/"
    joined = posixpath.normpath(f"{base}/{path}")
    if "\0" in path or (joined != base and not joined.startswith(base + "/")):
        raise FetchError(f"Invalid path: {path}")
    return confined(root, posixpath.relpath(joined, base))


async def _values_files(
    values: tuple[ValuesSource, ...], root: Path, scratch: Path, read: ReadSource, app: AppContext | None = None
) -> list[str]:
    """One file per data key of each referenced ConfigMap or Secret (sorted), the given paths, and one file per
    downward API item (values taken from `app`, the App and its cluster), in order."""
    files: list[str] = []
    for index, source in enumerate(values):
        if source.path:
            files.append(str(scoped(root, source.path)))
            continue
        if source.downward is not None:
            directory = scratch / f"values-{index}"
            directory.mkdir(parents=True, exist_ok=True)
            for number, item in enumerate(source.downward):
                if app is None:
                    raise FetchError("Writing paths: the App's metadata is not known to this template step")
                try:
                    text = values_file(item, app)
                except DownwardError as e:
                    raise FetchError(f"Writing paths: {e}") from None
                (directory / f"downwardapi_{number}.yaml").write_text(text)
                files.append(str(directory / f"downwardapi_{number}.yaml"))
            continue
        ref = SourceRef("Secret", source.secret) if source.secret else SourceRef("ConfigMap", source.config_map)
        for key, content in await source_data(ref, read):
            path = confined(scratch / f"values-{index}", key)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
            files.append(str(path))
    return files


async def _ytt(
    step: TemplateStep, root: Path, stdin: str | None, scratch: Path, read: ReadSource, app: AppContext | None = None
) -> str:
    # Paths are absolute (scoped resolves them): none can be taken for an option; file marks are `--file-mark=...`.
    args: list[str] = ["--ignore-unknown-comments"] if step.ignore_unknown_comments else []
    if step.strict:
        args += ["--strict"]
    if stdin is not None:
        args += ["-f", "-"]
    else:
        args += [a for path in (step.paths or (".",)) for a in ("-f", str(scoped(root, path)))]
    if step.inline is not None:
        inline = scratch / "ytt-inline"
        for relative, content in step.inline.paths:
            target = confined(inline, relative)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
        for ref in step.inline.paths_from:
            for key, value in await source_data(ref, read):
                target = confined(inline, f"{ref.directory}/{key}" if ref.directory else key)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(value)
        args += ["-f", str(inline)]
    args += [f"--file-mark={mark}" for mark in step.file_marks]
    for values in await _values_files(step.values_from, root, scratch, read, app):
        args += [f"--data-values-file={values}"]
    return (await run("ytt", *args, cwd=root, stdin=stdin)).stdout


# --- kustomize --------------------------------------------------------------------------------------------------------

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
MAX_KUSTOMIZATION = 4 << 20  # bytes of one kustomization (or plugin configuration) read to check it
# Fields of a kustomization naming another kustomization (a directory, or for kustomize a git URL) or a file.
_BASES = ("resources", "bases", "components")
# Fields whose entries are a file of plugin configurations, a kustomization, or inline YAML.
_PLUGINS = ("generators", "transformers", "validators")
# Fields whose entries are files (patchesStrategicMerge: or an inline patch).
_FILES = ("crds", "configurations", "patchesStrategicMerge")
# Keys that name files wherever they appear in a kustomization or a plugin configuration: patches[].path,
# replacements[].path, openapi.path, configMapGenerator[].files/envs/env, PatchTransformer's path... (a field spec's
# `path: metadata/name` is checked too, harmlessly: it is a relative path within).
_FILE_KEYS = frozenset({"path", "paths", "files", "envs", "env"})
# What kustomize takes for a remote base (git clone) or file (HTTP GET): its repospec.go and fileloader.go.
_REMOTE = re.compile(r"(git::)?((ssh|https?|file)://|[a-z][a-z0-9-]*@|github\.com[/:])", re.IGNORECASE)
# kustomize never asks the network for what check_kustomization lets through; should it find a way, a proxy that
# refuses every connection stops it (Go skips proxies only for loopback addresses), and without PATH it finds no git.
KUSTOMIZE_ENV = {
    "PATH": "",
    **dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"), "http://127.0.0.1:0"),
    **dict.fromkeys(("NO_PROXY", "no_proxy"), ""),
}


class _Pairs(list[tuple[Any, Any]]):
    """A YAML mapping's entries in order, duplicate keys kept (PyYAML keeps the last only; Go's decoder may use
    either)."""


class _GoLoader(yaml.SafeLoader):
    """YAML read as kustomize's Go decoder could read it, so that no spelling hides an entry from the check: every
    scalar is its text (Go reads a scalar into a string field whatever it looks like), `!!binary` is the text it
    encodes, and a mapping is a `_Pairs` (its keys compared by `_fold`: Go's encoding/json matches field names
    without regard to case)."""


def _text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


def _binary(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return loader.construct_yaml_binary(node).decode("utf-8", "surrogateescape")


def _pairs(loader: yaml.SafeLoader, node: yaml.MappingNode) -> _Pairs:
    loader.flatten_mapping(node)  # `<<` merge keys, as Go's decoder applies them
    return _Pairs(
        (loader.construct_object(key, deep=True), loader.construct_object(value, deep=True))
        for key, value in node.value
    )


for _tag in ("null", "bool", "int", "float", "timestamp", "str"):
    _GoLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _text)
_GoLoader.add_constructor("tag:yaml.org,2002:binary", _binary)
_GoLoader.add_constructor("tag:yaml.org,2002:map", _pairs)


def _load_all(text: str | bytes) -> list[Any]:
    return list(yaml.load_all(text, Loader=_GoLoader))


def _fold(key: Any) -> str | None:
    """A mapping key as Go matches it to a field name (case-insensitively); None for a key no field can have."""
    return key.casefold() if isinstance(key, str) else None


def _refuse(file: str, where: str, entry: str, why: str) -> TemplateError:
    return TemplateError(f"Templating dir: Expected kustomization '{file}' {where} '{entry}' {why}")


def _local(root: str, directory: str, entry: str, file: str, where: str, inline: bool = False) -> str:
    """The path a kustomization's entry names, resolved; refused when remote or outside root. An `inline` entry (one
    that is YAML too, which kustomize may read either way) is refused when it starts like a URL or leaves root."""
    if _REMOTE.match(entry) or (not inline and ("://" in entry or "::" in entry)):
        raise _refuse(file, where, entry, "to be a path (remote bases and files are not allowed)")
    if "\0" in entry or os.path.isabs(entry):
        raise _refuse(file, where, entry, "to be a relative path")
    resolved = os.path.realpath(os.path.join(directory, entry))
    if resolved != root and not resolved.startswith(root.rstrip("/") + "/"):
        raise _refuse(file, where, entry, "to stay within the fetch directory")
    return resolved


def _inline_yaml(entry: str) -> list[Any] | None:
    """The documents of an entry written inline (a patch, a plugin configuration), or None for a path."""
    try:
        docs = _load_all(entry)
    except (yaml.YAMLError, RecursionError):
        return None
    return docs if any(isinstance(doc, list) for doc in docs) else None


def _read_docs(path: str, shown: str) -> list[Any]:
    try:
        with open(path, "rb") as f:
            text = f.read(MAX_KUSTOMIZATION + 1)
        if len(text) > MAX_KUSTOMIZATION:
            raise TemplateError(f"Templating dir: Expected '{shown}' to be at most {MAX_KUSTOMIZATION} bytes")
        return _load_all(text)
    except OSError as e:
        raise TemplateError(f"Templating dir: Reading '{shown}': {e.strerror}") from None
    except (yaml.YAMLError, RecursionError) as e:
        raise TemplateError(f"Templating dir: Expected '{shown}' to be YAML: {str(e).splitlines()[0]}") from None


def _file_keys(docs: list[Any], check: Callable[[str, str], str]) -> None:
    """`check(value, where)` for every string under a key of _FILE_KEYS in docs (shared YAML nodes visited once)."""
    seen: set[int] = set()
    pending: list[tuple[Any, str]] = [(doc, "") for doc in docs]
    while pending:
        node, where = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        items = node if isinstance(node, _Pairs) else enumerate(node) if isinstance(node, list) else []
        for key, value in items:
            here = f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"
            if _fold(key) in _FILE_KEYS:
                for i, item in enumerate(value if isinstance(value, list) else [value]):
                    if isinstance(item, str):
                        # configMapGenerator files: `key=path`
                        check(item.split("=", 1)[-1] if _fold(key) == "files" else item, f"{here}[{i}]".lstrip("."))
            if isinstance(value, list):
                pending.append((value, here))


def _entries(kustomization: _Pairs, name: str) -> list[tuple[str, str]]:
    """The string entries of a kustomization's list field, each with its place (`resources[0]`), under every key
    that Go takes for the field (any case, each duplicate)."""
    entries = []
    for key, value in kustomization:
        if _fold(key) == name.casefold():
            items = value if isinstance(value, list) and not isinstance(value, _Pairs) else [value]
            entries += [(item, f"{key}[{i}]") for i, item in enumerate(items) if isinstance(item, str)]
    return entries


def _check_one(base: str, directory: str, path: str) -> list[str]:
    """Check the kustomization file `path` of `directory` (every document of it: kustomize builds the first, and
    nothing here depends on which that is); the directories it names (more kustomizations)."""
    shown = os.path.relpath(path, base)
    docs = _read_docs(path, shown)

    def local(entry: str, where: str, inline: bool = False) -> str:
        return _local(base, directory, entry, shown, where, inline)

    more = []
    for kustomization in (doc for doc in docs if isinstance(doc, _Pairs)):
        for name in _BASES:
            for entry, where in _entries(kustomization, name):
                if os.path.isdir(resolved := local(entry, where)):
                    more.append(resolved)
        for name in _PLUGINS:
            for entry, where in _entries(kustomization, name):
                # kustomize reads an entry as inline YAML when it can, else as a path: both are checked
                if (inline := _inline_yaml(entry)) is not None:
                    _file_keys(inline, local)
                if os.path.isdir(resolved := local(entry, where, inline is not None)):
                    more.append(resolved)
                elif os.path.isfile(resolved):
                    _file_keys(_read_docs(resolved, os.path.relpath(resolved, base)), local)
        for name in _FILES:
            for entry, where in _entries(kustomization, name):
                local(entry, where, name == "patchesStrategicMerge" and _inline_yaml(entry) is not None)
    _file_keys(docs, local)
    return more


def check_kustomization(root: Path, directory: Path) -> None:
    """Refuse a kustomization that could make kustomize read outside the fetch directory `root`: a remote base,
    resource or file (kustomize clones git URLs and GETs http ones itself), or a path that leaves root (kustomize's
    load restrictor keeps files within a kustomization's directory, but not its bases: `../../elsewhere` is allowed).
    Every kustomization reachable from `directory` through resources, bases, components and plugins is checked."""
    base = os.path.realpath(root)
    seen: set[str] = set()
    pending = [os.path.realpath(directory)]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        found = (os.path.join(current, name) for name in KUSTOMIZATION_FILES)
        path = next((p for p in found if os.path.isfile(p)), None)
        if path is not None:
            pending += _check_one(base, current, path)


async def _kustomize(step: TemplateStep, root: Path, stdin: str | None) -> str:
    if stdin is not None:
        raise TemplateError("Templating stream is not supported by kustomize: make it the first template step")
    directory = confined(root, step.kustomize_path or ".")
    check_kustomization(root, directory)
    args = ("build", "--load-restrictor=LoadRestrictionsRootOnly", "--", str(directory))
    return (await run("kustomize", *args, cwd=root, env=KUSTOMIZE_ENV)).stdout


# --- helm -------------------------------------------------------------------------------------------------------------


async def _helm(
    step: TemplateStep,
    root: Path,
    stdin: str | None,
    scratch: Path,
    read: ReadSource,
    name: str,
    namespace: str,
    app: AppContext | None = None,
) -> str:
    if stdin is not None:
        raise TemplateError("Templating stream is not supported by helm: make it the first template step")
    chart = scoped(root, step.chart_path or ".")
    args = ["template", f"--namespace={step.release_namespace or namespace}", "--include-crds"]
    args += [f"--values={values}" for values in await _values_files(step.values_from, root, scratch, read, app)]
    # kapp-controller passes the cluster's version and group versions whenever the fields are set
    if step.kubernetes_version and app is not None and app.kubernetes_version:
        args += [f"--kube-version={app.kubernetes_version}"]
    if step.kubernetes_apis and app is not None:
        args += [f"--api-versions={group_version}" for group_version in app.kubernetes_apis]
    args += ["--", step.release_name or name, str(chart)]
    home = scratch / "helm-home"  # no user configuration, plugins, repositories or cache shared between Apps
    env = {
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        "HELM_PLUGINS": str(home / "plugins"),
        "HELM_REPOSITORY_CONFIG": str(home / "config" / "repositories.yaml"),
        "HELM_REPOSITORY_CACHE": str(home / "cache" / "repository"),
        "HELM_REGISTRY_CONFIG": str(home / "config" / "registry" / "config.json"),
    }
    return (await run("helm", *args, cwd=root, env=env)).stdout


# --- kbld -------------------------------------------------------------------------------------------------------------

STDIN = "-"


def kbld_args(paths: tuple[str, ...], root: Path, stdin: bool) -> list[str]:
    """kapp-controller's `kbld -f <path>... --build=false`: each path within the fetch directory `root` (`scoped`:
    `/service` is root's `service`; every path given to kbld is absolute, so none can be taken for an option or a
    URL), "-" the previous step's output; without paths, that output, or for a first step the whole fetch
    directory."""
    args: list[str] = []
    for path in paths or ((STDIN,) if stdin else (".",)):
        if path != STDIN:
            args += ["-f", str(scoped(root, path))]
        elif stdin:
            args += ["-f", STDIN]
        else:
            raise TemplateError("Templating dir: Expected stdin to be available when using it as path, but was not")
    return [*args, "--build=false"]


async def kbld(paths: tuple[str, ...], root: Path, stdin: str | None) -> str:
    """What kbld prints for `paths` (kbld_args) in the fetch directory `root`, given `stdin` (the previous step's
    output, or None for a first step); a kbld step's, and a PackageRepository's for its bundle's ImagesLock. FetchError
    for a path leaving `root`, ToolError when kbld fails."""
    args = kbld_args(paths, root, stdin is not None)
    return (await run("kbld", *args, cwd=root, stdin=stdin if STDIN in args else None)).stdout


_PREFIX = {
    TemplateTool.YTT: "Templating dir",
    TemplateTool.KUSTOMIZE: "Templating dir",
    TemplateTool.HELM: "Templating helm chart",
    TemplateTool.KBLD: "Templating dir",
    TemplateTool.SOPS: "Decrypting dir",
    TemplateTool.CUE: "Templating dir",
}


async def template(
    steps: tuple[TemplateStep, ...],
    root: Path,
    read: ReadSource,
    name: str,
    namespace: str,
    app: AppContext | None = None,
) -> str:
    """The YAML the steps produce from the fetch directory `root`. `name` and `namespace` are the App's (helm's
    release defaults); `app` is what downward API values and helm's cluster version and APIs are taken from."""
    stdin: str | None = None
    with tempfile.TemporaryDirectory(prefix="kapply-template-") as scratch_dir:
        for step in steps:
            scratch = Path(tempfile.mkdtemp(dir=scratch_dir))  # each step's own: files of one never mix with another's
            try:
                if step.tool is TemplateTool.YTT:
                    stdin = await _ytt(step, root, stdin, scratch, read, app)
                elif step.tool is TemplateTool.KUSTOMIZE:
                    stdin = await _kustomize(step, root, stdin)
                elif step.tool is TemplateTool.KBLD:
                    stdin = await kbld(step.paths, root, stdin)
                elif step.tool is TemplateTool.SOPS:
                    await sops(step, root, stdin, scratch, read)  # decrypts in place: the next step reads the files
                elif step.tool is TemplateTool.CUE:
                    values = functools.partial(_values_files, step.values_from, root, scratch, read, app)
                    stdin = await cue(step, root, stdin, scratch, values)
                else:
                    stdin = await _helm(step, root, stdin, scratch, read, name, namespace, app)
            except (ToolError, FetchError) as e:
                raise TemplateError(f"{_PREFIX[step.tool]}: {e}", e.stderr) from e
    return stdin or ""
