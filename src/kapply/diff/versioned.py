"""Versioned resources (`kapp.k14s.io/versioned`): a change is a new `<name>-ver-<N>`, never an update.

For each versioned resource the current version is the latest existing one if the new
resource equals it, else the next number. References to it in other new resources
(template rules of the Config, and `kapp.k14s.io/versioned-explicit-ref` annotations)
are rewritten to the current version's name, so that a Deployment using a versioned
ConfigMap changes, and rolls, whenever the ConfigMap does. Naming and rewriting run
twice, as in kapp, so that versioned resources referring to each other settle. Of the
versions that exist before a deploy, the newest `kapp.k14s.io/num-versions` (default 5) are kept and older ones are
deleted, as kapp counts them: a changing deploy leaves that many old versions beside the new one.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kapply import objects, yamlio
from kapply.config.config import Config
from kapply.config.matchers import matches_any
from kapply.config.paths import replace_maps_at
from kapply.diff.change import Change, Op, calculate
from kapply.diff.yaml_text import to_yaml
from kapply.errors import ManifestError
from kapply.objects import Document, Obj, ResourceKey, describe, key_of
from kapply.resources.labeled import is_transient

DEFAULT_NUM_VERSIONS = 5
_VERSION_SUFFIX = re.compile(r"^(.*)-ver-(\d+)$")
_REF_KEYS = ("apiVersion", "kind", "name")


@dataclass(frozen=True)
class Versioned:
    """The desired resources with versioned names and rewritten references, and what becomes of old versions."""

    desired: tuple[Document, ...]
    previous: dict[ResourceKey, Obj]  # key of a new version -> the version before it, to diff against
    keep: frozenset[ResourceKey]  # existing old versions to keep (the rest are deleted like any removed resource)


def _with_name(res: Obj, name: str) -> Obj:
    return {**res, "metadata": {**res["metadata"], "name": name}}


def base_name_and_version(name: str) -> tuple[str, int | None]:
    match = _VERSION_SUFFIX.match(name)
    return (match.group(1), int(match.group(2))) if match else (name, None)


def _group(res: Obj, base: str) -> tuple[str, str, str, str]:
    return (objects.namespace(res), objects.group_of(res), objects.kind(res), base)


def _num_versions(res: Obj, origin: str) -> int:
    value = objects.annotations(res).get(objects.NUM_VERSIONS)
    if value is None:
        return DEFAULT_NUM_VERSIONS
    try:
        number = int(value)
    except ValueError:
        raise ManifestError(
            f"Expected annotation '{objects.NUM_VERSIONS}' on resource '{describe(res)}' to be an integer ({origin})"
        ) from None
    if number < 1:
        raise ManifestError(
            f"Expected annotation '{objects.NUM_VERSIONS}' on resource '{describe(res)}' to be a >= 1 ({origin})"
        )
    return number


def _refers_to(ref: Obj, target: Obj, name_key: str, base: str) -> bool:
    meta = target["metadata"]
    return (
        ref.get(name_key) == base
        and ref.get("namespace", meta.get("namespace")) == meta.get("namespace")
        and ref.get("kind", target["kind"]) == target["kind"]
        and ref.get("apiVersion", target["apiVersion"]) == target["apiVersion"]
    )


def _rewrite_explicit_refs(res: Obj, target: Obj, base: str, name: str) -> Obj:
    annotations = objects.annotations(res)
    changed = {}
    for key, value in annotations.items():
        if key != objects.VERSIONED_EXPLICIT_REF and not key.startswith(objects.VERSIONED_EXPLICIT_REF + "."):
            continue
        ref = yamlio.load(value, f"annotation '{key}' on resource '{describe(res)}'", ManifestError)
        if not isinstance(ref, dict) or not all(ref.get(k) and isinstance(ref[k], str) for k in _REF_KEYS):
            raise ManifestError(
                f"Expected annotation '{key}' on resource '{describe(res)}' to have apiVersion, kind and name"
            )
        current, _ = base_name_and_version(ref["name"])
        if current == base and _refers_to({**ref, "name": current}, target, "name", base):
            changed[key] = to_yaml({**ref, "name": name})  # as kapp writes it (go-yaml v2)
    if not changed:
        return res
    return {**res, "metadata": {**res["metadata"], "annotations": {**annotations, **changed}}}


def _rewrite_refs(resources: list[Obj], target: Obj, base: str, name: str, config: Config) -> list[Obj]:
    """Point every reference to the versioned resource `target` (named `base` in manifests) at `name`."""
    for rule in config.template_rules:
        if not matches_any(rule.resource_matchers, target):
            continue
        for ref in rule.object_references:

            def rename(m: Obj, key: str = ref.name_key) -> Obj:
                return {**m, key: name} if _refers_to(m, target, key, base) else m

            resources = [
                replace_maps_at(r, ref.path, rename) if matches_any(ref.resource_matchers, r) else r for r in resources
            ]
    return [_rewrite_explicit_refs(r, target, base, name) for r in resources]


def against_previous(change: Change, previous: Obj, config: Config) -> Change:
    """A new version's create, shown as its diff against the version before it, as kapp shows it: the update of the
    previous version it would be. Rebased onto that version, the new side has its metadata (name, resourceVersion,
    managedFields), so only what the user changed shows."""
    assert change.new is not None
    compared = calculate(change.new, previous, config)
    if compared.right is None:
        return change
    return replace(change, left=compared.left, right=compared.right)


def _versions(existing: Sequence[Obj]) -> dict[tuple[str, str, str, str], list[tuple[int, Obj]]]:
    """The existing versions of each versioned resource, oldest first: the app's own objects (not transient) that
    carry `kapp.k14s.io/versioned` and a `-ver-N` name."""
    versions: dict[tuple[str, str, str, str], list[tuple[int, Obj]]] = defaultdict(list)
    for obj in existing:
        base, number = base_name_and_version(obj["metadata"]["name"])
        if number is not None and objects.VERSIONED in objects.annotations(obj) and not is_transient(obj):
            versions[_group(obj, base)].append((number, obj))
    for group in versions.values():
        group.sort(key=lambda nv: nv[0])
    return versions


def current_by_key(existing: Sequence[Obj]) -> dict[ResourceKey, Obj]:
    """The existing object a resource named as in its manifest stands for: itself, or for a versioned resource its
    latest version (kapp's `existingResourcesMap`, what a renewal is measured against)."""
    out = {key_of(obj): obj for obj in existing}
    for (_, _, _, base), group in _versions(existing).items():
        latest = group[-1][1]
        out[key_of(_with_name(latest, base))] = latest
    return out


def resolve(desired: Sequence[Document], existing: Sequence[Obj], config: Config) -> Versioned:
    """Versioned names, rewritten references and the old versions to keep, for an app's desired resources."""
    versions = _versions(existing)
    resources = [d.obj for d in desired]
    names = _names(resources, versions, config)
    for i in names:
        resources = _rewrite_refs(resources, desired[i].obj, desired[i].obj["metadata"]["name"], names[i], config)

    out: list[Document] = []
    previous: dict[ResourceKey, Obj] = {}
    keep: set[ResourceKey] = set()
    for i, d in enumerate(desired):
        if i not in names:
            out.append(Document(resources[i], d.origin))
            continue
        base = d.obj["metadata"]["name"]
        if objects.VERSIONED_KEEP_ORIGINAL in objects.annotations(d.obj):
            out.append(Document(resources[i], d.origin))
        new = _with_name(resources[i], names[i])
        out.append(Document(new, d.origin))
        group = versions.get(_group(d.obj, base), [])
        if group and group[-1][1]["metadata"]["name"] != names[i]:
            previous[key_of(new)] = group[-1][1]
        # kapp counts the versions that exist before the deploy, the new one not among them: a changing deploy keeps
        # the newest `num-versions` of those beside the new one, and the next deploy, changing or not, trims them.
        keep.update(key_of(obj) for _, obj in group[-_num_versions(d.obj, d.origin) :])
    return Versioned(tuple(out), previous, frozenset(keep))


def _names(
    resources: list[Obj], versions: dict[tuple[str, str, str, str], list[tuple[int, Obj]]], config: Config
) -> dict[int, str]:
    """The versioned name of each versioned resource (by index): the latest existing version's when the resource,
    its references rewritten, would not change it; else the next number. Twice over, so that a versioned resource
    that refers to another is compared with the name the other gets."""
    versioned = [i for i, r in enumerate(resources) if objects.VERSIONED in objects.annotations(r)]
    names: dict[int, str] = {}
    for _ in range(2):
        current = resources
        for i in versioned:
            if i in names:
                current = _rewrite_refs(current, resources[i], resources[i]["metadata"]["name"], names[i], config)
        for i in versioned:
            base = resources[i]["metadata"]["name"]
            existing_versions = versions.get(_group(resources[i], base))
            if not existing_versions:
                names[i] = f"{base}-ver-1"
                continue
            number, latest = existing_versions[-1]
            same = calculate(_with_name(current[i], latest["metadata"]["name"]), latest, config).op is Op.KEEP
            names[i] = latest["metadata"]["name"] if same else f"{base}-ver-{number + 1}"
    return names
