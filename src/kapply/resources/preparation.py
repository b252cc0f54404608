"""Turning parsed documents into the app's desired resources, as kapp prepares them:
validate, de-duplicate, place into namespaces, and label with the app's ownership labels."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kapply import objects
from kapply.config.config import Config
from kapply.config.rules import add_label_scoping, add_ownership_labels
from kapply.errors import ManifestError
from kapply.objects import Document, Obj, describe, key_of
from kapply.resources.cluster import Discovery


@dataclass(frozen=True, slots=True)
class Placement:
    """Where namespaced resources go: their own namespace or `default_namespace`, then `--into-ns`, then `--map-ns`."""

    default_namespace: str
    into_namespace: str = ""
    namespace_map: Mapping[str, str] = field(default_factory=dict)


def _validate(docs: Sequence[Document]) -> None:
    errors = []
    for doc in docs:
        meta = doc.obj.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            errors.append(f"- Expected 'metadata' on resource '{describe(doc.obj)}' to be a map ({doc.origin})")
            continue
        meta = meta or {}
        for field_name, value in (
            ("apiVersion", doc.obj.get("apiVersion")),
            ("kind", doc.obj.get("kind")),
            ("metadata.name", meta.get("name") or meta.get("generateName")),
        ):
            if not isinstance(value, str) or not value:
                errors.append(
                    f"- Expected '{field_name}' on resource '{describe(doc.obj)}' to be non-empty ({doc.origin})"
                )
        for field_name in ("labels", "annotations"):
            value = meta.get(field_name)
            if value is not None and not (isinstance(value, dict) and all(isinstance(v, str) for v in value.values())):
                errors.append(
                    f"- Expected 'metadata.{field_name}' on resource '{describe(doc.obj)}' to be a map of strings "
                    f"({doc.origin})"
                )
        if objects.IS_APP_LABEL in objects.labels(doc.obj):
            errors.append(
                f"- Resource '{describe(doc.obj)}' has a disallowed label '{objects.IS_APP_LABEL}' ({doc.origin})"
            )
    if errors:
        raise ManifestError("Validation errors:\n" + "\n".join(errors))


def _dedupe(docs: Sequence[Document]) -> list[Document]:
    seen: dict[objects.ResourceKey, Document] = {}
    errors = []
    for doc in docs:
        key = key_of(doc.obj)
        first = seen.get(key)
        if first is None:
            seen[key] = doc
        elif first.obj != doc.obj:
            errors.append(
                f"- Found resource '{describe(doc.obj)}' multiple times with different content "
                f"({first.origin} and {doc.origin})"
            )
    if errors:
        raise ManifestError("Uniqueness errors:\n" + "\n".join(errors))
    return list(seen.values())


def _crd_scopes(docs: Sequence[Document]) -> dict[tuple[str, str], bool]:
    """(group, kind) -> namespaced, for CRDs given in the same deploy as their custom resources."""
    scopes = {}
    for doc in docs:
        if objects.kind(doc.obj) == "CustomResourceDefinition" and objects.group_of(doc.obj) == "apiextensions.k8s.io":
            spec = doc.obj.get("spec")
            if not isinstance(spec, dict):
                continue  # the API server reports what is wrong with the CRD
            group, names = spec.get("group"), spec.get("names")
            kind = names.get("kind") if isinstance(names, dict) else None
            if isinstance(group, str) and group and isinstance(kind, str) and kind:
                scopes[(group, kind)] = spec.get("scope", "Namespaced") == "Namespaced"
    return scopes


def _place(doc: Document, namespaced: bool, placement: Placement) -> Obj:
    obj = doc.obj
    meta = dict(objects.metadata(obj))
    if not namespaced:
        meta.pop("namespace", None)
        return {**obj, "metadata": meta}
    namespace = objects.namespace(obj) or placement.default_namespace
    if placement.into_namespace:
        namespace = placement.into_namespace
    if placement.namespace_map:
        if namespace not in placement.namespace_map:
            raise ManifestError(f"Expected to find mapped namespace for '{namespace}' ({doc.origin})")
        namespace = placement.namespace_map[namespace]
    if not namespace:
        raise ManifestError(
            f"Expected resource '{describe(obj)}' to have a namespace: it is namespaced and no "
            f"default namespace is set (use -n) ({doc.origin})"
        )
    meta["namespace"] = namespace
    return {**obj, "metadata": meta}


def _nonce(obj: Obj, origin: str) -> Obj:
    annotations = objects.annotations(obj)
    if objects.NONCE not in annotations:
        return obj
    if annotations[objects.NONCE] != "":
        raise ManifestError(
            f"Expected annotation '{objects.NONCE}' on resource '{describe(obj)}' to have value '' ({origin})"
        )
    return objects.with_annotations(obj, {objects.NONCE: str(time.time_ns())})


def prepare(
    docs: Sequence[Document],
    discovery: Discovery,
    config: Config,
    placement: Placement,
    app_labels: dict[str, str],
    *,
    default_label_scoping: bool = True,
) -> list[Document]:
    """The desired resources, in input order, labeled for the app. `app_labels` is {app label key: value}."""
    _validate(docs)
    docs = _dedupe(docs)
    crd_scopes = _crd_scopes(docs)
    unknown = []
    out = []
    for doc in docs:
        api_version, kind = objects.api_version(doc.obj), objects.kind(doc.obj)
        rtype = discovery.find(api_version, kind)
        if rtype is not None:
            namespaced = rtype.namespaced
        elif (objects.api_group(api_version), kind) in crd_scopes:
            namespaced = crd_scopes[(objects.api_group(api_version), kind)]
        else:
            unknown.append(f"- Expected to find kind '{api_version}/{kind}', but did not ({doc.origin})")
            continue
        obj = _nonce(_place(doc, namespaced, placement), doc.origin)
        labels = {**app_labels, objects.ASSOCIATION_LABEL: objects.association_value(obj), **config.additional_labels}
        obj = add_ownership_labels(obj, labels, config.ownership_label_rules)
        obj = add_label_scoping(obj, app_labels, config.label_scoping_rules, include_default=default_label_scoping)
        out.append(Document(obj, doc.origin))
    if unknown:
        raise ManifestError(
            "Resource types the cluster does not serve:\n"
            + "\n".join(unknown)
            + "\n(hint: is the CRD installed, or given in the same deploy? is the apiVersion right?)"
        )
    return out
