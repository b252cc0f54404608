"""The JSON kapp keeps in `data.spec` of the app ConfigMap and of each app-change ConfigMap.

Field order and formats follow kapp's Go structs, so either tool reads what the other wrote.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson

from kapply import objects
from kapply.errors import KapplyError
from kapply.objects import Obj

ZERO_TIME = "0001-01-01T00:00:00Z"

GroupVersionKind = tuple[str, str, str]

_T = TypeVar("_T")


class AppMetaError(KapplyError, ValueError):
    """App or app-change metadata (`data.spec`) that is not what kapp writes. A ValueError too, as the JSON decoder's
    errors are, so that readers that name the ConfigMap it came from keep doing so."""


def _typed(value: Any, kind: type[_T], where: str) -> _T:
    if not isinstance(value, kind):
        raise AppMetaError(f"expected {where} to be {_JSON_TYPES[kind]}, but was {_json_type(value)}")
    return value


def _optional(doc: Obj, key: str, kind: type[_T], default: _T, where: str) -> _T:
    """doc[key], or the default when it is missing or null (as Go's encoding/json leaves the zero value)."""
    value = doc.get(key)
    return default if value is None else _typed(value, kind, f"'{where}{key}'")


def _pairs(value: Any, first: str, second: str, where: str) -> tuple[tuple[str, str], ...]:
    """[{first: .., second: ..}, ...] (schema.GroupVersion or GroupKind, fields named as Go names them)."""
    out = []
    for index, item in enumerate(_typed(value, list, f"'{where}'")):
        entry = _typed(item, dict, f"'{where}[{index}]'")
        here = f"{where}[{index}]."
        out.append((_optional(entry, first, str, "", here), _optional(entry, second, str, "", here)))
    return tuple(out)


_JSON_TYPES = {str: "a string", bool: "a boolean", list: "a list", dict: "an object"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return next((name for kind, name in _JSON_TYPES.items() if isinstance(value, kind)), "a number")


def kinds_of(resources: Iterable[Obj]) -> frozenset[GroupVersionKind]:
    """The (group, version, kind) of each resource: what an app records as used."""
    return frozenset(
        (objects.group_of(r), objects.api_version(r).rpartition("/")[2], objects.kind(r)) for r in resources
    )


def now() -> str:
    """The time as kapp's records hold it: Go's RFC 3339 with nanoseconds, trailing zeros dropped."""
    nanos = time.time_ns()
    seconds, fraction = divmod(nanos, 1_000_000_000)
    text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{fraction:09d}".rstrip("0").rstrip(".") + "Z"


@dataclass(frozen=True, slots=True)
class ChangeMeta:
    started_at: str = ZERO_TIME
    finished_at: str = ZERO_TIME
    successful: bool | None = None
    description: str = ""
    namespaces: tuple[str, ...] = ()

    def to_json(self) -> Obj:
        out: Obj = {"startedAt": self.started_at, "finishedAt": self.finished_at}
        if self.successful is not None:
            out["successful"] = self.successful
        if self.description:
            out["description"] = self.description
        if self.namespaces:
            out["namespaces"] = list(self.namespaces)
        return out

    @classmethod
    def from_json(cls, doc: Any, where: str = "") -> ChangeMeta:
        """The change metadata in a decoded JSON value; `where` prefixes field names in errors (`lastChange.`)."""
        if doc is None:
            return cls()
        doc = _typed(doc, dict, f"'{where.rstrip('.')}'" if where else "app-change metadata")
        successful = doc.get("successful")
        namespaces = _optional(doc, "namespaces", list, [], where)
        return cls(
            _optional(doc, "startedAt", str, "", where) or ZERO_TIME,
            _optional(doc, "finishedAt", str, "", where) or ZERO_TIME,
            None if successful is None else _typed(successful, bool, f"'{where}successful'"),
            _optional(doc, "description", str, "", where),
            tuple(_typed(ns, str, f"'{where}namespaces[{i}]'") for i, ns in enumerate(namespaces)),
        )

    def finish(self, successful: bool) -> ChangeMeta:
        return replace(self, finished_at=now(), successful=successful)


@dataclass(frozen=True, slots=True)
class AppMeta:
    label_key: str
    label_value: str
    last_change_name: str = ""
    last_change: ChangeMeta = field(default_factory=ChangeMeta)
    used_gvs: tuple[tuple[str, str], ...] = ()  # (group, version)
    used_gks: tuple[tuple[str, str], ...] | None = ()  # (group, kind); None: an app that never recorded them

    @property
    def label_selector(self) -> str:
        return f"{self.label_key}={self.label_value}"

    def to_json(self) -> bytes:
        doc: Obj = {"labelKey": self.label_key, "labelValue": self.label_value}
        if self.last_change_name:
            doc["lastChangeName"] = self.last_change_name
        doc["lastChange"] = self.last_change.to_json()
        if self.used_gvs:  # omitempty in kapp's struct, unlike usedGKs
            doc["usedGVs"] = [{"Group": g, "Version": v} for g, v in self.used_gvs]
        doc["usedGKs"] = None if self.used_gks is None else [{"Group": g, "Kind": k} for g, k in self.used_gks]
        return orjson.dumps(doc)

    @classmethod
    def from_json(cls, raw: str | bytes) -> AppMeta:
        """The app metadata in its JSON text; AppMetaError when it is not JSON of the shape kapp writes."""
        if not isinstance(raw, str | bytes):
            raise AppMetaError(f"expected JSON text, but was {_json_type(raw)}")
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise AppMetaError(f"not JSON: {e}") from None
        doc = _typed(doc, dict, "app metadata")
        for key in ("labelKey", "labelValue"):
            if not isinstance(doc.get(key), str):
                raise AppMetaError(f"expected '{key}' to be a string, but was {_json_type(doc.get(key))}")
        gks = doc.get("usedGKs")
        return cls(
            label_key=doc["labelKey"],
            label_value=doc["labelValue"],
            last_change_name=_optional(doc, "lastChangeName", str, "", ""),
            last_change=ChangeMeta.from_json(doc.get("lastChange"), "lastChange."),
            used_gvs=() if doc.get("usedGVs") is None else _pairs(doc["usedGVs"], "Group", "Version", "usedGVs"),
            used_gks=None if gks is None else _pairs(gks, "Group", "Kind", "usedGKs"),
        )

    def with_used(self, kinds: Iterable[GroupVersionKind]) -> AppMeta:
        """The meta with usedGVs and usedGKs set from `kinds` (kapp's UpdateUsedGVsAndGKs): later deploys list only
        those kinds to find the app's resources."""
        kinds = tuple(kinds)
        gvs = {(group, version) for group, version, _ in kinds}
        gks = {(group, kind) for group, _, kind in kinds}
        return replace(
            self,
            used_gvs=tuple(sorted(gvs, key=lambda gv: gv[0] + gv[1])),
            used_gks=tuple(sorted(gks, key=lambda gk: gk[0] + gk[1])),
        )
