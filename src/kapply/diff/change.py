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

from kapply.config.config import Config
from kapply.config.rules import rebase, remove_fields
from kapply.diff.historyless import ORIGINAL, ORIGINAL_DIFF_MD5, historyless
from kapply.diff.ops_diff import fingerprint
from kapply.resources.identity import ResourceKey, describe, key_of

EXISTS_ANNOTATION = "kapp.k14s.io/exists"
NOOP_ANNOTATION = "kapp.k14s.io/noop"
DISABLE_ORIGINAL_ANNOTATION = "kapp.k14s.io/disable-original"
MAX_ANNOTATION_VALUE = 262144


class Op(StrEnum):
    """kapp's diff ops; `add` shows as create and `keep` as noop."""

    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"
    KEEP = "keep"
    EXISTS = "exists"
    NOOP = "noop"

    @property
    def apply_op(self) -> str:
        return {Op.ADD: "create", Op.KEEP: "noop"}.get(self, self.value)


class Basis(StrEnum):
    """What the existing side of an update diff is."""

    NONE = "none"  # create, delete, noop
    LAST_APPLIED = "last-applied"
    LIVE = "live"


@dataclass(frozen=True, slots=True)
class Change:
    op: Op
    key: ResourceKey
    new: dict | None  # the prepared resource as the user gave it (recorded as last-applied)
    existing: dict | None  # the live object
    to_apply: dict | None  # what is sent: new rebased onto the live object
    left: dict | None  # the diff's existing side
    right: dict | None  # the diff's new side
    basis: Basis = Basis.NONE
    origin: str = ""  # where the new resource came from, for messages

    @property
    def resource(self) -> dict:
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


def _annotations(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("annotations") or {}


def diff_side(obj: dict, config: Config) -> dict:
    """A side of a diff: no history annotations, no excluded fields (status), and no managedFields, which the
    server rewrites on every write and which no manifest sets."""
    obj = remove_fields(historyless(obj), config.diff_against_existing_field_exclusion_rules)
    meta = obj.get("metadata")
    if meta and "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return obj


def _last_applied_check(live: dict, applied: dict, config: Config) -> str:
    """Fingerprint of how the stored object differs from what was sent, rebased onto it."""
    saved = remove_fields(historyless(live), config.diff_against_last_applied_field_exclusion_rules)
    return fingerprint(saved, rebase(applied, live, config.rebase_rules))


def last_applied(live: dict, config: Config) -> dict | None:
    """The copy kapp/kapply recorded when it last wrote the object, if nothing changed it since."""
    annotations = _annotations(live)
    raw, md5 = annotations.get(ORIGINAL), annotations.get(ORIGINAL_DIFF_MD5)
    if not raw or not md5:
        return None
    try:
        applied = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(applied, dict) or _last_applied_check(live, applied, config) != md5:
        return None
    return applied


def records_original(res: dict) -> bool:
    """False when the resource opts out of the last-applied copy (`kapp.k14s.io/disable-original`)."""
    return DISABLE_ORIGINAL_ANNOTATION not in _annotations(res)


def last_applied_annotations(saved: dict, applied: dict, config: Config) -> dict[str, str] | None:
    """The annotations that record `applied` on the object the server returned (`saved`), or None when the copy is
    too large for an annotation."""
    original = orjson.dumps(applied, option=orjson.OPT_SORT_KEYS).decode()
    if len(original) > MAX_ANNOTATION_VALUE:
        return None
    return {ORIGINAL: original, ORIGINAL_DIFF_MD5: _last_applied_check(saved, applied, config)}


def calculate(new: dict | None, existing: dict | None, config: Config, *, origin: str = "",
              against_last_applied: bool = True) -> Change:
    """The change that takes `existing` (live, or None) to `new` (prepared, or None)."""
    key = key_of(new if new is not None else existing)  # type: ignore[arg-type]
    if new is not None and NOOP_ANNOTATION in _annotations(new):
        return Change(Op.NOOP, key, new, existing, None, None, None, origin=origin)
    if existing is None:
        assert new is not None
        op = Op.EXISTS if EXISTS_ANNOTATION in _annotations(new) else Op.ADD
        applied = historyless(new)
        return Change(op, key, applied, None, applied, None, diff_side(new, config), origin=origin)
    if new is None:
        return Change(Op.DELETE, key, None, existing, None, diff_side(existing, config), None)

    applied = historyless(new)
    to_apply = rebase(applied, existing, config.rebase_rules)
    recorded = last_applied(existing, config) if against_last_applied else None
    if recorded is not None:
        left = diff_side(rebase(recorded, existing, config.rebase_rules), config)
        basis = Basis.LAST_APPLIED
    else:
        left = diff_side(existing, config)
        basis = Basis.LIVE
    right = diff_side(to_apply, config)
    op = Op.UPDATE if left != right and EXISTS_ANNOTATION not in _annotations(new) else Op.KEEP
    return Change(op, key, applied, existing, to_apply, left, right, basis, origin)
