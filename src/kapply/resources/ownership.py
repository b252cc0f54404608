"""Whether the app may take over resources that already exist on the cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kapply import objects
from kapply.errors import OwnershipError
from kapply.objects import Obj, ResourceKey, describe, key_of


def foreign(
    found: Sequence[Obj], new_by_key: Mapping[ResourceKey, Obj], label_value: str, label_key: str = objects.APP_LABEL
) -> list[tuple[Obj, str]]:
    """The existing objects found for new resources that carry another app's label, each with that label's value,
    unless the new resource only refers to it (`exists` or `noop`)."""
    out = []
    for obj in found:
        owner = objects.labels(obj).get(label_key)
        new = new_by_key[key_of(obj)]
        if (
            owner is not None
            and owner != label_value
            and not (objects.has_annotation(new, objects.EXISTS) or objects.has_annotation(new, objects.NOOP))
        ):
            out.append((obj, owner))
    return out


def check_ownership(
    found: Sequence[Obj],
    new_by_key: Mapping[ResourceKey, Obj],
    label_value: str,
    owners: Mapping[str, str] | None = None,
    label_key: str = objects.APP_LABEL,
) -> None:
    """Refuse when an existing object found for a new resource carries another app's label (kapp's ownership
    check), unless the new resource only refers to it (`exists` or `noop`). `owners` names the app of a label value
    (`app 'web' namespace: prod`), as kapp names it when the app lives in the app namespace."""
    errors = []
    for obj, owner in foreign(found, new_by_key, label_value, label_key):
        app = (owners or {}).get(owner)
        what = f"{app} (label '{label_key}={owner}')" if app else f"label '{label_key}={owner}'"
        errors.append(f"- Resource '{describe(obj)}' is already associated with a different {what}")
    if errors:
        raise OwnershipError("Ownership errors:\n" + "\n".join(errors))


def check_disallowed_labels(found: Sequence[Obj], new_by_key: Mapping[ResourceKey, Obj], record: ResourceKey) -> None:
    """Refuse to take over an app record (kapp's disallowed labels check): an existing object labeled
    `kapp.k14s.io/is-app`, or a new resource that is the record this deploy is about to create."""
    hits = [describe(obj) for obj in found if objects.IS_APP_LABEL in objects.labels(obj)]
    if record in new_by_key and not any(key_of(obj) == record for obj in found):
        hits.append(describe(new_by_key[record]))
    if hits:
        raise OwnershipError(
            "Disallowed labels errors:\n"
            + "\n".join(f"- Resource '{hit}' has a disallowed label '{objects.IS_APP_LABEL}'" for hit in hits)
        )
