"""Objects at the matcher's boundary: conversion to plain dicts, the fields it never compares, and the
last-applied annotation."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from functools import cache
from typing import Any

import orjson

from kapply.errors import KapplyError
from kapply.objects import Obj

LAST_APPLIED_ANNOTATION = "kapply.matcher/last-applied"

# Written by the server, never by the user: not compared, not stored.
_SERVER_METADATA = frozenset(
    {
        "resourceVersion",
        "uid",
        "creationTimestamp",
        "managedFields",
        "generation",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    }
)
_IDENTITY = frozenset({"apiVersion", "kind", "status"})


class LastAppliedError(KapplyError):
    """The last-applied annotation of a live object is not a JSON object."""


def to_dict(obj: object) -> Obj:
    """A Kubernetes object as the plain dict the API speaks: dicts as they are; objects of the official
    `kubernetes` client (typed models) through its serializer; anything with a `to_dict()` that returns
    API field names (lightkube models, `kubernetes.dynamic` resources) through that."""
    if isinstance(obj, dict):
        return obj
    if hasattr(type(obj), "openapi_types") and hasattr(type(obj), "attribute_map"):
        # The serializer turns a model into its dict of API field names.
        serialized: Obj = _kubernetes_api_client().sanitize_for_serialization(obj)
        return serialized
    to_dict_method = getattr(obj, "to_dict", None)
    if callable(to_dict_method):
        result = to_dict_method()
        if isinstance(result, dict):
            return result
    raise TypeError(f"Not a Kubernetes object: {type(obj).__name__}")


@cache
def _kubernetes_api_client() -> Any:
    from kubernetes.client import ApiClient  # optional: only objects of that client get here

    return ApiClient()


def prepare(obj: Obj, annotation: str) -> tuple[Obj, str | None]:
    """The object's comparable part (no apiVersion, kind, status, server metadata or last-applied annotation),
    and the last-applied annotation's text. Shallow: shares everything below metadata with `obj`."""
    body = {k: v for k, v in obj.items() if k not in _IDENTITY}
    text: str | None = None
    meta = obj.get("metadata")
    if meta:
        meta = {k: v for k, v in meta.items() if k not in _SERVER_METADATA}
        annotations = meta.get("annotations")
        if annotations and annotation in annotations:
            text = annotations[annotation]
            meta["annotations"] = {k: v for k, v in annotations.items() if k != annotation}
        body["metadata"] = meta
    if obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1" and body.get("stringData"):
        body = _string_data_as_data(body)
    return body, text


def _string_data_as_data(secret: Obj) -> Obj:
    """The server writes `stringData` into `data`, base64-encoded, and never returns it."""
    body = dict(secret)
    string_data = body.pop("stringData")
    body["data"] = {
        **(body.get("data") or {}),
        **{k: base64.b64encode(str(v).encode()).decode() for k, v in string_data.items()},
    }
    return body


FieldPath = str | tuple[str, ...]  # "spec.replicas", or ("metadata", "annotations", "example.com/owner")


def field_paths(fields: Iterable[FieldPath]) -> list[tuple[str, ...]]:
    """Dotted paths split into keys; tuples are already keys (for keys with dots in them). A lone string is one
    path, not an iterable of one-letter ones."""
    if isinstance(fields, str):
        fields = [fields]
    paths = [tuple(field.split(".")) if isinstance(field, str) else tuple(field) for field in fields]
    if () in paths:
        raise ValueError("An empty field path would ignore the whole object")
    return paths


def without_fields(obj: Obj, paths: Iterable[tuple[str, ...]]) -> Obj:
    """`obj` without the fields at `paths`, each a key into nested dicts (not into lists). Copies only the dicts on
    the way to a field it removes, so `obj` and whatever it shares with the caller stay as they are."""
    for path in paths:
        obj = _without(obj, path)
    return obj


def _without(obj: Obj, path: tuple[str, ...]) -> Obj:
    key, rest = path[0], path[1:]
    if key not in obj:
        return obj
    if not rest:
        return {k: v for k, v in obj.items() if k != key}
    child = obj[key]
    if type(child) is not dict:
        return obj
    pruned = _without(child, rest)
    if pruned is child:
        return obj
    if not pruned:  # emptied by what it ignores: absent, not an empty value (`emptyDir: {}`) that must stay empty
        return {k: v for k, v in obj.items() if k != key}
    return {**obj, key: pruned}


def original_of(text: str | None, annotation: str, annotation_owner: Obj) -> Obj | None:
    if text is None:
        return None
    try:
        original = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        original = e
    if not isinstance(original, dict):
        meta = annotation_owner.get("metadata") or {}
        raise LastAppliedError(
            f"Annotation {annotation} of {annotation_owner.get('kind')} "
            f"{meta.get('namespace', '')}/{meta.get('name')} is not a JSON object; remove it "
            "to start again from the live object"
        )
    return original


def last_applied(obj: Obj) -> Obj:
    """What the annotation stores: the object without server-written fields, nulls and empty lists."""
    kept = {k: v for k, v in obj.items() if k != "status"}
    meta = kept.get("metadata")
    if isinstance(meta, dict):
        kept["metadata"] = {k: v for k, v in meta.items() if k not in _SERVER_METADATA}
    state: Obj = _without_empty(kept)  # a dict stays a dict
    return state


def _without_empty(value: Any) -> Any:
    # Empty maps stay: `emptyDir: {}` is how a pod asks for an empty-dir volume.
    if type(value) is dict:
        return {k: _without_empty(v) for k, v in value.items() if v is not None and v != []}
    if type(value) is list:
        return [_without_empty(v) for v in value]
    return value


def annotate(obj: object, annotation: str = LAST_APPLIED_ANNOTATION) -> Obj:
    """A copy of `obj` carrying its last-applied state in `annotation`: what to create or update it with."""
    obj = to_dict(obj)
    meta = dict(obj.get("metadata") or {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != annotation}
    meta["annotations"] = annotations
    state = last_applied({**obj, "metadata": meta})
    if not annotations:
        state["metadata"].pop("annotations")
    meta["annotations"] = {**annotations, annotation: orjson.dumps(state, option=orjson.OPT_SORT_KEYS).decode()}
    return {**obj, "metadata": meta}
