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

import orjson

from kapply import objects, yamlio
from kapply.config.config import Config
from kapply.config.rules import rebase, remove_fields
from kapply.diff.drift import DriftPolicy, apply_policy
from kapply.diff.fields import FieldPath
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

    An update's drift (its `drifted` and `kept` fields, what it sends and records) follows `policy`: see
    `kapply.diff.drift.apply_policy`; the op is kapp's, decided on what is sent, rebased onto the live object."""
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
    copy = valid if valid is not None else recorded_copy(existing)
    drift = apply_policy(
        applied, existing, copy, unchanged=valid is not None, policy=policy, records=records_original(applied)
    )
    to_apply = rebase(drift.sent, existing, config.rebase_rules)
    if objects.has_annotation(to_apply, objects.NOOP):  # kapp decides on the rebased resource: a rule may add it
        return Change(Op.NOOP, key, applied, existing, None, None, None, origin=origin)
    if recorded is not None:
        # Unchanged since the last deploy (the common case): the same rebase, done once.
        last = to_apply if recorded == drift.sent else rebase(recorded, existing, config.rebase_rules)
        left = diff_side(last, config)
        basis = Basis.LAST_APPLIED
    else:
        left = diff_side(existing, config)
        basis = Basis.LIVE
    right = diff_side(to_apply, config)
    op = Op.UPDATE if left != right and not objects.has_annotation(new, objects.EXISTS) else Op.KEEP
    return Change(
        op,
        key,
        applied,
        existing,
        to_apply,
        left,
        right,
        basis,
        origin,
        policy,
        drift.drifted,
        kept=drift.kept,
        recorded=drift.recorded,
    )
