"""Fields a controller on the cluster owns, which an App's deploy keeps at the cluster's value instead of setting them
back: who drifted decides how fast the controller reacts (docs/reconciler.md, "Drift policies").

- Known owners: a Deployment, StatefulSet or ReplicaSet of the App that a HorizontalPodAutoscaler of its namespace
  targets (`spec.scaleTargetRef`), on the cluster or in the App's own manifests, has its `spec.replicas` rebased
  (kapp's hpa-deployment-rebase recipe: copy from the existing object when it has the field), without being told.
- Held fields: a field some writer (field manager, operation, subresource) changed, that a sync set back, and that
  the same writer sets again within one sync period, is owned by a controller: it is held at the live value by the
  same kind of copy rule, for that one object and path, until the App's desired state changes (its manifests, deploy
  options or drift policy). A field no field manager wrote (a mutating webhook) is never held: there is no writer to
  recognise.

Both are rebase rules of a kapp Config appended to the manifests the App deploys (`with_rules`), through the same
path a user's own Config takes. What is held is kept per App in memory (`Owners`) and in the App's status
(`status.fieldOwners`), from which it is read back after a restart; when a field was set back is kept in memory only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from kapply.api import AsyncClient, FieldReport, rebase_config
from kapply.errors import KapplyError
from kapply.objects import CONFIG_API_VERSION, Obj
from kapply.resources.cluster import ResourceType

Key = tuple[str, str]  # (resource, field path), as the status shows them
SCALABLE = frozenset({"Deployment", "StatefulSet", "ReplicaSet"})  # of apps/v1, what an HPA scales here
HPAS = ResourceType(
    "autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, frozenset({"list"})
)
SYNC_SLACK = 2.0  # at most, seconds a writer may be later than one sync period and still be seen again (seen_again)
NO_WRITER = "no recorded field manager"  # what kapply.api reports for a field no manager wrote (ghost.writer)
_WHEN = re.compile(r" at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@dataclass(frozen=True, slots=True, order=True)
class Workload:
    kind: str
    namespace: str
    name: str

    @property
    def resource(self) -> str:
        """As kapply.api's FieldReport names it (`Change.describe()`)."""
        return f"{self.kind.lower()}/{self.name} (apps/v1) namespace: {self.namespace}"


@dataclass(frozen=True, slots=True, order=True)
class Known:
    """A workload's `spec.replicas` that a HorizontalPodAutoscaler owns (`hpa`: its namespace/name)."""

    workload: Workload
    hpa: str

    def rule(self) -> Obj:
        w = self.workload
        matcher = {"kindNamespaceNameMatcher": {"kind": w.kind, "namespace": w.namespace, "name": w.name}}
        return {
            "path": ["spec", "replicas"],
            "type": "copy",
            "sources": ["existing", "new"],
            "resourceMatchers": [matcher],
        }

    def to_status(self) -> Obj:
        return {
            "resource": self.workload.resource,
            "path": "spec.replicas",
            "owner": f"HorizontalPodAutoscaler {self.hpa}",
            "rule": "hpa-deployment-rebase",
        }


@dataclass(frozen=True, slots=True)
class Hold:
    """A field held at the live value: its writer, since when, the desired state it was held under (a change of it
    ends the hold) and the copy rule that holds it."""

    resource: str
    path: str
    writer: str
    since: str
    digest: str
    rule: Obj

    @property
    def key(self) -> Key:
        return self.resource, self.path

    def to_status(self) -> Obj:
        return {
            "resource": self.resource,
            "path": self.path,
            "writtenBy": self.writer,
            "since": self.since,
            "desiredDigest": self.digest,
            "rule": self.rule,
        }


@dataclass
class Owners:
    """What the controller remembers of an App's owned fields between syncs: the known owners found on the cluster
    at the last sync that looked, the held fields, and who wrote each field a sync set back, and when (monotonic
    seconds)."""

    cluster: tuple[Known, ...] = ()
    held: dict[Key, Hold] = field(default_factory=dict)
    reverted: dict[Key, tuple[str, float]] = field(default_factory=dict)


def writer(report: FieldReport) -> str:
    """The writer of a reported field without the time it wrote: field manager, operation and subresource
    (`kube-controller-manager (Update, scale)`); "" when no field manager wrote it."""
    if NO_WRITER in report.written_by:
        return ""
    return _WHEN.sub("", report.written_by)


def documents(manifests: str) -> list[Obj]:
    """The manifests' objects; [] for YAML the deploy itself will refuse with its own message."""
    try:
        return [d for d in yaml.load_all(manifests, Loader=_LOADER) if isinstance(d, dict)]
    except yaml.YAMLError:
        return []


_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def workloads(documents: Iterable[Obj], namespace: str) -> list[Workload]:
    """The apps/v1 Deployments, StatefulSets and ReplicaSets among the documents (`namespace`: where those without
    one go)."""
    return sorted(
        {
            Workload(str(d["kind"]), str(_meta(d).get("namespace") or namespace), str(_meta(d).get("name") or ""))
            for d in documents
            if d.get("kind") in SCALABLE and str(d.get("apiVersion", "")).startswith("apps/")
        }
    )


def hpas(documents: Iterable[Obj]) -> list[Obj]:
    return [d for d in documents if d.get("kind") == "HorizontalPodAutoscaler"]


def known(found: Sequence[Workload], autoscalers: Iterable[Obj], namespace: str) -> tuple[Known, ...]:
    """The workloads an HPA of their namespace targets (its `scaleTargetRef` names their kind and name)."""
    by_target: dict[Workload, str] = {}
    for hpa in autoscalers:
        meta, spec = _meta(hpa), hpa.get("spec")
        ref = spec.get("scaleTargetRef") if isinstance(spec, dict) else None
        if not isinstance(ref, dict) or not str(ref.get("apiVersion", "apps/v1")).startswith("apps/"):
            continue
        hpa_namespace = str(meta.get("namespace") or namespace)
        target = Workload(str(ref.get("kind")), hpa_namespace, str(ref.get("name")))
        by_target.setdefault(target, f"{hpa_namespace}/{meta.get('name')}")
    return tuple(sorted(Known(w, by_target[w]) for w in found if w in by_target))


async def on_cluster(client: AsyncClient, found: Sequence[Workload]) -> list[Obj]:
    """The HPAs of the namespaces the workloads are in (one LIST each), read with the controller's client; a
    namespace it may not list (or an API without autoscaling/v2) has none."""
    out: list[Obj] = []
    for namespace in sorted({w.namespace for w in found}):
        try:
            listed = await client.cluster.list(HPAS, namespace=namespace)
        except KapplyError:
            continue
        out += [{**h, "metadata": {**_meta(h), "namespace": namespace}} for h in listed]
    return out


def hold_rule(report: FieldReport) -> Obj:
    """The copy rule that keeps one object's field at the live value (kapp's recipe, see kapply.api.rebase_config)."""
    config = yaml.safe_load(rebase_config([(report.obj, [report.field])]))
    rules = config.get("rebaseRules") or []
    return dict(rules[0]) if rules else {}


def seen_again(
    ghosts: Sequence[FieldReport], reverted: Mapping[Key, tuple[str, float]], now: float, period: float
) -> list[FieldReport]:
    """The fields a sync would set back that the same writer set again after an earlier sync set them back, within
    `period` seconds and a slack of half a period, at most SYNC_SLACK (the next sync reads the field about one period
    after the revert, give or take what a sync itself takes: a writer keeping pace with a 1 s period would otherwise
    not be seen in time; a person who does it again a few syncs later is still a person), and replicas an autoscaler
    wrote (`scaler`): a controller owns them."""
    window = period + min(SYNC_SLACK, period / 2)
    out = []
    for report in ghosts:
        who = writer(report)
        before = reverted.get((report.resource, report.path))
        if scaler(report) or (who and before is not None and before[0] == who and now - before[1] <= window):
            out.append(report)
    return out


def scaler(report: FieldReport) -> bool:
    """Whether a field is a workload's `spec.replicas` written through the scale subresource by something other than
    kubectl (`kubectl scale` is a person): an autoscaler (an HPA the App cannot see, KEDA, a custom one) owns it, and
    it is held from the first sync that sees it, never set back."""
    who = writer(report)
    return (
        report.path == "spec.replicas"
        and report.resource.split("/", 1)[0] in {k.lower() for k in SCALABLE}
        and who.endswith(", scale)")
        and not who.startswith("kubectl")
    )


def rules(known_owners: Iterable[Known], held: Iterable[Hold]) -> tuple[Obj, ...]:
    out = [k.rule() for k in sorted(set(known_owners))]
    out += [h.rule for h in sorted(held, key=lambda h: h.key) if h.rule]
    return tuple(out)


def with_rules(manifests: str, extra: Sequence[Obj]) -> str:
    """The manifests with a kapp Config of the extra rebase rules appended (unchanged when there are none)."""
    if not extra:
        return manifests
    config = {"apiVersion": CONFIG_API_VERSION, "kind": "Config", "rebaseRules": list(extra)}
    return manifests.rstrip("\n") + "\n---\n" + yaml.safe_dump(config, sort_keys=False)


def after_sync(
    memory: Owners,
    digest: str,
    cluster: tuple[Known, ...],
    new: Sequence[Hold],
    set_back: Sequence[FieldReport],
    now: float,
) -> None:
    """What a sync leaves in the App's memory: the known owners it found, the holds of its desired state (holds of an
    earlier one end), and the writers of the fields it set back."""
    memory.cluster = cluster
    memory.held = {k: h for k, h in memory.held.items() if h.digest == digest} | {h.key: h for h in new}
    for report in set_back:
        if who := writer(report):
            memory.reverted[(report.resource, report.path)] = (who, now)
        else:
            memory.reverted.pop((report.resource, report.path), None)


def read_back(status: Obj) -> Owners:
    """The held fields a status lists (after a restart). Anyone who may write the App's status may write these, so
    only a rule of the shape `hold_rule` makes is taken (`held_rule`); any other entry is dropped."""
    held = {}
    owners = status.get("fieldOwners")
    for item in (owners.get("held") if isinstance(owners, dict) else None) or []:
        if isinstance(item, dict) and held_rule(item.get("rule")):
            hold = Hold(
                str(item.get("resource")),
                str(item.get("path")),
                str(item.get("writtenBy") or ""),
                str(item.get("since") or ""),
                str(item.get("desiredDigest") or ""),
                item["rule"],
            )
            held[hold.key] = hold
    return Owners(held=held)


def held_rule(rule: Any) -> bool:
    """Whether a rule read back from a status is one `hold_rule` could have made: a copy from the existing object of
    plain paths (keys, `index`, `allIndexes`), for objects matched by kind, namespace and name. Nothing else (ytt
    rules, regex parts, other matchers) is taken from a status."""
    if not isinstance(rule, dict) or set(rule) - {"path", "paths", "type", "sources", "resourceMatchers"}:
        return False
    paths = [rule["path"]] if "path" in rule else rule.get("paths")
    matchers = rule.get("resourceMatchers")
    return (
        rule.get("type") == "copy"
        and rule.get("sources") == ["existing", "new"]
        and isinstance(paths, list)
        and bool(paths)
        and all(_plain_path(p) for p in paths)
        and isinstance(matchers, list)
        and bool(matchers)
        and all(_by_name(m) for m in matchers)
    )


def _plain_path(path: Any) -> bool:
    return (
        isinstance(path, list)
        and bool(path)
        and all(isinstance(p, str) or p == {"allIndexes": True} or _index(p) for p in path)
    )


def _index(part: Any) -> bool:
    return isinstance(part, dict) and set(part) == {"index"} and type(part["index"]) is int


def _by_name(matcher: Any) -> bool:
    if not isinstance(matcher, dict) or set(matcher) != {"kindNamespaceNameMatcher"}:
        return False
    names = matcher["kindNamespaceNameMatcher"]
    return (
        isinstance(names, dict)
        and set(names) == {"kind", "namespace", "name"}
        and all(isinstance(v, str) for v in names.values())
    )


def to_status(in_force: Sequence[Known], held: Iterable[Hold]) -> Obj:
    """`status.fieldOwners`: the known-owner rules in force, the held fields, and the kapp Config that makes the holds
    part of the App's own manifests (which ends them); {} when there are none."""
    holds = sorted(held, key=lambda h: h.key)
    out: Obj = {}
    if in_force:
        out["knownOwners"] = [k.to_status() for k in in_force]
    if holds:
        out["held"] = [h.to_status() for h in holds]
        out["suggestedConfig"] = rebase_config([], [h.rule for h in holds if h.rule])
    return out


def held_message(hold: Hold) -> str:
    """The `DriftHeld` Event's message: the same for the same hold, so that kubectl counts repeats on one Event."""
    return (
        f"{hold.resource} {hold.path} was set again by {hold.writer} after it was set back: a controller owns it, so "
        "it is held at the cluster's value until the App's desired state changes; the rebase rule in "
        "status.fieldOwners.suggestedConfig keeps it so for good"
    )
