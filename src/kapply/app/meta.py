"""The JSON kapp keeps in `data.spec` of the app ConfigMap and of each app-change ConfigMap.

Field order and formats follow kapp's Go structs, so either tool reads what the other wrote.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import orjson

from kapply import objects
from kapply.objects import Obj

ZERO_TIME = "0001-01-01T00:00:00Z"

GroupVersionKind = tuple[str, str, str]


def kinds_of(resources: Iterable[Obj]) -> frozenset[GroupVersionKind]:
    """The (group, version, kind) of each resource: what an app records as used."""
    return frozenset(
        (objects.group_of(r), objects.api_version(r).rpartition("/")[2], objects.kind(r)) for r in resources
    )


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    def from_json(cls, doc: Obj | None) -> ChangeMeta:
        doc = doc or {}
        return cls(
            doc.get("startedAt") or ZERO_TIME,
            doc.get("finishedAt") or ZERO_TIME,
            doc.get("successful"),
            doc.get("description") or "",
            tuple(doc.get("namespaces") or ()),
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
    def from_json(cls, raw: str) -> AppMeta:
        doc = orjson.loads(raw)
        gks = doc.get("usedGKs")
        return cls(
            label_key=doc["labelKey"],
            label_value=doc["labelValue"],
            last_change_name=doc.get("lastChangeName") or "",
            last_change=ChangeMeta.from_json(doc.get("lastChange")),
            used_gvs=tuple((gv["Group"], gv["Version"]) for gv in doc.get("usedGVs") or []),
            used_gks=None if gks is None else tuple((gk["Group"], gk["Kind"]) for gk in gks),
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
