"""The order kapp lists a deploy's changes in, and so shows them (`--diff-changes`, `--diff-changes-yaml`) and numbers
masked values: its ChangeSetWithVersionedRs makes the changes of versioned resources first.

1. the new versions of versioned resources (`kapp.k14s.io/versioned`, named `<name>-ver-<N>`), in manifest order;
2. the deletes of existing versions (old ones trimmed, or every version of a resource no longer desired), resource by
   resource, oldest first (kapp walks its resources in Go's map order, which varies; kapply keeps the order they are
   first met in);
3. every other change: the new resources in manifest order (a `versioned-keep-original` copy among them), then the
   deletes of the other existing resources (in Go's map order again in kapp; kapply keeps the order they were listed).
"""

from __future__ import annotations

from collections.abc import Sequence

from kapply import objects
from kapply.diff.change import Change
from kapply.diff.versioned import base_name_and_version
from kapply.objects import Obj
from kapply.resources.labeled import is_transient

_Resource = tuple[str, str, str, str]  # namespace, group, kind, name without its version


def in_kapp_order(changes: Sequence[Change]) -> list[Change]:
    """`changes` (new resources' in manifest order, then deletes) in kapp's order; otherwise stable."""
    new_versions: list[Change] = []
    old_versions: list[tuple[_Resource, int, Change]] = []
    rest: list[Change] = []
    for change in changes:
        if change.new is not None:
            (new_versions if _version(change.new) is not None else rest).append(change)
        elif change.existing is not None and (found := _version(change.existing)) and not is_transient(change.existing):
            old_versions.append((*found, change))
        else:
            rest.append(change)
    first_met: dict[_Resource, int] = {}
    for resource, _, _ in old_versions:
        first_met.setdefault(resource, len(first_met))
    old_versions.sort(key=lambda item: (first_met[item[0]], item[1]))
    return [*new_versions, *(change for _, _, change in old_versions), *rest]


def _version(obj: Obj) -> tuple[_Resource, int] | None:
    """The resource a version of a versioned resource belongs to, and its number; None for any other object."""
    if objects.VERSIONED not in objects.annotations(obj):
        return None
    base, number = base_name_and_version(obj["metadata"]["name"])
    if number is None:
        return None
    return (objects.namespace(obj), objects.group_of(obj), objects.kind(obj), base), number
