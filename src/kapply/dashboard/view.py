"""What the dashboard shows, as plain data: a row of the Apps list for an App or PackageInstall, the filters of the
list, and one App's page (its status, drift and ghost diffs). Pure functions of the objects the API server returned.

Values of drift and ghost-diff entries are the status's, which the controller masks (a Secret's, or any resource
under a diffMaskRule: never shown); an entry of a Secret that still carries a value (a status anyone may write) is
masked again here, so no Secret value reaches the page."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kapply.objects import Obj

MASKED = "(masked: a Secret's value)"
_SECRET = re.compile(r"^secret/", re.I)


class State:
    """The sync state a row shows: the App's condition, or what stops it."""

    SUCCEEDED = "ReconcileSucceeded"
    FAILED = "ReconcileFailed"
    RECONCILING = "Reconciling"
    DELETING = "Deleting"
    DELETE_FAILED = "DeleteFailed"
    PAUSED = "Paused"
    CANCELED = "Canceled"
    UNKNOWN = "Unknown"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def state(obj: Obj) -> str:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    if spec.get("canceled"):
        return State.CANCELED
    if spec.get("paused"):
        return State.PAUSED
    conditions = [c for c in _list(status.get("conditions")) if isinstance(c, dict) and c.get("status") == "True"]
    return str(conditions[0].get("type")) if conditions else State.UNKNOWN


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the Apps list."""

    kind: str  # App or PackageInstall
    group: str
    namespace: str
    name: str
    state: str
    description: str
    last_deploy: str  # status.deploy.startedAt (or updatedAt)
    created: str
    paused: bool
    canceled: bool
    drift_policy: str
    drifted: int
    ghosts: int
    labels: tuple[tuple[str, str], ...]

    @property
    def key(self) -> str:
        return f"{self.kind}.{self.group}/{self.namespace}/{self.name}"

    def to_json(self) -> Obj:
        """Times as the status has them (RFC 3339): the page shows how long ago, kept current."""
        return {
            "key": self.key,
            "kind": self.kind,
            "group": self.group,
            "namespace": self.namespace,
            "name": self.name,
            "state": self.state,
            "description": self.description,
            "lastDeploy": self.last_deploy,
            "created": self.created,
            "paused": self.paused,
            "canceled": self.canceled,
            "driftPolicy": self.drift_policy,
            "drifted": self.drifted,
            "ghostDiffs": self.ghosts,
            "labels": dict(self.labels),
        }


def row(obj: Obj) -> Row:
    meta, spec, status = _dict(obj.get("metadata")), _dict(obj.get("spec")), _dict(obj.get("status"))
    deploy = _dict(status.get("deploy"))
    labels = _dict(meta.get("labels"))
    group = str(obj.get("apiVersion", "")).partition("/")[0]
    return Row(
        kind=str(obj.get("kind", "")),
        group=group,
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        state=state(obj),
        description=str(status.get("friendlyDescription", "")),
        last_deploy=str(deploy.get("startedAt") or deploy.get("updatedAt") or ""),
        created=str(meta.get("creationTimestamp", "")),
        paused=bool(spec.get("paused")),
        canceled=bool(spec.get("canceled")),
        drift_policy=str(spec.get("driftPolicy") or ("enforce" if obj.get("kind") == "App" else "")),
        drifted=len(_list(_dict(status.get("drift")).get("fields"))),
        ghosts=len(_list(_dict(status.get("ghostDiffs")).get("diffs"))),
        labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())),
    )


@dataclass(frozen=True, slots=True)
class Filters:
    """The list's filters (the page's query): a namespace, a state, a label (`key` or `key=value`); "" is any."""

    namespace: str = ""
    state: str = ""
    label: str = ""

    @classmethod
    def of(cls, query: Mapping[str, str]) -> Filters:
        return cls(query.get("namespace", "").strip(), query.get("state", "").strip(), query.get("label", "").strip())

    def match(self, item: Row) -> bool:
        if self.namespace and item.namespace != self.namespace:
            return False
        if self.state and item.state != self.state:
            return False
        if self.label:
            key, has_value, value = self.label.partition("=")
            labels = dict(item.labels)
            if key.strip() not in labels or (has_value and labels[key.strip()] != value.strip()):
                return False
        return True


def _masked_entry(entry: Any) -> Obj:
    """A drift or ghost-diff entry as the page shows it: a Secret's values masked whatever the status says."""
    item = {str(k): v for k, v in _dict(entry).items()}
    if _SECRET.match(str(item.get("resource", ""))):
        for field in ("desired", "live"):
            if field in item:
                item[field] = MASKED
    return item


def detail(obj: Obj) -> Obj:
    """One App's (or PackageInstall's) page: its row, conditions, last deploy (and fetch, template, inspect) output as
    the status holds it, drift and ghost diffs (Secrets masked) with the suggested Config."""
    status = _dict(obj.get("status"))
    ghosts = _dict(status.get("ghostDiffs"))
    stages = {}
    for stage in ("fetch", "template", "deploy", "inspect"):
        part = _dict(status.get(stage))
        if part:
            stages[stage] = {
                "exitCode": part.get("exitCode"),
                "error": str(part.get("error", "")),
                "stdout": str(part.get("stdout", "")),
                "stderr": str(part.get("stderr", "")),
                "updatedAt": str(part.get("updatedAt", "")),
            }
    return {
        "row": row(obj).to_json(),
        "conditions": [_dict(c) for c in _list(status.get("conditions"))],
        "usefulErrorMessage": str(status.get("usefulErrorMessage", "")),
        "stages": stages,
        "drift": [_masked_entry(e) for e in _list(_dict(status.get("drift")).get("fields"))],
        "ghostDiffs": [_masked_entry(e) for e in _list(ghosts.get("diffs"))],
        "suggestedConfig": str(ghosts.get("suggestedConfig", "")),
    }


def event_json(event: Obj) -> Obj:
    """An Event of the App as the page lists it."""
    return {
        "type": str(event.get("type", "")),
        "reason": str(event.get("reason", "")),
        "message": str(event.get("message", "")),
        "count": event.get("count") or 1,
        "lastTimestamp": str(event.get("lastTimestamp") or _dict(event.get("metadata")).get("creationTimestamp", "")),
    }


def sorted_events(events: Sequence[Obj]) -> list[Obj]:
    return sorted((event_json(e) for e in events), key=lambda e: str(e["lastTimestamp"]), reverse=True)


def _where(obj: Obj) -> tuple[str, str]:
    meta = _dict(obj.get("metadata"))
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def repository_json(obj: Obj) -> Obj:
    """A PackageRepository on the packages page: where it fetches from and its state."""
    namespace, name = _where(obj)
    fetch = _dict(_dict(obj.get("spec")).get("fetch"))
    source = next((str(v.get("image") or v.get("url") or k) for k, v in fetch.items() if isinstance(v, dict)), "")
    status = _dict(obj.get("status"))
    return {
        "namespace": namespace,
        "name": name,
        "source": source,
        "state": state(obj),
        "description": str(status.get("friendlyDescription", "")),
    }


def package_json(obj: Obj) -> Obj:
    """A Package (one version of one package) on the packages page."""
    namespace, _ = _where(obj)
    spec = _dict(obj.get("spec"))
    return {"namespace": namespace, "refName": str(spec.get("refName", "")), "version": str(spec.get("version", ""))}


def install_json(obj: Obj) -> Obj:
    """A PackageInstall on the packages page: the package and version it asks for, and the version it runs."""
    namespace, name = _where(obj)
    ref = _dict(_dict(obj.get("spec")).get("packageRef"))
    status = _dict(obj.get("status"))
    return {
        "key": row(obj).key,
        "namespace": namespace,
        "name": name,
        "package": str(ref.get("refName", "")),
        "constraints": str(_dict(ref.get("versionSelection")).get("constraints", "")),
        "version": str(status.get("version", "")),
        "lastAttemptedVersion": str(status.get("lastAttemptedVersion", "")),
        "state": state(obj),
    }
