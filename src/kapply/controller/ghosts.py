"""What the controller remembers of each App between syncs, and how ghost diffs stay visible.

A ghost diff is an update although the desired state did not change since the last sync (seed 000). The digest of
the desired state last deployed is kept in memory, never in the status (that would be a write per sync). Each ghost
diff stays listed, with when it was first and last seen and how many syncs set it back, until `quiet` checked syncs
in a row passed without it: a field an HPA rewrites every few minutes stays visible between its recurrences. An
entry's quiet count lives in memory only, so a sync that sees no ghost diff writes nothing; after a restart the
entries are read back from the status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kapply.api import FieldPath
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.controller.deploy import Quiet

Key = tuple[str, str]  # (resource, field path), as status.ghostDiffs shows them


@dataclass(frozen=True, slots=True)
class Ghost:
    entry: Obj  # the status entry: resource, path, desired, live, writtenBy (no times, no counts)
    first_seen: str
    last_seen: str
    recurrences: int  # syncs that set it back, since it was first seen
    quiet: int = 0  # checked syncs in a row without it since it was last seen
    source: tuple[Obj, FieldPath] | None = None  # the resource and path, for the suggested rule (None: read back)

    def to_status(self) -> Obj:
        return {**self.entry, "recurrences": self.recurrences, "firstSeen": self.first_seen, "lastSeen": self.last_seen}


@dataclass
class Memory:
    """What the controller remembers of an App between syncs."""

    digest: str = ""  # of the desired state last deployed ("" until the first deploy of this process)
    ghosts: dict[Key, Ghost] = field(default_factory=dict)
    quiet: Quiet | None = None  # the last sync's plan, when it changed nothing (deploy.Quiet)


def read_back(status: Obj) -> dict[Key, Ghost]:
    """The ghost diffs a status lists (after a restart): kept until they are quiet long enough."""
    out = {}
    for item in (status.get("ghostDiffs") or {}).get("diffs") or []:
        if not isinstance(item, dict):
            continue
        entry = {k: v for k, v in item.items() if k not in ("recurrences", "firstSeen", "lastSeen")}
        last = str(item.get("lastSeen") or "")
        recurrences = item.get("recurrences")
        count = recurrences if isinstance(recurrences, int) and recurrences > 0 else 1  # anyone may edit a status
        ghost = Ghost(entry, str(item.get("firstSeen") or last), last, count)
        out[(str(item.get("resource")), str(item.get("path")))] = ghost
    return out


def after_sync(
    known: Mapping[Key, Ghost], found: Mapping[Key, tuple[Obj, Obj, FieldPath]], now: str, quiet: int
) -> dict[Key, Ghost]:
    """The ghost diffs after a checked sync that found `found` (key -> status entry, resource, path): each found one
    seen once more, the others one sync quieter, dropped after `quiet` quiet syncs."""
    out = {key: replace(g, quiet=g.quiet + 1) for key, g in known.items() if key not in found and g.quiet + 1 < quiet}
    for key, (entry, resource, path) in found.items():
        before = known.get(key)
        first = before.first_seen if before else now
        out[key] = Ghost(entry, first, now, (before.recurrences if before else 0) + 1, 0, (resource, path))
    return out
