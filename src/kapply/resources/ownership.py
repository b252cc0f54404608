"""Whether the app may take over resources that already exist on the cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kapply import objects
from kapply.errors import OwnershipError
from kapply.objects import Obj, ResourceKey, describe, key_of


def check_ownership(found: Sequence[Obj], new_by_key: Mapping[ResourceKey, Obj], label_value: str) -> None:
    """Refuse when an existing object found for a new resource carries another app's label (kapp's ownership
    check), unless the new resource only refers to it (`exists` or `noop`)."""
    errors = []
    for obj in found:
        owner = objects.labels(obj).get(objects.APP_LABEL)
        new = new_by_key[key_of(obj)]
        if (
            owner
            and owner != label_value
            and not (objects.has_annotation(new, objects.EXISTS) or objects.has_annotation(new, objects.NOOP))
        ):
            errors.append(
                f"- Resource '{describe(obj)}' is already associated with a different app "
                f"(label '{objects.APP_LABEL}={owner}')"
            )
    if errors:
        raise OwnershipError(
            "Ownership errors:\n"
            + "\n".join(errors)
            + "\n(hint: --dangerous-override-ownership-of-existing-resources takes them over)"
        )
