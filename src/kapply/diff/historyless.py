"""Stripping what kapp itself writes onto objects, so that it never shows up in a diff."""

from __future__ import annotations

from kapply import objects
from kapply.objects import Obj

_NOT_DIFFED = (*objects.HISTORY_ANNOTATIONS, objects.IDENTITY)


def historyless(obj: Obj) -> Obj:
    """obj without kapp's last-applied annotations and its identity annotation."""
    return objects.without_annotations(obj, _NOT_DIFFED)
