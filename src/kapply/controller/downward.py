"""`valuesFrom[].downwardAPI`: values taken from the App itself and from the cluster it runs on, as kapp-controller's
pkg/template/downward_api_values.go makes them: each item becomes one values file, `name` (dots nest keys, `\\`
escapes a dot) set to the item's value.

An item's value is one of: `fieldPath`, a relaxed JSONPath (`metadata.name`, `.metadata.name`, `{metadata.name}`,
`{.metadata.name}`) into the App's metadata, of which only `name`, `namespace`, `uid`, `labels` and `annotations`
exist; `kubernetesVersion` (the cluster's, unless `version` is given); `kappControllerVersion` (kapply's, unless
given); `kubernetesAPIs` (the group versions the cluster serves, unless `groupVersions` is given).

A field path is read by kapply's own small reader, never by a JSONPath engine: fields (`.name`, `\\.` escaping a dot)
and quoted keys (`['app.kubernetes.io/name']`) only, over a copy of those five metadata fields. Nothing else of the
App (its spec, its status) and no other object can be named; wildcards, filters, ranges and anything after the path
are refused with the path in the message.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import yaml

from kapply import __version__
from kapply.errors import KapplyError
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.controller.spec import TemplateStep


class DownwardError(KapplyError):
    """A downward API item that cannot be read or has no single value."""


class DownwardKind(StrEnum):
    """What an item's value is, in the order kapp-controller looks for them (the first set wins)."""

    FIELD_PATH = "fieldPath"
    KUBERNETES_VERSION = "kubernetesVersion"
    KAPP_CONTROLLER_VERSION = "kappControllerVersion"
    KUBERNETES_APIS = "kubernetesAPIs"


@dataclass(frozen=True, slots=True)
class DownwardItem:
    name: str  # where the value goes: dots nest keys
    kind: DownwardKind
    field_path: tuple[str, ...] = ()  # FIELD_PATH: the keys from the App's root (`metadata`, `labels`, `app`)
    version: str = ""  # KUBERNETES_VERSION, KAPP_CONTROLLER_VERSION: the given one ("": looked up)
    group_versions: tuple[str, ...] | None = None  # KUBERNETES_APIS: the given ones (None: looked up)

    @property
    def looks_up_version(self) -> bool:
        return self.kind is DownwardKind.KUBERNETES_VERSION and not self.version

    @property
    def looks_up_apis(self) -> bool:
        return self.kind is DownwardKind.KUBERNETES_APIS and self.group_versions is None


@dataclass(frozen=True, slots=True)
class AppContext:
    """What the template stage knows of the App and its cluster: the App's metadata a field path may read, and the
    cluster's version and APIs (looked up by the controller only when a step asks for them, "" and () otherwise)."""

    name: str
    namespace: str
    uid: str = ""
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    kubernetes_version: str = ""
    kubernetes_apis: tuple[str, ...] = ()

    @classmethod
    def of(cls, app: Obj, kubernetes_version: str = "", kubernetes_apis: tuple[str, ...] = ()) -> AppContext:
        meta = app["metadata"]
        return cls(
            meta["name"],
            meta["namespace"],
            str(meta.get("uid") or ""),
            _pairs(meta.get("labels")),
            _pairs(meta.get("annotations")),
            kubernetes_version,
            kubernetes_apis,
        )

    def to_json(self) -> Obj:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "kubernetesVersion": self.kubernetes_version,
            "kubernetesAPIs": list(self.kubernetes_apis),
        }

    @classmethod
    def from_json(cls, doc: Obj) -> AppContext:
        return cls(
            str(doc["name"]),
            str(doc["namespace"]),
            str(doc.get("uid") or ""),
            _pairs(doc.get("labels")),
            _pairs(doc.get("annotations")),
            str(doc.get("kubernetesVersion") or ""),
            tuple(str(v) for v in doc.get("kubernetesAPIs") or ()),
        )

    def metadata(self) -> Obj:
        """The object a field path reads: kapp-controller's PartialObjectMetadata (labels and annotations are there
        even when empty)."""
        return {
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "uid": self.uid,
                "labels": dict(self.labels),
                "annotations": dict(self.annotations),
            }
        }


def _pairs(value: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in (value or {}).items())) if isinstance(value, dict) else ()


def check_name(name: str) -> None:
    """kapp-controller's check of an item's name."""
    if name.startswith(".") or name.endswith(".") or ".." in name:
        raise DownwardError(
            f"Invalid name was provided '{name}' (hint: separate paths should only use a single '.' character)"
        )


# kubectl's custom columns' relaxed JSONPath, as kapp-controller copied it
_RELAXED = re.compile(r"^\{\.?([^{}]+)\}$|^\.?([^{}]+)$")
_FIELD_END = frozenset(".[")


def parse_field_path(path: str) -> tuple[str, ...]:
    """The keys a relaxed JSONPath names (`metadata.labels['app']` -> metadata, labels, app); DownwardError for
    anything but fields and quoted keys."""
    match = _RELAXED.match(path)
    if match is None:
        raise DownwardError(
            "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'"
        )
    spec = "." + (match.group(1) or match.group(2))
    keys: list[str] = []
    i = 0
    while i < len(spec):
        if spec[i] == ".":
            i += 1
            key: list[str] = []
            while i < len(spec) and spec[i] not in _FIELD_END:
                if spec[i] == "\\" and i + 1 < len(spec):
                    i += 1
                elif not (spec[i].isalnum() or spec[i] in "-_/"):
                    break
                key.append(spec[i])
                i += 1
            if not key:
                break
            keys.append("".join(key))
        elif spec[i] == "[" and spec[i + 1 : i + 2] in ("'", '"'):
            quote = spec[i + 1]
            end = spec.find(quote + "]", i + 2)
            if end < 0:
                break
            keys.append(spec[i + 2 : end])
            i = end + 2
        else:
            break
    else:
        return tuple(keys)
    raise DownwardError(
        f"Invalid field path '{path}': only fields (metadata.name) and quoted keys (metadata.labels['k']) are supported"
    )


def _field(item: DownwardItem, app: AppContext) -> Any:
    value: Any = app.metadata()
    for key in item.field_path:
        if not isinstance(value, dict) or key not in value:
            raise DownwardError(f"{key} is not found")
        value = value[key]
    return value


def _nested(name: str, value: Any) -> str:
    """`name: value` as YAML, `name` split at dots (`\\` escapes one) into nested keys."""
    keys, key, i = [], "", 0
    while i < len(name):
        if name[i] == ".":
            keys.append(key)
            key = ""
        elif name[i] == "\\" and i + 1 < len(name):
            i += 1
            key += name[i]
        else:
            key += name[i]
        i += 1
    keys.append(key)
    doc: Any = value
    for part in reversed(keys):
        doc = {part: doc}
    return yaml.safe_dump(doc, default_flow_style=False, sort_keys=True)


def values_file(item: DownwardItem, app: AppContext) -> str:
    """The YAML of one item, as a values file."""
    match item.kind:
        case DownwardKind.FIELD_PATH:
            value: Any = _field(item, app)
        case DownwardKind.KUBERNETES_VERSION:
            value = item.version or app.kubernetes_version
        case DownwardKind.KAPP_CONTROLLER_VERSION:
            value = item.version or __version__
        case DownwardKind.KUBERNETES_APIS:
            value = list(app.kubernetes_apis if item.group_versions is None else item.group_versions)
    return _nested(item.name, value)


FACTS_TTL = 300.0  # seconds the cluster's version and APIs are kept before they are read again


def needs(steps: Iterable[TemplateStep]) -> tuple[bool, bool]:
    """Whether the template steps read the cluster's version, and its group versions (a downward API item that does
    not give its own, or a helm step's kubernetesVersion / kubernetesAPIs)."""
    version = apis = False
    for step in steps:
        version |= step.kubernetes_version
        apis |= step.kubernetes_apis
        for source in step.values_from:
            for item in source.downward or ():
                version |= item.looks_up_version
                apis |= item.looks_up_apis
    return version, apis


def _semver(git_version: str) -> str:
    """`/version`'s gitVersion as kapp-controller shows it (semver's ParseTolerant, then String): no `v`."""
    return git_version.strip().removeprefix("v")


class ClusterFacts:
    """The cluster's version and group versions, read with an App's own client when a template step needs them and
    kept for FACTS_TTL seconds, so that an idle App's sync does not ask the API server each time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._version: tuple[float, str] | None = None
        self._apis: tuple[float, tuple[str, ...]] | None = None

    async def context(self, app: Obj, steps: Iterable[TemplateStep], client: AsyncClient) -> AppContext:
        """The App's context for its template stage, the cluster read with the App's `client` only when needed;
        ClusterError when it cannot be read."""
        version, apis = needs(steps)
        now = self._clock()
        if version and (self._version is None or now - self._version[0] > FACTS_TTL):
            answer = await client.cluster.server_version()
            self._version = (now, _semver(str(answer.get("gitVersion", ""))))
        if apis and (self._apis is None or now - self._apis[0] > FACTS_TTL):
            served = (await client.cluster.discovery(refresh=self._apis is not None)).types
            self._apis = (now, tuple(dict.fromkeys(t.api_version for t in served)))
        return AppContext.of(
            app,
            self._version[1] if version and self._version else "",
            self._apis[1] if apis and self._apis else (),
        )
