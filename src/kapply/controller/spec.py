"""The App resource (`kapply.dev/v1alpha1`, kind `App`): its spec read into values, checked with clear messages.

The spec mirrors kapp-controller's App (`kappctrl.k14s.io/v1alpha1`), so that moving an App is changing its
apiVersion; docs/reconciler.md lists every field with what kapply supports. A spec that cannot be read ends the
reconcile as ReconcileFailed with the message of the SpecError.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kapply.diff.drift import DriftPolicy
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.values import parse_duration

GROUP = "kapply.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "App"
PLURAL = "apps"
FINALIZER = "finalizers.kapply.dev/delete"


class SpecError(KapplyError):
    """The App's spec is not valid."""


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


@dataclass(frozen=True, slots=True)
class FetchSource:
    path: str  # the directory under the fetch root ("" for a single source)
    inline: Inline | None = None
    git: Git | None = None


class TemplateTool(StrEnum):
    YTT = "ytt"
    KUSTOMIZE = "kustomize"
    HELM = "helmTemplate"


@dataclass(frozen=True, slots=True)
class ValuesSource:
    secret: str = ""
    config_map: str = ""
    path: str = ""


@dataclass(frozen=True, slots=True)
class TemplateStep:
    tool: TemplateTool
    paths: tuple[str, ...] = ()  # ytt: files and directories to read (default: all)
    inline: Inline | None = None  # ytt: more files
    values_from: tuple[ValuesSource, ...] = ()  # ytt data values files, helm values files
    chart_path: str = ""  # helmTemplate: the chart's directory in the fetch root
    release_name: str = ""  # helmTemplate: name (default: the App's)
    release_namespace: str = ""  # helmTemplate: namespace (default: the App's)
    kustomize_path: str = ""  # kustomize: the kustomization's directory in the fetch root (kapply's field)


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


def _map(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecError(f"Expected {where} to be a map, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecError(f"Expected {where} to be a list, got {type(value).__name__}")
    return value


def _str(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise SpecError(f"Expected {where} to be a string, got {type(value).__name__}")
    return value


def _bool(value: Any, where: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise SpecError(f"Expected {where} to be a boolean, got {type(value).__name__}")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    return tuple(_str(item, f"{where}[{i}]") for i, item in enumerate(_list(value, where)))


def _ref(value: Any, where: str, directory: str = "") -> SourceRef | None:
    item = _map(value, where)
    for key, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
        if key in item:
            ref = _map(item[key], f"{where}.{key}")
            name = _str(ref.get("name"), f"{where}.{key}.name")
            if not name:
                raise SpecError(f"Expected {where}.{key}.name to be non-empty")
            return SourceRef(kind, name, _str(ref.get("directoryPath"), f"{where}.{key}.directoryPath") or directory)
    return None


def _inline(value: Any, where: str) -> Inline:
    item = _map(value, where)
    paths = tuple(
        (_str(name, f"{where}.paths key"), _str(content, f"{where}.paths[{name}]"))
        for name, content in sorted(_map(item.get("paths"), f"{where}.paths").items())
    )
    refs = []
    for i, source in enumerate(_list(item.get("pathsFrom"), f"{where}.pathsFrom")):
        ref = _ref(source, f"{where}.pathsFrom[{i}]")
        if ref is None:
            raise SpecError(f"Expected {where}.pathsFrom[{i}] to have secretRef or configMapRef")
        refs.append(ref)
    return Inline(paths, tuple(refs))


def _fetch(value: Any) -> tuple[FetchSource, ...]:
    items = _list(value, "spec.fetch")
    if not items:
        raise SpecError("Expected at least one fetch option")
    out = []
    for i, raw in enumerate(items):
        where = f"spec.fetch[{i}]"
        item = _map(raw, where)
        path = _str(item.get("path"), f"{where}.path") or (str(i) if len(items) > 1 else "")
        if "inline" in item:
            out.append(FetchSource(path, inline=_inline(item["inline"], f"{where}.inline")))
        elif "git" in item:
            git = _map(item["git"], f"{where}.git")
            url = _str(git.get("url"), f"{where}.git.url")
            if not url:
                raise SpecError(f"Expected {where}.git.url to be non-empty")
            secret = _map(git.get("secretRef"), f"{where}.git.secretRef")
            out.append(
                FetchSource(
                    path,
                    git=Git(
                        url,
                        _str(git.get("ref"), f"{where}.git.ref"),
                        _str(git.get("subPath"), f"{where}.git.subPath"),
                        _str(secret.get("name"), f"{where}.git.secretRef.name"),
                    ),
                )
            )
        else:
            known = ", ".join(k for k in item if k != "path") or "nothing"
            raise SpecError(f"Fetching ({i}): Unsupported way to fetch templates ({known}; kapply fetches inline, git)")
    return tuple(out)


def _values_from(value: Any, where: str) -> tuple[ValuesSource, ...]:
    out = []
    for i, raw in enumerate(_list(value, where)):
        item = _map(raw, f"{where}[{i}]")
        ref = _ref(item, f"{where}[{i}]")
        if ref is not None:
            out.append(ValuesSource(secret=ref.name) if ref.kind == "Secret" else ValuesSource(config_map=ref.name))
        elif "path" in item:
            out.append(ValuesSource(path=_str(item["path"], f"{where}[{i}].path")))
        else:
            raise SpecError(f"Expected {where}[{i}] to have secretRef, configMapRef or path")
    return tuple(out)


def _template(value: Any) -> tuple[TemplateStep, ...]:
    items = _list(value, "spec.template")
    if not items:
        raise SpecError("Expected at least one template option")
    steps = []
    for i, raw in enumerate(items):
        where = f"spec.template[{i}]"
        item = _map(raw, where)
        if "ytt" in item:
            ytt = _map(item["ytt"], f"{where}.ytt")
            steps.append(
                TemplateStep(
                    TemplateTool.YTT,
                    paths=_strings(ytt.get("paths"), f"{where}.ytt.paths"),
                    inline=_inline(ytt["inline"], f"{where}.ytt.inline") if "inline" in ytt else None,
                    values_from=_values_from(ytt.get("valuesFrom"), f"{where}.ytt.valuesFrom"),
                )
            )
        elif "kustomize" in item:
            kustomize = _map(item["kustomize"], f"{where}.kustomize")
            steps.append(
                TemplateStep(
                    TemplateTool.KUSTOMIZE, kustomize_path=_str(kustomize.get("path"), f"{where}.kustomize.path")
                )
            )
        elif "helmTemplate" in item:
            helm = _map(item["helmTemplate"], f"{where}.helmTemplate")
            steps.append(
                TemplateStep(
                    TemplateTool.HELM,
                    chart_path=_str(helm.get("path"), f"{where}.helmTemplate.path"),
                    release_name=_str(helm.get("name"), f"{where}.helmTemplate.name"),
                    release_namespace=_str(helm.get("namespace"), f"{where}.helmTemplate.namespace"),
                    values_from=_values_from(helm.get("valuesFrom"), f"{where}.helmTemplate.valuesFrom"),
                )
            )
        else:
            known = ", ".join(item) or "nothing"
            raise SpecError(
                f"Templating ({i}): Unsupported way to template ({known}; kapply templates with ytt, kustomize, "
                "helmTemplate)"
            )
    return tuple(steps)


def _deploy(value: Any) -> Deploy:
    items = _list(value, "spec.deploy")
    if len(items) != 1:
        raise SpecError("Expected exactly one deploy option")
    item = _map(items[0], "spec.deploy[0]")
    if "kapp" not in item:
        raise SpecError("Deploying: Unsupported way to deploy (kapply deploys with kapp)")
    kapp = _map(item["kapp"], "spec.deploy[0].kapp")
    inspect = kapp.get("inspect")
    return Deploy(
        into_ns=_str(kapp.get("intoNs"), "spec.deploy[0].kapp.intoNs"),
        map_ns=_strings(kapp.get("mapNs"), "spec.deploy[0].kapp.mapNs"),
        raw_options=_strings(kapp.get("rawOptions"), "spec.deploy[0].kapp.rawOptions"),
        delete_raw_options=_strings(
            _map(kapp.get("delete"), "spec.deploy[0].kapp.delete").get("rawOptions"),
            "spec.deploy[0].kapp.delete.rawOptions",
        ),
        inspect=inspect is not None,
        inspect_raw_options=_strings(_map(inspect, "spec.deploy[0].kapp.inspect").get("rawOptions"), "inspect"),
    )


def parse_spec(app: Obj) -> AppSpec:
    """The App's spec, or SpecError naming what is wrong."""
    spec = _map(app.get("spec"), "spec")
    if not spec:
        raise SpecError("Expected spec to be present")
    if "cluster" in spec:
        raise SpecError("spec.cluster is not supported: kapply deploys to the App's own cluster (docs/reconciler.md)")
    account = _str(spec.get("serviceAccountName"), "spec.serviceAccountName")
    if not account:
        raise SpecError("Preparing kapp: Expected service account or cluster specified")
    period_text = _str(spec.get("syncPeriod"), "spec.syncPeriod")
    try:
        period = parse_duration(period_text) if period_text else None
    except ValueError as e:
        raise SpecError(f"Expected spec.syncPeriod to be a duration: {e}") from None
    policy_text = _str(spec.get("driftPolicy"), "spec.driftPolicy") or DriftPolicy.ENFORCE.value
    try:
        policy = DriftPolicy(policy_text)
    except ValueError:
        raise SpecError(
            f"Expected spec.driftPolicy to be one of enforce, preserve, warn, got '{policy_text}'"
        ) from None
    return AppSpec(
        service_account=account,
        fetch=_fetch(spec.get("fetch")),
        template=_template(spec.get("template")),
        deploy=_deploy(spec.get("deploy")),
        sync_period=period,
        paused=_bool(spec.get("paused"), "spec.paused"),
        canceled=_bool(spec.get("canceled"), "spec.canceled"),
        noop_delete=_bool(spec.get("noopDelete"), "spec.noopDelete"),
        default_namespace=_str(spec.get("defaultNamespace"), "spec.defaultNamespace"),
        drift_policy=policy,
    )
