"""The App resource (`kapply.dev/v1alpha1`; `kappctrl.k14s.io/v1alpha1` in carvel mode, kapply.controller.vocabulary):
its spec read into values, checked with clear messages.

The spec mirrors kapp-controller's App (`kappctrl.k14s.io/v1alpha1`), so that moving an App is changing its
apiVersion; docs/reconciler.md lists every field with what kapply supports. A spec that cannot be read ends the
reconcile as ReconcileFailed with the message of the SpecError.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from kapply.api import DriftPolicy
from kapply.controller.downward import DownwardError, DownwardItem, DownwardKind, check_name, parse_field_path
from kapply.controller.vocabulary import KAPPLY
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.values import parse_duration

FINALIZER = KAPPLY.app_finalizer  # kapply's; the controller's is its vocabulary's (kapply.controller.vocabulary)

_T = TypeVar("_T")


class SpecError(KapplyError):
    """The App's spec is not valid."""


def parsed(parse: Callable[[Obj], _T], obj: Obj) -> tuple[_T | None, str]:
    """`parse(obj)` and "", or None and the SpecError's message: a reconciler says what is wrong with a spec in the
    status, and still deletes an object being deleted."""
    try:
        return parse(obj), ""
    except SpecError as e:
        return None, str(e)


@dataclass(frozen=True, slots=True)
class SourceRef:
    kind: str  # "Secret" or "ConfigMap"
    name: str
    directory: str = ""  # inline.pathsFrom's directoryPath


@dataclass(frozen=True, slots=True)
class Inline:
    paths: tuple[tuple[str, str], ...] = ()  # (file path, content)
    paths_from: tuple[SourceRef, ...] = ()


@dataclass(frozen=True, slots=True)
class Git:
    url: str
    ref: str = ""  # a branch, tag or commit; kapp-controller's `origin/main` form is accepted
    sub_path: str = ""
    secret: str = ""  # secretRef.name: username/password or ssh-privatekey
    ref_selection: TagSelection | None = None  # the highest tag that is a version within the constraints
    lfs_skip_smudge: bool = False  # kapply never runs git-lfs: LFS files stay pointers either way
    force_http_basic_auth: bool = False  # send the secret's username/password at once (no 401 first)
    depth: int | None = None  # commits fetched per branch and tag (None, 0: all)


@dataclass(frozen=True, slots=True)
class TagSelection:
    """`tagSelection.semver`: the highest tag that is a version (`v` prefix allowed) within `constraints`, as vendir
    selects it."""

    constraints: str = ""  # a carvel semver range; empty: any version
    prereleases: tuple[str, ...] | None = None  # None: no prerelease tag; (): any; else those with one of these


@dataclass(frozen=True, slots=True)
class Image:
    url: str  # an image reference; with tag_selection, a repository without tag or digest
    secret: str = ""  # secretRef.name: .dockerconfigjson, or username/password/token
    sub_path: str = ""
    tag_selection: TagSelection | None = None


@dataclass(frozen=True, slots=True)
class ImgpkgBundle:
    image: str  # as Image.url
    secret: str = ""
    tag_selection: TagSelection | None = None


@dataclass(frozen=True, slots=True)
class Http:
    url: str
    sha256: str = ""  # 64 lower-case hex digits, checked against what was downloaded
    secret: str = ""  # secretRef.name: username/password
    sub_path: str = ""


@dataclass(frozen=True, slots=True)
class HelmChart:
    """A chart by name and version from a helm repository (`repository.url` over http or https, its index.yaml) or
    an OCI registry (`oci://host/path`); kapply.controller.fetch_helm fetches it."""

    name: str
    url: str  # repository.url
    version: str = ""  # exact, or a range; empty: the highest version that is no prerelease (helm's rule)
    secret: str = ""  # repository.secretRef.name: username/password (or registry credentials for oci://)


@dataclass(frozen=True, slots=True)
class FetchSource:
    path: str  # the directory under the fetch root ("" for a single source)
    inline: Inline | None = None
    git: Git | None = None
    image: Image | None = None
    imgpkg_bundle: ImgpkgBundle | None = None
    http: Http | None = None
    helm_chart: HelmChart | None = None


class TemplateTool(StrEnum):
    YTT = "ytt"
    KUSTOMIZE = "kustomize"
    HELM = "helmTemplate"
    KBLD = "kbld"
    SOPS = "sops"
    CUE = "cue"


@dataclass(frozen=True, slots=True)
class ValuesSource:
    secret: str = ""
    config_map: str = ""
    path: str = ""
    downward: tuple[DownwardItem, ...] | None = None  # downwardAPI.items


class SopsKind(StrEnum):
    """The keys a sops step decrypts with (kapp-controller's: pgp wins when both are given)."""

    PGP = "pgp"
    AGE = "age"


@dataclass(frozen=True, slots=True)
class SopsKeys:
    kind: SopsKind
    secret: str  # privateKeysSecretRef.name: a Secret whose every value is keys (armored PGP, or age identities)


@dataclass(frozen=True, slots=True)
class TemplateStep:
    tool: TemplateTool
    paths: tuple[str, ...] = ()  # ytt, kbld: files and directories to read, kbld's "-" the previous step's output
    inline: Inline | None = None  # ytt: more files
    values_from: tuple[ValuesSource, ...] = ()  # ytt data values files, helm values files
    chart_path: str = ""  # helmTemplate: the chart's directory in the fetch root
    release_name: str = ""  # helmTemplate: name (default: the App's)
    release_namespace: str = ""  # helmTemplate: namespace (default: the App's)
    kustomize_path: str = ""  # kustomize: the kustomization's directory in the fetch root (kapply's field)
    ignore_unknown_comments: bool = False  # ytt: --ignore-unknown-comments
    strict: bool = False  # ytt: --strict
    file_marks: tuple[str, ...] = ()  # ytt: --file-mark each
    kubernetes_version: bool = False  # helmTemplate: --kube-version with the cluster's version
    kubernetes_apis: bool = False  # helmTemplate: --api-versions with the cluster's group versions
    input_expression: str = ""  # cue: where the values files go (`cue export --path`)
    output_expression: str = ""  # cue: what is exported (`cue export --expression`)
    sops_keys: SopsKeys | None = None  # sops: the private keys (sops's `paths` are `paths`)


@dataclass(frozen=True, slots=True)
class Deploy:
    into_ns: str = ""
    map_ns: tuple[str, ...] = ()
    raw_options: tuple[str, ...] = ()
    delete_raw_options: tuple[str, ...] = ()
    inspect: bool = False
    inspect_raw_options: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AppSpec:
    service_account: str
    fetch: tuple[FetchSource, ...]
    template: tuple[TemplateStep, ...]
    deploy: Deploy
    sync_period: float | None = None  # seconds; None: the controller's default
    paused: bool = False
    canceled: bool = False
    noop_delete: bool = False
    default_namespace: str = ""
    drift_policy: DriftPolicy = DriftPolicy.ENFORCE


def read_map(value: Any, where: str) -> dict[str, Any]:
    """`value` as a map ({} when absent); SpecError naming `where` otherwise. The `read_*` functions read any
    kapp-controller-shaped spec (Apps here, packaging objects in kapply.packaging.spec)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecError(f"Expected {where} to be a map, got {type(value).__name__}")
    return value


def read_list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecError(f"Expected {where} to be a list, got {type(value).__name__}")
    return value


def read_str(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise SpecError(f"Expected {where} to be a string, got {type(value).__name__}")
    return value


def read_bool(value: Any, where: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise SpecError(f"Expected {where} to be a boolean, got {type(value).__name__}")
    return value


def read_drift_policy(value: Any, where: str) -> DriftPolicy | None:
    """A drift policy as written (None when absent or empty: the controller's default), or SpecError naming `where`
    and the choices (an App's and a PackageInstall's `spec.driftPolicy`)."""
    text = read_str(value, where)
    if not text:
        return None
    try:
        return DriftPolicy(text)
    except ValueError:
        choices = ", ".join(p.value for p in DriftPolicy)
        raise SpecError(f"Expected {where} to be one of {choices}, got '{text}'") from None


_SHA256 = re.compile(r"[0-9a-f]{64}")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _name(value: Any, where: str) -> str:
    """The name of an object of the App's namespace (a ConfigMap, a Secret, a ServiceAccount): a DNS subdomain, as
    the API server requires, so that it can never reach another object's path."""
    name = read_str(value, where)
    if not name:
        raise SpecError(f"Expected {where} to be non-empty")
    if len(name) > 253 or not _SUBDOMAIN.fullmatch(name):
        shown = json.dumps(name[:80] + ("..." if len(name) > 80 else ""))
        raise SpecError(
            f"Expected {where} to be a lowercase RFC 1123 subdomain ('a'-'z', '0'-'9', '-' and '.', at most 253 "
            f"characters), got {shown}"
        )
    return name


def read_strings(value: Any, where: str) -> tuple[str, ...]:
    return tuple(read_str(item, f"{where}[{i}]") for i, item in enumerate(read_list(value, where)))


def _ref(value: Any, where: str, directory: str = "") -> SourceRef | None:
    item = read_map(value, where)
    for key, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
        if key in item:
            ref = read_map(item[key], f"{where}.{key}")
            name = _name(ref.get("name"), f"{where}.{key}.name")
            return SourceRef(
                kind, name, read_str(ref.get("directoryPath"), f"{where}.{key}.directoryPath") or directory
            )
    return None


def _inline(value: Any, where: str) -> Inline:
    item = read_map(value, where)
    paths = tuple(
        (read_str(name, f"{where}.paths key"), read_str(content, f"{where}.paths[{name}]"))
        for name, content in sorted(read_map(item.get("paths"), f"{where}.paths").items())
    )
    refs = []
    for i, source in enumerate(read_list(item.get("pathsFrom"), f"{where}.pathsFrom")):
        ref = _ref(source, f"{where}.pathsFrom[{i}]")
        if ref is None:
            raise SpecError(f"Expected {where}.pathsFrom[{i}] to have secretRef or configMapRef")
        refs.append(ref)
    return Inline(paths, tuple(refs))


def _secret(item: dict[str, Any], where: str) -> str:
    """`secretRef.name`, or "" without a secretRef."""
    if item.get("secretRef") is None:
        return ""
    return _name(read_map(item["secretRef"], f"{where}.secretRef").get("name"), f"{where}.secretRef.name")


def _required(item: dict[str, Any], key: str, where: str) -> str:
    value = read_str(item.get(key), f"{where}.{key}")
    if not value:
        raise SpecError(f"Expected {where}.{key} to be non-empty")
    return value


def _tag_selection(value: Any, where: str) -> TagSelection | None:
    if value is None:
        return None
    selection = read_map(value, where)
    if "semver" not in selection:
        raise SpecError(f"Expected {where} to have semver")
    semver = read_map(selection["semver"], f"{where}.semver")
    prereleases = semver.get("prereleases")
    identifiers = None
    if prereleases is not None:
        where_identifiers = f"{where}.semver.prereleases.identifiers"
        identifiers = read_strings(
            read_map(prereleases, f"{where}.semver.prereleases").get("identifiers"), where_identifiers
        )
    return TagSelection(read_str(semver.get("constraints"), f"{where}.semver.constraints"), identifiers)


def _git(item: dict[str, Any], where: str) -> Git:
    ref = read_str(item.get("ref"), f"{where}.ref")
    selection = _tag_selection(item.get("refSelection"), f"{where}.refSelection")
    if ref and selection is not None:
        raise SpecError(f"Expected only one of {where}.ref or {where}.refSelection")
    depth = item.get("depth")
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 0):
        raise SpecError(f"Expected {where}.depth to be a non-negative integer, got {json.dumps(depth)[:80]}")
    return Git(
        _required(item, "url", where),
        ref,
        read_str(item.get("subPath"), f"{where}.subPath"),
        _secret(item, where),
        selection,
        read_bool(item.get("lfsSkipSmudge"), f"{where}.lfsSkipSmudge"),
        read_bool(item.get("forceHTTPBasicAuth"), f"{where}.forceHTTPBasicAuth"),
        depth,
    )


def _image(item: dict[str, Any], where: str) -> Image:
    return Image(
        _required(item, "url", where),
        _secret(item, where),
        read_str(item.get("subPath"), f"{where}.subPath"),
        _tag_selection(item.get("tagSelection"), f"{where}.tagSelection"),
    )


def _imgpkg_bundle(item: dict[str, Any], where: str) -> ImgpkgBundle:
    return ImgpkgBundle(
        _required(item, "image", where),
        _secret(item, where),
        _tag_selection(item.get("tagSelection"), f"{where}.tagSelection"),
    )


def _http(item: dict[str, Any], where: str) -> Http:
    sha256 = read_str(item.get("sha256"), f"{where}.sha256")
    if sha256 and not _SHA256.fullmatch(sha256.lower()):
        raise SpecError(f"Expected {where}.sha256 to be 64 hexadecimal digits (without 'sha256:')")
    return Http(
        _required(item, "url", where),
        sha256.lower(),
        _secret(item, where),
        read_str(item.get("subPath"), f"{where}.subPath"),
    )


HELM_VERSIONS = ("", "3")  # vendir's `helmVersion`: kapply fetches charts as helm 3 does


def _helm_chart(item: dict[str, Any], where: str) -> HelmChart:
    repository = read_map(item.get("repository"), f"{where}.repository")
    helm_version = read_str(item.get("helmVersion"), f"{where}.helmVersion")
    if helm_version not in HELM_VERSIONS:
        raise SpecError(f"Unsupported helm version '{helm_version}' in {where}.helmVersion (kapply fetches as helm 3)")
    return HelmChart(
        _required(item, "name", where),
        _required(repository, "url", f"{where}.repository"),
        read_str(item.get("version"), f"{where}.version"),
        _secret(repository, f"{where}.repository"),
    )


class SourceKind(StrEnum):
    """The sources kapply fetches, in the order kapp-controller looks for them in a fetch item (the first found is
    used)."""

    INLINE = "inline"
    IMAGE = "image"
    HTTP = "http"
    GIT = "git"
    HELM_CHART = "helmChart"
    IMGPKG_BUNDLE = "imgpkgBundle"


def _source(path: str, kind: SourceKind, value: Any, where: str) -> FetchSource:
    item = read_map(value, where)
    match kind:
        case SourceKind.INLINE:
            return FetchSource(path, inline=_inline(item, where))
        case SourceKind.IMAGE:
            return FetchSource(path, image=_image(item, where))
        case SourceKind.HTTP:
            return FetchSource(path, http=_http(item, where))
        case SourceKind.GIT:
            return FetchSource(path, git=_git(item, where))
        case SourceKind.HELM_CHART:
            return FetchSource(path, helm_chart=_helm_chart(item, where))
        case SourceKind.IMGPKG_BUNDLE:
            return FetchSource(path, imgpkg_bundle=_imgpkg_bundle(item, where))


def _options(value: Any, stage: str) -> list[Any]:
    """`spec.<stage>` (fetch, template): a list of at least one option, each read with `_option`."""
    items = read_list(value, f"spec.{stage}")
    if not items:
        raise SpecError(f"Expected at least one {stage} option")
    return items


def _option(raw: Any, stage: str, i: int) -> tuple[str, dict[str, Any]]:
    """Where the `i`th option of `spec.<stage>` is (`spec.fetch[0]`), and the option, a map."""
    where = f"spec.{stage}[{i}]"
    return where, read_map(raw, where)


def _fetch(value: Any) -> tuple[FetchSource, ...]:
    items = _options(value, "fetch")
    out = []
    for i, raw in enumerate(items):
        where, item = _option(raw, "fetch", i)
        path = read_str(item.get("path"), f"{where}.path") or (str(i) if len(items) > 1 else "")
        kind = next((k for k in SourceKind if k.value in item), None)
        if kind is None:
            known = ", ".join(k for k in item if k != "path") or "nothing"
            kinds = ", ".join(SourceKind)
            raise SpecError(f"Fetching ({i}): Unsupported way to fetch templates ({known}; kapply fetches {kinds})")
        out.append(_source(path, kind, item[kind.value], f"{where}.{kind.value}"))
    return tuple(out)


def _values_from(value: Any, where: str) -> tuple[ValuesSource, ...]:
    out = []
    for i, raw in enumerate(read_list(value, where)):
        item = read_map(raw, f"{where}[{i}]")
        ref = _ref(item, f"{where}[{i}]")
        if ref is not None:
            out.append(ValuesSource(secret=ref.name) if ref.kind == "Secret" else ValuesSource(config_map=ref.name))
        elif "path" in item:
            out.append(ValuesSource(path=read_str(item["path"], f"{where}[{i}].path")))
        elif "downwardAPI" in item:
            out.append(ValuesSource(downward=_downward(item["downwardAPI"], f"{where}[{i}].downwardAPI")))
        else:
            raise SpecError(f"Expected {where}[{i}] to have secretRef, configMapRef, path or downwardAPI")
    return tuple(out)


def _version(value: Any, where: str) -> str:
    return read_str(read_map(value, where).get("version"), f"{where}.version")


def _downward_item(value: Any, where: str) -> DownwardItem:
    """One item, checked as kapp-controller checks it when it templates (the name, the field path's syntax)."""
    item = read_map(value, where)
    name = read_str(item.get("name"), f"{where}.name")
    try:
        check_name(name)
        if field_path := read_str(item.get("fieldPath"), f"{where}.fieldPath"):
            return DownwardItem(name, DownwardKind.FIELD_PATH, field_path=parse_field_path(field_path))
    except DownwardError as e:
        raise SpecError(f"{where}: {e}") from None
    if item.get("kubernetesVersion") is not None:
        version = _version(item["kubernetesVersion"], f"{where}.kubernetesVersion")
        return DownwardItem(name, DownwardKind.KUBERNETES_VERSION, version=version)
    if item.get("kappControllerVersion") is not None:
        version = _version(item["kappControllerVersion"], f"{where}.kappControllerVersion")
        return DownwardItem(name, DownwardKind.KAPP_CONTROLLER_VERSION, version=version)
    if item.get("kubernetesAPIs") is not None:
        apis = read_map(item["kubernetesAPIs"], f"{where}.kubernetesAPIs")
        given = apis.get("groupVersions")
        group_versions = None if given is None else read_strings(given, f"{where}.kubernetesAPIs.groupVersions")
        return DownwardItem(name, DownwardKind.KUBERNETES_APIS, group_versions=group_versions)
    raise SpecError(
        f"{where}: Invalid downward API item given (expected fieldPath, kubernetesVersion, "
        "kappControllerVersion or kubernetesAPIs)"
    )


def _downward(value: Any, where: str) -> tuple[DownwardItem, ...]:
    items = read_map(value, where).get("items")
    return tuple(_downward_item(raw, f"{where}.items[{i}]") for i, raw in enumerate(read_list(items, f"{where}.items")))


def _sops(value: Any, where: str) -> TemplateStep:
    """A sops step: `pgp` or `age` keys (pgp first, as kapp-controller looks), each from a Secret that must be named
    (kapp-controller crashes on a missing privateKeysSecretRef)."""
    sops = read_map(value, where)
    kind = next((k for k in SopsKind if sops.get(k.value) is not None), None)
    if kind is None:
        raise SpecError(f"Expected {where} to have pgp or age (Unsupported SOPS strategy)")
    keys = read_map(sops[kind.value], f"{where}.{kind.value}")
    ref = read_map(keys.get("privateKeysSecretRef"), f"{where}.{kind.value}.privateKeysSecretRef")
    secret = _name(ref.get("name"), f"{where}.{kind.value}.privateKeysSecretRef.name")
    return TemplateStep(
        TemplateTool.SOPS, paths=read_strings(sops.get("paths"), f"{where}.paths"), sops_keys=SopsKeys(kind, secret)
    )


def _present(item: dict[str, Any], key: str, where: str) -> bool:
    """Whether `key` (a map) is set: kapp-controller then passes the cluster's value, whatever the map holds."""
    if item.get(key) is None:
        return False
    read_map(item[key], f"{where}.{key}")
    return True


def _template(value: Any) -> tuple[TemplateStep, ...]:
    steps = []
    for i, raw in enumerate(_options(value, "template")):
        where, item = _option(raw, "template", i)
        if "ytt" in item:
            ytt = read_map(item["ytt"], f"{where}.ytt")
            steps.append(
                TemplateStep(
                    TemplateTool.YTT,
                    paths=read_strings(ytt.get("paths"), f"{where}.ytt.paths"),
                    inline=_inline(ytt["inline"], f"{where}.ytt.inline") if "inline" in ytt else None,
                    values_from=_values_from(ytt.get("valuesFrom"), f"{where}.ytt.valuesFrom"),
                    ignore_unknown_comments=read_bool(
                        ytt.get("ignoreUnknownComments"), f"{where}.ytt.ignoreUnknownComments"
                    ),
                    strict=read_bool(ytt.get("strict"), f"{where}.ytt.strict"),
                    file_marks=read_strings(ytt.get("fileMarks"), f"{where}.ytt.fileMarks"),
                )
            )
        elif "kustomize" in item:
            kustomize = read_map(item["kustomize"], f"{where}.kustomize")
            steps.append(
                TemplateStep(
                    TemplateTool.KUSTOMIZE, kustomize_path=read_str(kustomize.get("path"), f"{where}.kustomize.path")
                )
            )
        elif "helmTemplate" in item:
            helm = read_map(item["helmTemplate"], f"{where}.helmTemplate")
            steps.append(
                TemplateStep(
                    TemplateTool.HELM,
                    chart_path=read_str(helm.get("path"), f"{where}.helmTemplate.path"),
                    release_name=read_str(helm.get("name"), f"{where}.helmTemplate.name"),
                    release_namespace=read_str(helm.get("namespace"), f"{where}.helmTemplate.namespace"),
                    values_from=_values_from(helm.get("valuesFrom"), f"{where}.helmTemplate.valuesFrom"),
                    kubernetes_version=_present(helm, "kubernetesVersion", f"{where}.helmTemplate"),
                    kubernetes_apis=_present(helm, "kubernetesAPIs", f"{where}.helmTemplate"),
                )
            )
        elif "kbld" in item:
            kbld = read_map(item["kbld"], f"{where}.kbld")
            steps.append(TemplateStep(TemplateTool.KBLD, paths=read_strings(kbld.get("paths"), f"{where}.kbld.paths")))
        elif "sops" in item:
            steps.append(_sops(item["sops"], f"{where}.sops"))
        elif "cue" in item:
            cue = read_map(item["cue"], f"{where}.cue")
            steps.append(
                TemplateStep(
                    TemplateTool.CUE,
                    paths=read_strings(cue.get("paths"), f"{where}.cue.paths"),
                    values_from=_values_from(cue.get("valuesFrom"), f"{where}.cue.valuesFrom"),
                    input_expression=read_str(cue.get("inputExpression"), f"{where}.cue.inputExpression"),
                    output_expression=read_str(cue.get("outputExpression"), f"{where}.cue.outputExpression"),
                )
            )
        else:
            known = ", ".join(item) or "nothing"
            raise SpecError(
                f"Templating ({i}): Unsupported way to template ({known}; kapply templates with ytt, kustomize, "
                "helmTemplate, kbld, sops, cue)"
            )
    return tuple(steps)


def _deploy(value: Any) -> Deploy:
    items = read_list(value, "spec.deploy")
    if len(items) != 1:
        raise SpecError("Expected exactly one deploy option")
    item = read_map(items[0], "spec.deploy[0]")
    if "kapp" not in item:
        raise SpecError("Deploying: Unsupported way to deploy (kapply deploys with kapp)")
    kapp = read_map(item["kapp"], "spec.deploy[0].kapp")
    inspect = kapp.get("inspect")
    return Deploy(
        into_ns=read_str(kapp.get("intoNs"), "spec.deploy[0].kapp.intoNs"),
        map_ns=read_strings(kapp.get("mapNs"), "spec.deploy[0].kapp.mapNs"),
        raw_options=read_strings(kapp.get("rawOptions"), "spec.deploy[0].kapp.rawOptions"),
        delete_raw_options=read_strings(
            read_map(kapp.get("delete"), "spec.deploy[0].kapp.delete").get("rawOptions"),
            "spec.deploy[0].kapp.delete.rawOptions",
        ),
        inspect=inspect is not None,
        inspect_raw_options=read_strings(
            read_map(inspect, "spec.deploy[0].kapp.inspect").get("rawOptions"), "spec.deploy[0].kapp.inspect.rawOptions"
        ),
    )


def parse_spec(app: Obj, default_drift_policy: DriftPolicy = DriftPolicy.ENFORCE) -> AppSpec:
    """The App's spec, or SpecError naming what is wrong; `default_drift_policy` is the policy of an App that sets
    none (the controller's `--default-drift-policy`)."""
    spec = read_map(app.get("spec"), "spec")
    if not spec:
        raise SpecError("Expected spec to be present")
    if "cluster" in spec:
        raise SpecError("spec.cluster is not supported: kapply deploys to the App's own cluster (docs/reconciler.md)")
    if not spec.get("serviceAccountName"):
        raise SpecError("Preparing kapp: Expected service account or cluster specified")
    account = _name(spec.get("serviceAccountName"), "spec.serviceAccountName")
    period_text = read_str(spec.get("syncPeriod"), "spec.syncPeriod")
    try:
        period = parse_duration(period_text) if period_text else None
    except ValueError as e:
        raise SpecError(f"Expected spec.syncPeriod to be a duration: {e}") from None
    policy = read_drift_policy(spec.get("driftPolicy"), "spec.driftPolicy") or default_drift_policy
    return AppSpec(
        service_account=account,
        fetch=_fetch(spec.get("fetch")),
        template=_template(spec.get("template")),
        deploy=_deploy(spec.get("deploy")),
        sync_period=period,
        paused=read_bool(spec.get("paused"), "spec.paused"),
        canceled=read_bool(spec.get("canceled"), "spec.canceled"),
        noop_delete=read_bool(spec.get("noopDelete"), "spec.noopDelete"),
        default_namespace=read_str(spec.get("defaultNamespace"), "spec.defaultNamespace"),
        drift_policy=policy,
    )
