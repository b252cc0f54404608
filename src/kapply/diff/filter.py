"""kapp's change filter (`--diff-filter`): which of the calculated changes a deploy or delete shows and applies.

    {"and":[{"ops":["update"]},{"existingResource":{"kinds":["Deployment"]}}]}

Semantics (kapp's `ChangeSetFilterRoot`): the first of `and`, `or` (each only when non-empty), `not`, `newResource`,
`existingResource` and `ops` that is set decides; a filter with none of them matches every change.

- `newResource` and `existingResource` are resource filters (`kinds`, `namespaces`, `names`, `kindNames`,
  `kindNamespaces`, `kindNsNames`, `labels`, as `--filter`'s, see `kapply.resources.filters`) on that side of the
  change; a change without that side does not match. The new side is the resource as it will be sent (with kapp's
  labels, and rebased onto the live object); the existing side is the one the diff compares against.
- `ops` are kapp's diff ops: `add`, `update`, `delete`, `keep`, `exists`, `noop` (`add`, not `create`). Every op
  listed must be the change's op, so a list of two different ops matches nothing (as kapp).
- Keys are matched without regard to case, as Go decodes JSON; errors read as Go's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kapply.diff.change import Change
from kapply.objects import Obj
from kapply.resources.filters import (
    FilterError,
    ResourceFilter,
    combined,
    decode_json,
    json_fields,
    json_type_error,
    resource_filter_from_json,
)

__all__ = ["ChangeFilter", "FilterError", "parse_change_filter"]


def new_side(change: Change) -> Obj | None:
    """The change's new resource as kapp's filter sees it: what is sent (rebased), else the prepared resource."""
    return change.to_apply if change.to_apply is not None else change.new


def existing_side(change: Change) -> Obj | None:
    """The change's existing resource as kapp's filter sees it: the diff's existing side, else the live object."""
    return change.left if change.left is not None else change.existing


@dataclass(frozen=True, slots=True)
class ChangeFilter:
    and_: tuple[ChangeFilter, ...] = ()
    or_: tuple[ChangeFilter, ...] = ()
    not_: ChangeFilter | None = None
    new_resource: ResourceFilter | None = None
    existing_resource: ResourceFilter | None = None
    ops: tuple[str, ...] = ()

    def matches(self, change: Change) -> bool:
        if (verdict := combined(self.and_, self.or_, self.not_, change)) is not None:
            return verdict
        if self.new_resource is not None:
            new = new_side(change)
            return new is not None and self.new_resource.matches(new)
        if self.existing_resource is not None:
            existing = existing_side(change)
            return existing is not None and self.existing_resource.matches(existing)
        if self.ops:
            return all(op == change.op.value for op in self.ops)
        return True

    def apply(self, changes: Iterable[Change]) -> list[Change]:
        """The changes that match, in their order."""
        return [c for c in changes if self.matches(c)]


_ROOT = "ChangeSetFilterRoot"


def _ops(value: Any, path: Sequence[str]) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise json_type_error(value, _ROOT, path, "diff.OpsFilter")
    for item in value:
        if not isinstance(item, str):
            raise json_type_error(item, _ROOT, path, "diff.ChangeOp")
    return tuple(value)


def _change_filter(doc: Any, path: Sequence[str] = ()) -> ChangeFilter:
    names = ("And", "Or", "Not", "NewResource", "ExistingResource", "Ops")
    fields = json_fields(doc, _ROOT, names, path, _ROOT, package="diff")
    lists: dict[str, tuple[ChangeFilter, ...]] = {}
    for name in ("And", "Or"):
        if name in fields:
            if not isinstance(fields[name], list):
                raise json_type_error(fields[name], _ROOT, [*path, name], f"[]diff.{_ROOT}")
            lists[name] = tuple(_change_filter(f, [*path, name]) for f in fields[name])
    sides = {
        name: resource_filter_from_json(fields[name], [*path, name], _ROOT)
        for name in ("NewResource", "ExistingResource")
        if name in fields
    }
    return ChangeFilter(
        and_=lists.get("And", ()),
        or_=lists.get("Or", ()),
        not_=_change_filter(fields["Not"], [*path, "Not"]) if "Not" in fields else None,
        new_resource=sides.get("NewResource"),
        existing_resource=sides.get("ExistingResource"),
        ops=_ops(fields["Ops"], [*path, "Ops"]) if "Ops" in fields else (),
    )


def parse_change_filter(text: str) -> ChangeFilter | None:
    """`--diff-filter`'s JSON; None when the flag is empty (no filter). Raises FilterError as kapp refuses it."""
    if not text:
        return None
    return _change_filter(decode_json(text))
