"""Does a live object already hold the desired state, and if not, what patch makes it so."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from kapply.matcher.diff import diff
from kapply.matcher.objects import (
    LAST_APPLIED_ANNOTATION,
    FieldPath,
    annotate,
    field_paths,
    original_of,
    prepare,
    to_dict,
    without_fields,
)
from kapply.matcher.patch import apply_dict
from kapply.matcher.schema import PatchType, Schema
from kapply.objects import Obj
from kapply.objects import annotations as annotations_of


class Mode(enum.StrEnum):
    THREE_WAY = "three-way"  # as kubectl apply: changes to fields desired never set are left alone
    TWO_WAY = "two-way"  # also reverts keys and items added to the maps and lists desired sets


@dataclass(frozen=True, slots=True)
class PatchResult:
    """The patch that turns `current` into the desired state, and the three documents it was computed from
    (without apiVersion, kind, status, server-written metadata and ignored fields), for logging."""

    patch: Obj
    patch_type: PatchType
    current: Obj
    modified: Obj
    original: Obj | None
    is_empty: bool


def calculate(
    current: object,
    desired: object,
    *,
    schema: Schema | None = None,
    mode: Mode = Mode.THREE_WAY,
    annotation: str = LAST_APPLIED_ANNOTATION,
    ignore_fields: Iterable[FieldPath] = (),
    record: bool = False,
) -> PatchResult:
    """Compare a live object with the desired one, against the last-applied state in `current`'s annotation.

    Fields at `ignore_fields` ("data", "spec.replicas", or a tuple of keys) are left out of all three documents:
    never added, changed or deleted. With `record`, a non-empty patch also writes `desired` into the annotation,
    so that PATCHing it leaves the object ready for the next comparison (as `annotate` before an update does).
    """
    current, desired = to_dict(current), to_dict(desired)
    schema = schema or Schema.builtin()
    root, patch_type = schema.root(
        desired.get("apiVersion") or current.get("apiVersion", ""), desired.get("kind") or current.get("kind", "")
    )
    live, text = prepare(current, annotation)
    modified, _ = prepare(desired, annotation)
    original = original_of(text, annotation, current)
    if original is not None:
        original, _ = prepare(original, annotation)
        if not (modified.get("metadata") or {}).get("namespace"):
            # Annotated with the namespace it was created in, desired without one: the object stays where it
            # is, there is no namespace to delete (and the server would not move it anyway).
            (original.get("metadata") or {}).pop("namespace", None)
    if ignore_fields:
        paths = field_paths(ignore_fields)
        live, modified = without_fields(live, paths), without_fields(modified, paths)
        original = None if original is None else without_fields(original, paths)
    patch = diff(
        root, original, modified, live, two_way=mode is Mode.TWO_WAY, strategic=patch_type is PatchType.STRATEGIC
    )
    is_empty = not patch
    if record and not is_empty:
        annotated = annotate(desired, annotation)["metadata"]["annotations"][annotation]
        meta = patch.setdefault("metadata", {})
        changes = meta.get("annotations", {})
        if changes is None:  # all of them deleted: one by one then, to keep ours
            changes = dict.fromkeys(annotations_of(live))
        meta["annotations"] = {**changes, annotation: annotated}
    return PatchResult(patch, patch_type, live, modified, original, is_empty)


def apply_patch(obj: object, patch: Obj, patch_type: PatchType, *, schema: Schema | None = None) -> Obj:
    """`obj` with `patch` applied, as the API server would apply it."""
    obj = to_dict(obj)
    root, _ = (schema or Schema.builtin()).root(obj.get("apiVersion", ""), obj.get("kind", ""))
    return apply_dict(root, obj, patch, patch_type is PatchType.STRATEGIC)


@dataclass(frozen=True, slots=True)
class Matcher:
    """The matcher's settings in one value, for an operator to build once and use on every loop."""

    schema: Schema = field(default_factory=Schema.builtin)
    mode: Mode = Mode.THREE_WAY
    annotation: str = LAST_APPLIED_ANNOTATION
    ignore_fields: tuple[FieldPath, ...] = ()

    def annotate(self, obj: object) -> Obj:
        return annotate(obj, self.annotation)

    def calculate(self, current: object, desired: object, *, record: bool = False) -> PatchResult:
        return calculate(
            current,
            desired,
            schema=self.schema,
            mode=self.mode,
            annotation=self.annotation,
            ignore_fields=self.ignore_fields,
            record=record,
        )

    def apply_patch(self, obj: object, result: PatchResult) -> Obj:
        return apply_patch(obj, result.patch, result.patch_type, schema=self.schema)
