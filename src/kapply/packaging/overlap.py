"""Two repositories bringing a Package or PackageMetadata of the same name into one namespace (kapp-controller's rebase
rule "noop-on-identical-packages", pkgrepository/app_template.go), decided per object before the deploy:

- an object nobody brought (no `packaging.carvel.dev/package-repository-ref`: hand-written, or from an older
  controller) or that this repository brought is deployed as usual (the repository takes it over);
- another repository's object is left alone when it is identical (its spec, labels and annotations but the
  controllers' own), or when its `packaging.carvel.dev/revision` is higher; a higher revision of ours replaces it;
- with equal revisions and a difference, the repository fails: `Error: Conflicting resources: Package/<name> is
  already present but not identical (mismatch in spec.template)`.

kapp-controller keeps a left-alone object in its kapp app as a no-op; kapply leaves it out of the repository's
deploy: the same on the cluster (the object stays its first repository's, and goes when that one goes).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from kapply import objects
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.packaging import names

# What the controllers and kapp write, left out of the comparison (kapp-controller's lists).
CONTROLLER_ANNOTATIONS = frozenset(
    {
        objects.DISABLE_ORIGINAL,
        objects.DISABLE_WAIT,
        names.REPOSITORY_REF_ANNOTATION,
        "kapp.k14s.io/identity",
        "kapp.k14s.io/create-strategy",
    }
)
CONTROLLER_LABELS = frozenset({objects.APP_LABEL, "kapp.k14s.io/association"})
NO_REVISION = (-1,)


class ConflictError(KapplyError):
    """Two repositories bring different copies of one object with the same revision."""


class Overlap(StrEnum):
    DEPLOY = "deploy"  # the repository deploys its copy
    LEAVE = "leave"  # another repository's copy stays as it is


def revision(annotations: Mapping[str, str]) -> tuple[int, ...]:
    """`packaging.carvel.dev/revision` as dot-separated integers (`1.2.0.4`); (-1,) without one."""
    text = annotations.get(names.REVISION_ANNOTATION)
    if text is None:
        return NO_REVISION
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        raise ConflictError(
            f"Expected annotation {names.REVISION_ANNOTATION} to be integers separated by dots, got '{text}'"
        ) from None


def compare_revisions(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """Negative, zero or positive as `a` is lower than, equal to or higher than `b`: element by element, then the
    longer one higher (`0` < `0.0`), as kapp-controller's cmp_rev."""
    for x, y in zip(a, b, strict=False):
        if x != y:
            return 1 if x > y else -1
    return len(a) - len(b)


def _without(values: Mapping[str, str], keys: frozenset[str]) -> dict[str, str]:
    return {k: v for k, v in values.items() if k not in keys}


def difference(existing: Obj, new: Obj) -> str:
    """Why two copies are not identical (kapp-controller's reasons), or "" when they are."""
    old_spec: dict[str, Any] = existing.get("spec") or {}
    new_spec: dict[str, Any] = new.get("spec") or {}
    if old_spec != new_spec:
        for key in new_spec:
            if key not in old_spec:
                return f"adding spec.{key}"
        for key, value in old_spec.items():
            if key not in new_spec:
                return f"missing spec.{key}"
            if new_spec[key] != value:
                return f"mismatch in spec.{key}"
    if _without(objects.labels(existing), CONTROLLER_LABELS) != _without(objects.labels(new), CONTROLLER_LABELS):
        return "mismatch in metadata.labels"
    if _without(objects.annotations(existing), CONTROLLER_ANNOTATIONS) != _without(
        objects.annotations(new), CONTROLLER_ANNOTATIONS
    ):
        return "mismatch in metadata.annotations"
    return ""


def decide(existing: Obj | None, new: Obj) -> Overlap:
    """Whether the repository deploys `new` over `existing` (the object of the same kind and name in its namespace);
    ConflictError when it must fail."""
    if existing is None:
        return Overlap.DEPLOY
    ours = objects.annotations(new).get(names.REPOSITORY_REF_ANNOTATION)
    owner = objects.annotations(existing).get(names.REPOSITORY_REF_ANNOTATION, ours)
    if owner == ours:
        return Overlap.DEPLOY
    reason = difference(existing, new)
    if not reason:
        return Overlap.LEAVE
    order = compare_revisions(revision(objects.annotations(existing)), revision(objects.annotations(new)))
    if order > 0:
        return Overlap.LEAVE
    if order < 0:
        return Overlap.DEPLOY
    raise ConflictError(
        f"Error: Conflicting resources: {new['kind']}/{objects.name(existing)} is already present but not identical "
        f"({reason})"
    )
