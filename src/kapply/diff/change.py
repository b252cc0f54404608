"""A change: what deploying one resource will do, and the two documents its diff compares.

The op follows kapp (`noop` annotation, then create/exists when nothing is live,
delete when nothing is new, update when the documents differ, else keep). The
"existing" side is the last-applied copy rebased onto the live object when that
copy is still valid (nothing else changed the object since kapply or kapp wrote
it), else the live object itself (see `needs_server_check`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from itertools import takewhile
from typing import Any

import orjson

from kapply import objects, yamlio
from kapply.config.config import Config
from kapply.config.rules import rebase, remove_fields
from kapply.diff.drift import DriftPolicy, as_stored, drifted_paths, preserve
from kapply.diff.fields import FieldPath, PathPart, json_equal, value_at, with_value_at
from kapply.diff.historyless import historyless, stale_identity
from kapply.diff.ops_diff import fingerprint
from kapply.objects import Obj, ResourceKey, describe, key_of

MAX_ANNOTATION_VALUE = 262144
MAX_ANNOTATIONS_SIZE = 262144  # the API server's limit on all annotations together (keys and values)


class ApplyOp(StrEnum):
    """What applying a change does, as kapp shows it in the Op column (`noop` shows as empty)."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    EXISTS = "exists"
    NOOP = "noop"


class Op(StrEnum):
    """kapp's diff ops; `add` applies as create and `keep` as noop."""

    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"
    KEEP = "keep"
    EXISTS = "exists"
    NOOP = "noop"

    @property
    def apply_op(self) -> ApplyOp:
        return _APPLY_OPS[self]


_APPLY_OPS = {
    Op.ADD: ApplyOp.CREATE,
    Op.UPDATE: ApplyOp.UPDATE,
    Op.DELETE: ApplyOp.DELETE,
    Op.KEEP: ApplyOp.NOOP,
    Op.EXISTS: ApplyOp.EXISTS,
    Op.NOOP: ApplyOp.NOOP,
}


class Basis(StrEnum):
    """What the existing side of an update diff is."""

    NONE = "none"  # create, delete, noop
    LAST_APPLIED = "last-applied"
    LIVE = "live"


@dataclass(frozen=True, slots=True)
class Change:
    op: Op
    key: ResourceKey
    new: Obj | None  # the prepared resource as the user gave it
    existing: Obj | None  # the live object
    to_apply: Obj | None  # what is sent: new rebased onto the live object
    left: Obj | None  # the diff's existing side
    right: Obj | None  # the diff's new side
    basis: Basis = Basis.NONE
    origin: str = ""  # where the new resource came from, for messages
    policy: DriftPolicy = DriftPolicy.ENFORCE  # what the change does with outside changes (kapply.diff.drift)
    drifted: tuple[FieldPath, ...] = ()  # fields whose live value differs from the desired state last applied
    ignored: bool = False  # kapp's "ignored" change: the delete of a transient (controller-made) object
    kept: tuple[FieldPath, ...] = ()  # the drifted fields `to_apply` leaves at their live value (preserve, warn)
    recorded: Obj | None = None  # what an update records as last applied: `new`, the `kept` fields at their live value

    @property
    def resource(self) -> Obj:
        res = self.new if self.new is not None else self.existing
        assert res is not None
        return res

    def describe(self) -> str:
        return describe(self.resource)

    @property
    def needs_server_check(self) -> bool:
        """An update found against the live object may be nothing but server defaults; only a server-side
        dry run of the update tells (see diff.server_check)."""
        return self.op is Op.UPDATE and self.basis is Basis.LIVE


def diff_side(obj: Obj, config: Config) -> Obj:
    """A side of a diff, as kapp shows it: no history annotations and no excluded fields (status). Metadata the
    server keeps (managedFields, uid, ...) stays: the rebase copies it onto the new side too, so it never differs,
    but it is part of the text whose line numbers kapp prints."""
    return remove_fields(historyless(obj), config.diff_against_existing_field_exclusion_rules)


def _without_annotation_keys(obj: Obj, keys: tuple[str, ...]) -> Obj:
    """kapp's FieldRemoveMod on `metadata.annotations.<key>`: the keys go, the map stays (even empty)."""
    current = objects.annotations(obj)
    if not any(k in current for k in keys):
        return obj
    kept = {k: v for k, v in current.items() if k not in keys}
    return {**obj, "metadata": {**objects.metadata(obj), "annotations": kept}}


def _last_applied_check(live: Obj, applied: Obj, config: Config) -> str:
    """kapp's `original-diff-md5`: the fingerprint of how the stored object differs from what was sent, rebased onto
    it. Both sides are prepared exactly as kapp prepares them, so that kapp and kapply read each other's record."""
    existing = live if stale_identity(live) else _without_annotation_keys(live, (objects.IDENTITY,))  # as kapp reads it
    existing = remove_fields(existing, config.diff_against_last_applied_field_exclusion_rules)
    existing = remove_fields(
        _without_annotation_keys(existing, objects.HISTORY_ANNOTATIONS),
        config.diff_against_existing_field_exclusion_rules,
    )
    new = remove_fields(
        _without_annotation_keys(applied, objects.HISTORY_ANNOTATIONS),
        config.diff_against_existing_field_exclusion_rules,
    )
    return fingerprint(existing, rebase(new, existing, config.rebase_rules))


def recorded_copy(live: Obj) -> Obj | None:
    """The copy kapp/kapply recorded when it last wrote the object (`kapp.k14s.io/original`), whether or not anything
    changed the object since; None when there is none or it cannot be read."""
    raw = objects.annotations(live).get(objects.ORIGINAL)
    if not raw or not isinstance(raw, str):
        return None
    try:
        applied = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(applied, dict) or yamlio.too_deep(applied):
        return None
    return applied


def last_applied(live: Obj, config: Config) -> Obj | None:
    """The copy kapp/kapply recorded when it last wrote the object, if nothing changed it since."""
    md5 = objects.annotations(live).get(objects.ORIGINAL_DIFF_MD5)
    applied = recorded_copy(live) if md5 else None
    if applied is None or _last_applied_check(live, applied, config) != md5:
        return None
    return applied


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


def records_original(res: Obj) -> bool:
    """False when the resource opts out of the last-applied copy (`kapp.k14s.io/disable-original`)."""
    return not objects.has_annotation(res, objects.DISABLE_ORIGINAL)


def last_applied_annotations(saved: Obj, applied: Obj, config: Config) -> dict[str, str] | None:
    """The annotations that record `applied` on the object the server returned (`saved`), or None when the copy is
    too large for an annotation."""
    original = orjson.dumps(applied, option=orjson.OPT_SORT_KEYS).decode()
    if len(original) > MAX_ANNOTATION_VALUE:
        return None
    return {objects.ORIGINAL: original, objects.ORIGINAL_DIFF_MD5: _last_applied_check(saved, applied, config)}


def calculate(
    new: Obj | None,
    existing: Obj | None,
    config: Config,
    *,
    origin: str = "",
    against_last_applied: bool = True,
    policy: DriftPolicy = DriftPolicy.ENFORCE,
    transient: bool = False,
) -> Change:
    """The change that takes `existing` (live, or None) to `new` (prepared, or None). Deleting a `transient` existing
    object (one a controller made) is an ignored change (kapp's IsIgnored): applied and waited on only when asked.

    The change's `drifted` fields are those whose live value differs from the desired state last applied: changed by
    something other than kapp/kapply since the last-applied copy was recorded, or kept drifted by the `preserve` or
    `warn` deploy that recorded it. Under `enforce` they are sent back like every other desired field; under
    `preserve` and `warn` only what changed in the desired state since it was last applied is sent, so they keep their
    live value (the change's `kept` fields).

    Drift is never laundered: what an update records as last applied (`recorded`) is what it applies, the kept fields
    at their live value, so that kapp and kapply both see the drift as the difference between that copy and the
    desired state (an update under `enforce`, kapp's diff). The desired values of the kept fields are written next to
    it (`kapply.dev/drift-kept`, see `kept_drift`), so that the next deploy still tells them from desired changes:
    they are drifted, and kept, until their desired value changes. Without kept fields the copy is `new`, as kapp
    records it."""
    key = key_of(new if new is not None else existing)  # type: ignore[arg-type]
    if new is not None and objects.has_annotation(new, objects.NOOP):
        return Change(Op.NOOP, key, new, existing, None, None, None, origin=origin)
    if existing is None:
        assert new is not None
        op = Op.EXISTS if objects.has_annotation(new, objects.EXISTS) else Op.ADD
        applied = historyless(new)
        return Change(op, key, applied, None, applied, None, diff_side(new, config), origin=origin)
    if new is None:
        return Change(Op.DELETE, key, None, existing, None, diff_side(existing, config), None, ignored=transient)

    applied = historyless(new)
    valid = last_applied(existing, config)
    recorded = valid if against_last_applied else None
    drifted: tuple[FieldPath, ...] = ()
    kept: tuple[FieldPath, ...] = ()
    sent = record = applied
    copy = valid if valid is not None else recorded_copy(existing)
    if copy is not None:
        live, desired = historyless(existing), as_stored(applied)
        before = historyless(copy)  # the desired state the copy was recorded for
        kept_before = kept_drift(existing)
        for path, value in kept_before:
            before = with_value_at(before, path, value)
        if valid is None:
            drifted = tuple(drifted_paths(applied, before, live))
            if policy is not DriftPolicy.ENFORCE:  # fields others added are kept too, though not reported
                sent = _kept_outside_changes(applied, before, existing)
        elif kept_before:
            # Nothing changed the object since the copy was recorded, drifted fields kept at their live value: they are
            # the fields where the copy and the desired state it was recorded for differ.
            drifted = tuple(
                p
                for p in drifted_paths(applied, before, live)
                if not json_equal(value_at(copy, p), value_at(before, p))
            )
            if policy is not DriftPolicy.ENFORCE:
                sent = preserve(desired, before, historyless(copy))
        kept = _kept(drifted, desired, sent, live)
        if kept and records_original(applied):
            record = _with_values_of(desired, kept, live)
            sent = _with_annotation(sent, objects.DRIFT_KEPT, _drift_kept_annotation(kept, desired))
    to_apply = rebase(sent, existing, config.rebase_rules)
    if objects.has_annotation(to_apply, objects.NOOP):  # kapp decides on the rebased resource: a rule may add it
        return Change(Op.NOOP, key, applied, existing, None, None, None, origin=origin)
    if recorded is not None:
        # Unchanged since the last deploy (the common case): the same rebase, done once.
        left = diff_side(to_apply if recorded == sent else rebase(recorded, existing, config.rebase_rules), config)
        basis = Basis.LAST_APPLIED
    else:
        left = diff_side(existing, config)
        basis = Basis.LIVE
    right = diff_side(to_apply, config)
    op = Op.UPDATE if left != right and not objects.has_annotation(new, objects.EXISTS) else Op.KEEP
    return Change(
        op, key, applied, existing, to_apply, left, right, basis, origin, policy, drifted, kept=kept, recorded=record
    )
