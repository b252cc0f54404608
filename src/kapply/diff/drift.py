"""Drift policies: what a deploy does with fields someone else changed on the cluster.

`enforce` is kapp's (and Flux kustomize-controller's) behaviour: every field of the desired state is sent, so outside
changes to those fields are reverted at the next deploy. `preserve` is Helm's three-way behaviour (seed 004): only what
changed in the desired state since the last applied copy is sent, so an outside change survives until the desired
value of that field changes. `warn` deploys like `enforce` would but reverts nothing: drift is only reported (Flux
helm-controller's `driftDetection.mode: warn`).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from enum import StrEnum
from itertools import takewhile
from typing import Any

import orjson

from kapply import objects, yamlio
from kapply.diff.fields import ABSENT, FieldPath, PathPart, changed_paths, json_equal, value_at, with_value_at
from kapply.diff.historyless import historyless
from kapply.objects import Obj


class DriftPolicy(StrEnum):
    ENFORCE = "enforce"
    PRESERVE = "preserve"
    WARN = "warn"


def preserve(new: Obj, last_applied: Obj | None, live: Obj) -> Obj:
    """The object to apply under `preserve`: `live`, with exactly what changed from `last_applied` to `new` applied.

    Changed and added fields take `new`'s value, fields `new` no longer has are removed, and every other field keeps
    its live value, whoever set it: a replica count an HPA or `kubectl scale` chose stays until the desired replica
    count changes. This is applying the JSON merge patch (RFC 7386) from `last_applied` to `new` onto `live`, except
    that a null in `new` is kept as a value rather than read as "delete".

    Lists are values: a list whose desired value changed is replaced whole, elements someone else added to it (an
    injected sidecar container) included; an unchanged list keeps its live value. That is what Helm's three-way merge
    does for unstructured objects and `kubectl apply` for custom resources: without the kind's schema nothing says
    which lists merge by which key. kapply.matcher is not used for this: its three-way mode follows `kubectl apply`,
    which also patches back outside changes to fields the desired state sets (closer to `enforce`), its strategic
    merge needs the cluster's schema for custom resources, and the layer contract keeps the diff stage below it.

    Without a last-applied copy there is nothing to tell outside changes from desired ones: the result is `new`, and
    the deploy behaves like `enforce`."""
    if last_applied is None:
        return new
    return _three_way(last_applied, new, live)


def _three_way(last: Obj, new: Obj, live: Obj) -> Obj:
    result = dict(live)
    for key in last.keys() - new.keys():
        result.pop(key, None)
    for key, value in new.items():
        before = last.get(key, ABSENT)
        if json_equal(before, value):
            continue
        if isinstance(value, dict):
            # Merge patch semantics: a changed or added map is merged key by key into the live map (or into nothing).
            result[key] = _three_way(
                before if isinstance(before, dict) else {},
                value,
                live_value if isinstance(live_value := live.get(key), dict) else {},
            )
        else:
            result[key] = value
    return result


def as_stored(obj: Obj) -> Obj:
    """`obj` as the server stores it where that is known offline: a Secret's `stringData` is written into `data`,
    base64-encoded, and never returned; compared as given it would read as a field the cluster removed."""
    string_data = obj.get("stringData")
    if obj.get("kind") != "Secret" or obj.get("apiVersion") != "v1" or not isinstance(string_data, dict):
        return obj
    data = obj.get("data")
    data = data if isinstance(data, dict) else {}
    encoded = {k: base64.b64encode(str(v).encode()).decode() for k, v in string_data.items()}
    return {k: v for k, v in obj.items() if k != "stringData"} | {"data": {**data, **encoded}}


def drifted_paths(new: Obj, last_applied: Obj | None, live: Obj) -> list[FieldPath]:
    """The fields where `live` differs from what was last applied: outside changes, for `warn` and status reports.

    Only fields the last-applied copy sets count (changed or removed on the cluster): fields it never set are server
    defaults, metadata and status as much as anyone's additions, and cannot be told apart offline. Values compare as
    JSON, so a value the server normalises (`cpu: 1000m` stored as `1`) reads as drift. Without a last-applied copy,
    `new` stands in for it: every desired field the cluster holds differently. A Secret's `stringData` compares as the
    `data` the server makes of it."""
    applied = as_stored(last_applied if last_applied is not None else new)
    return [path for path in changed_paths(applied, live) if value_at(applied, path) is not ABSENT]


@dataclass(frozen=True, slots=True)
class Drift:
    """What an update does about the fields someone else changed (see `apply_policy`)."""

    sent: Obj  # what is applied, before kapp's rebase onto the live object
    recorded: Obj  # what the update records as last applied
    drifted: tuple[FieldPath, ...] = ()  # fields whose live value differs from the desired state last applied
    kept: tuple[FieldPath, ...] = ()  # the drifted fields `sent` leaves at their live value (preserve, warn)


def apply_policy(
    applied: Obj, existing: Obj, copy: Obj | None, *, unchanged: bool, policy: DriftPolicy, records: bool
) -> Drift:
    """What updating `existing` (live) to `applied` (the desired state, without kapp's history annotations) sends and
    records under `policy`, given `copy`, the last-applied copy recorded on it (None: none, or unreadable), which
    nothing changed since it was recorded when `unchanged`; `records` is False when the resource opts out of the copy.

    The `drifted` fields are those whose live value differs from the desired state last applied: changed by
    something other than kapp/kapply since the last-applied copy was recorded, or kept drifted by the `preserve` or
    `warn` deploy that recorded it. Under `enforce` they are sent back like every other desired field; under
    `preserve` and `warn` only what changed in the desired state since it was last applied is sent, so they keep their
    live value (the `kept` fields).

    Drift is never laundered: what an update records as last applied (`recorded`) is what it applies, the kept fields
    at their live value, so that kapp and kapply both see the drift as the difference between that copy and the
    desired state (an update under `enforce`, kapp's diff). The desired values of the kept fields are written next to
    it (`kapply.dev/drift-kept`, see `kept_drift`), so that the next deploy still tells them from desired changes:
    they are drifted, and kept, until their desired value changes. Without kept fields the copy is `applied`, as kapp
    records it."""
    if copy is None:
        return Drift(applied, applied)
    live, desired = historyless(existing), as_stored(applied)
    before = historyless(copy)  # the desired state the copy was recorded for
    kept_before = kept_drift(existing)
    for path, value in kept_before:
        before = with_value_at(before, path, value)
    drifted: tuple[FieldPath, ...] = ()
    sent = applied
    if not unchanged:
        drifted = tuple(drifted_paths(applied, before, live))
        if policy is not DriftPolicy.ENFORCE:  # fields others added are kept too, though not reported
            sent = _kept_outside_changes(applied, before, existing)
    elif kept_before:
        # Nothing changed the object since the copy was recorded, drifted fields kept at their live value: they are
        # the fields where the copy and the desired state it was recorded for differ.
        drifted = tuple(
            p for p in drifted_paths(applied, before, live) if not json_equal(value_at(copy, p), value_at(before, p))
        )
        if policy is not DriftPolicy.ENFORCE:
            sent = preserve(desired, before, historyless(copy))
    kept = _kept(drifted, desired, sent, live)
    if not (kept and records):
        return Drift(sent, applied, drifted, kept)
    sent = _with_annotation(sent, objects.DRIFT_KEPT, _drift_kept_annotation(kept, desired))
    return Drift(sent, _with_values_of(desired, kept, live), drifted, kept)


def _kept_outside_changes(applied: Obj, before: Obj, live: Obj) -> Obj:
    """What `preserve` and `warn` send when the object changed since it was last written: the live object with what
    changed from `before` (the desired state last applied) to `applied` (the desired state) applied, so that fields
    others changed keep their live value. What the server keeps (status, managedFields) is left out, as from a
    resource the user wrote."""
    meta = {k: v for k, v in objects.metadata(live).items() if k != "managedFields"}
    base = {k: v for k, v in live.items() if k != "status"} | {"metadata": meta}
    return historyless(preserve(applied, historyless(before), historyless(base)))


def kept_drift(live: Obj) -> tuple[tuple[FieldPath, Any], ...]:
    """The fields the last `preserve` or `warn` deploy left drifted, each with its desired value then (kapply's
    `kapply.dev/drift-kept`, written with the last-applied copy, which has their live value); () when there are none
    or the annotation cannot be read. A field inside a list is kept as the whole list (lists are values to
    `preserve`), so that setting it back never has to guess where in the list an element went."""
    raw = objects.annotations(live).get(objects.DRIFT_KEPT)
    if not raw or not isinstance(raw, str):
        return ()
    try:
        entries = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return ()
    if not isinstance(entries, list) or yamlio.too_deep(entries):
        return ()
    found = []
    for entry in entries:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list) and entry[0]):
            return ()
        if not all(isinstance(part, str) for part in entry[0]):
            return ()
        found.append((FieldPath(tuple(entry[0])), entry[1]))
    return tuple(found)


def _drift_kept_annotation(kept: tuple[FieldPath, ...], desired: Obj) -> str:
    """`kapply.dev/drift-kept` for the `kept` fields of `desired` (see `kept_drift`): compact JSON of `[path, desired
    value]` pairs, a path being its map keys up to the first list."""
    entries: list[tuple[tuple[PathPart, ...], Any]] = []
    for path in kept:
        where = tuple(takewhile(lambda part: isinstance(part, str), path.parts))
        if all(where != other for other, _ in entries):
            entries.append((where, value_at(desired, FieldPath(where))))
    return orjson.dumps([[list(where), value] for where, value in entries], option=orjson.OPT_SORT_KEYS).decode()


def _with_annotation(obj: Obj, key: str, value: str) -> Obj:
    meta = objects.metadata(obj)
    return {**obj, "metadata": {**meta, "annotations": {**objects.annotations(obj), key: value}}}


def _kept(drifted: tuple[FieldPath, ...], desired: Obj, sent: Obj, live: Obj) -> tuple[FieldPath, ...]:
    """The drifted fields `sent` leaves at their live value where the desired state has another."""
    return tuple(
        p
        for p in drifted
        if json_equal(value_at(sent, p), value_at(live, p)) and not json_equal(value_at(desired, p), value_at(live, p))
    )


def _with_values_of(obj: Obj, paths: tuple[FieldPath, ...], source: Obj) -> Obj:
    """`obj` with each of `paths` at its value in `source`, or without it where `source` lacks it. Last path first:
    list elements someone removed are at the end of `paths` (see `fields.changed_paths`), so removing one never moves
    another."""
    for path in reversed(paths):
        obj = with_value_at(obj, path, value_at(source, path))
    return obj
