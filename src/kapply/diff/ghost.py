"""Explaining a recurring change ("ghost diff"), and the kapp Config that ends it.

A ghost diff is an update although the desired state did not change: something on the cluster (an HPA, a mutating
admission webhook, a person with kubectl) keeps changing a field, and every deploy changes it back. `explain` says,
per changed field, what is desired, what is live and who wrote the live value (from `metadata.managedFields`, see
`kapply.diff.fields`); `suggest_rebase_rules` writes the rebase rules that keep the cluster's value instead, as kapp's
own recipe for HPA-managed replicas does (https://carvel.dev/kapp/docs/latest/hpa-deployment-rebase/).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from kapply import objects
from kapply.config.config import Config
from kapply.config.matchers import matches_any
from kapply.diff.change import Basis, Change, Op
from kapply.diff.drift import DriftPolicy, as_stored
from kapply.diff.fields import (
    ABSENT,
    FieldOwnership,
    FieldPath,
    Named,
    changed_paths,
    owner_of,
    value_at,
)
from kapply.diff.yaml_text import to_yaml
from kapply.objects import Obj


@dataclass(frozen=True, slots=True)
class FieldDrift:
    """One field a deploy changes: the desired value, the live one (`fields.ABSENT` where a side lacks the field),
    and the managed-fields entry of whoever last wrote the live value.

    `owner` is None when the server recorded no writer: a field removed on the cluster, or one a mutating admission
    webhook added (the server records a request's fields before admission mutates the object, so a webhook is never a
    manager; a field the request set and the webhook rewrote stays with the request's manager)."""

    path: FieldPath
    desired: Any
    live: Any
    owner: FieldOwnership | None


def explain(change_left: Obj, change_right: Obj, live: Obj, desired: Obj | None = None) -> list[FieldDrift]:
    """The fields that differ between a change's existing side and its new side, with the live value of each and
    the manager that last wrote it (`live` is the object as read, `metadata.managedFields` included). The desired
    value is read from `desired` (the user's resource) when given: a new side confirmed by a server-side dry run also
    carries what admission webhooks add, which the user never asked for. A Secret's `stringData` reads as the `data`
    the server makes of it, so a key set that way has a (masked) desired value, not none."""
    source = change_right if desired is None else as_stored(desired)
    return [
        FieldDrift(path, value_at(source, path), value_at(live, path), owner_of(live, path))
        for path in changed_paths(change_left, change_right)
    ]


def drifted_fields(change: Change) -> tuple[FieldDrift, ...]:
    """The fields of `change.kept` (drifted fields the change leaves at their live value although the desired value
    differs), each with its desired and live value and the manager that wrote the live one: what `preserve` and
    `warn` leave as the cluster has it."""
    return _drift_of(change, change.kept)


def _drift_of(change: Change, paths: Sequence[FieldPath]) -> tuple[FieldDrift, ...]:
    if change.new is None or change.existing is None:
        return ()
    live, desired = change.existing, as_stored(change.new)
    return tuple(FieldDrift(p, value_at(desired, p), value_at(live, p), owner_of(live, p)) for p in paths)


OWN_MANAGERS = frozenset({"kapply", "kapp"})  # the field managers of kapply's and kapp's own writes


def outside_changes(change: Change) -> tuple[FieldDrift, ...]:
    """The fields of a change that someone other than kapply or kapp last wrote: under `enforce`, for an update, each
    changed field whose live value another manager (or none) wrote (set back by the update): found against the live
    object, or the drifted fields an earlier `preserve` or `warn` deploy kept; under `preserve` and `warn`, the
    fields the cluster changed that keep their live value."""
    if change.policy is not DriftPolicy.ENFORCE:
        return drifted_fields(change)
    if change.op is not Op.UPDATE or change.existing is None:
        return ()
    if change.basis is Basis.LIVE:
        assert change.left is not None and change.right is not None
        found: Sequence[FieldDrift] = explain(change.left, change.right, change.existing, change.new)
    else:
        found = _drift_of(change, change.drifted)
    return tuple(f for f in found if f.path != _READ_AT and (f.owner is None or f.owner.manager not in OWN_MANAGERS))


_READ_AT = FieldPath(("apiVersion",))  # the version the object was read at, which no one wrote


def suggest_rebase_rule(resource: Obj, paths: Sequence[FieldPath]) -> Obj:
    """The kapp Config that keeps the live value of `paths` in `resource` (see `suggest_rebase_rules`)."""
    return suggest_rebase_rules([(resource, paths)])


def suggest_rebase_rules(affected: Sequence[tuple[Obj, Sequence[FieldPath]]]) -> Obj:
    """A kapp Config document with one rebase rule per resource kind that keeps the cluster's value of the paths.

    Each rule copies from `[existing, new]`: the live value when the object has one (what kapp's HPA recipe and its
    default rules for server-filled fields do), else the desired one, so a field still reaches the cluster on the
    first deploy (rebase rules only run against an existing object) and whenever the cluster drops it. Hence a copy
    cannot end a ghost diff where the cluster *removes* a field: there is no live value to keep.

    A kind with one affected object is matched by kind, namespace and name, so other objects of the kind keep being
    enforced; several objects of a kind share one rule matched by apiVersion and kind, with all their paths.

    kapp paths cannot select a list element by name. An element matched by name (`containers[name=app]`) becomes
    `{allIndexes: true}`: its position is not stable, so the rule covers that field in every element of the list (the
    image of every container, not only `app`'s); copies pair the desired and live elements by position. A path that
    ends at a list element (one added or removed whole) becomes the list itself, since kapp copies only map values:
    the rule then keeps the whole live list."""
    by_kind: dict[tuple[str, str], list[tuple[Obj, Sequence[FieldPath]]]] = {}
    for resource, paths in affected:
        by_kind.setdefault((objects.api_version(resource), objects.kind(resource)), []).append((resource, paths))
    rules = []
    for (api_version, kind), group in by_kind.items():
        kapp_paths: list[list[Any]] = []
        for _, paths in group:
            for path in paths:
                kapp_path = _kapp_path(path)
                if kapp_path and kapp_path not in kapp_paths:
                    kapp_paths.append(kapp_path)
        if not kapp_paths:
            continue
        if len({(objects.namespace(r), objects.name(r)) for r, _ in group}) == 1:
            resource = group[0][0]
            name = objects.metadata(resource).get("name", "")
            matcher = {
                "kindNamespaceNameMatcher": {"kind": kind, "namespace": objects.namespace(resource), "name": name}
            }
        else:
            matcher = {"apiVersionKindMatcher": {"apiVersion": api_version, "kind": kind}}
        where: dict[str, Any] = {"path": kapp_paths[0]} if len(kapp_paths) == 1 else {"paths": kapp_paths}
        rules.append({**where, "type": "copy", "sources": ["existing", "new"], "resourceMatchers": [matcher]})
    return {"apiVersion": objects.CONFIG_API_VERSION, "kind": "Config", "rebaseRules": rules}


def _kapp_path(path: FieldPath) -> list[Any]:
    parts = list(path.parts)
    while parts and not isinstance(parts[-1], str):
        parts.pop()
    return [_kapp_part(part) for part in parts]


def _kapp_part(part: str | int | Named) -> Any:
    match part:
        case str():
            return part
        case int():
            return {"index": part}
        case Named():
            return {"allIndexes": True}


def config_yaml(config: Obj) -> str:
    """The Config as a YAML document, as kapp writes YAML, ready to paste next to the app's resources."""
    return "---\n" + to_yaml(config)


def shown_value(resource: Obj, value: Any, config: Config) -> str:
    """A field's value for a one-line report: JSON, cut at 80 characters, `(none)` when absent; for a resource under
    a diffMaskRule (a Secret) never the value: kapp's mask text."""
    if value is ABSENT:
        return "(none)"
    if any(matches_any(rule.resource_matchers, resource) for rule in config.diff_mask_rules):
        return "<-- value not shown"
    text = orjson.dumps(value).decode()
    return text if len(text) <= 80 else text[:77] + "..."


def writer(owner: FieldOwnership | None) -> str:
    """Who wrote a field: `kubectl-edit (Update) at 2026-11-23T21:46:16Z`, `kube-controller-manager (Update, scale)`,
    or `no recorded field manager` (a mutating webhook, or a field someone removed)."""
    if owner is None:
        return "no recorded field manager"
    how = owner.operation.value + (f", {owner.subresource}" if owner.subresource else "")
    when = f" at {owner.time.strftime('%Y-%m-%dT%H:%M:%SZ')}" if owner.time is not None else ""
    return f"{owner.manager} ({how}){when}"


def describe_field(resource: Obj, field: FieldDrift, config: Config, written_by: str = "") -> str:
    """`spec.replicas: desired 2, live 1, written by kubectl (Update, scale)`."""
    desired, live = shown_value(resource, field.desired, config), shown_value(resource, field.live, config)
    return f"{field.path}: desired {desired}, live {live}, written by {written_by or writer(field.owner)}"
