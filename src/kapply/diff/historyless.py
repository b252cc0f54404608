"""Stripping what kapp itself writes onto objects, so that it never shows up in a diff."""

from __future__ import annotations

ORIGINAL = "kapp.k14s.io/original"
ORIGINAL_DIFF_MD5 = "kapp.k14s.io/original-diff-md5"
IDENTITY = "kapp.k14s.io/identity"
HISTORY_ANNOTATIONS = (ORIGINAL, ORIGINAL_DIFF_MD5, "kapp.k14s.io/original-diff", "kapp.k14s.io/original-diff-full")


def without_annotations(obj: dict, keys: tuple[str, ...]) -> dict:
    """A shallow copy of obj without the given annotations (the input is not modified)."""
    annotations = (obj.get("metadata") or {}).get("annotations")
    if not annotations or not any(k in annotations for k in keys):
        return obj
    kept = {k: v for k, v in annotations.items() if k not in keys}
    meta = {**obj["metadata"], "annotations": kept}
    if not kept:
        del meta["annotations"]
    return {**obj, "metadata": meta}


def historyless(obj: dict) -> dict:
    """obj without kapp's last-applied annotations and its identity annotation."""
    return without_annotations(obj, (*HISTORY_ANNOTATIONS, IDENTITY))
