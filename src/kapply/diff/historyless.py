"""Stripping what kapp itself writes onto objects, so that it never shows up in a diff."""

from __future__ import annotations

from kapply import objects
from kapply.objects import Obj

_NOT_DIFFED = (*objects.HISTORY_ANNOTATIONS, objects.DRIFT_KEPT)


def historyless(obj: Obj) -> Obj:
    """obj without kapp's last-applied annotations, its identity annotation (unless `stale_identity`) and kapply's
    record of the drift a preserve or warn deploy kept (`kapply.dev/drift-kept`)."""
    keys = _NOT_DIFFED if stale_identity(obj) else (*_NOT_DIFFED, objects.IDENTITY)
    return objects.without_annotations(obj, keys)


def stale_identity(obj: Obj) -> bool:
    """Whether obj's identity annotation names another API version than the one obj was read at (the version it was
    written at is no longer served). kapp reads objects without the annotation, but keeps this one: it then shows in
    the diff, and the update it makes stamps the version written at."""
    parts = objects.annotations(obj).get(objects.IDENTITY, "").split(";")
    return (
        len(parts) == 3
        and parts[0] == "v1"
        and parts[1] == str(objects.key_of(obj))
        and parts[2] != objects.api_version(obj)
    )
