"""What the controller remembers of each App between syncs, and how ghost diffs stay visible and true.

A ghost diff is an update although the desired state did not change since the last sync (seed 000). The digest of
the desired state last deployed is kept in memory, never in the status (that would be a write per sync). Each ghost
diff stays listed, with when it was first and last seen and how many syncs set it back:

- a checked sync (one whose desired state is the last sync's) that finds it again counts it once more, with the live
  value it set back;
- one that does not find it shows it as resolved: its `lastSeen` stays, its `live` value goes (the cluster may hold
  another value by now). It stays listed until `quiet` checked syncs in a row passed without it, so that a field an
  HPA rewrites every few minutes stays visible between its recurrences;
- but when the desired state changed since it was last seen (a rebase rule or an overlay added to end it), the first
  checked sync that does not find it drops it: it was fixed.

An entry's quiet count lives in memory only, so a sync that sees no ghost diff writes nothing but when an entry turns
resolved or leaves; after a restart the entries are read back from the status, without the digest they were last
seen with, so those only leave after `quiet` syncs.

Each ghost found is also one Warning Event `GhostDiff` whose message names the field and never changes from one
recurrence to the next (no counts, no times), so that the Event recorder counts the recurrences on one Event, as
client-go's aggregates them (events.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kapply import objects
from kapply.api import FieldPath, FieldReport
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.controller.deploy import Quiet

Key = tuple[str, str]  # (resource, field path), as status.ghostDiffs shows them
MAX_EVENTS = 5  # GhostDiff Events a sync writes; more ghosts than that share one Event (MORE)
MORE = "More fields were set back than have an Event of their own: status.ghostDiffs lists them all"
_MASKED = "<--"  # kapp's mask text starts so (`<-- value not shown`); no JSON value does
_WHEN = re.compile(r" at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")  # the time a writer's managedFields entry has


@dataclass(frozen=True, slots=True)
class Ghost:
    entry: Obj  # the status entry: resource, path, desired, live, writtenBy (no times, no counts)
    first_seen: str
    last_seen: str
    recurrences: int  # syncs that set it back, since it was first seen
    quiet: int = 0  # checked syncs in a row without it since it was last seen (> 0: resolved)
    source: tuple[Obj, FieldPath] | None = None  # the resource and path, for the suggested rule (None: read back)
    digest: str = ""  # of the desired state of the sync that last saw it ("": read back, unknown)

    def to_status(self) -> Obj:
        """The status entry; a resolved one without its `live` value, which was the cluster's at `lastSeen`."""
        entry = {k: v for k, v in self.entry.items() if k != "live"} if self.quiet else self.entry
        return {**entry, "recurrences": self.recurrences, "firstSeen": self.first_seen, "lastSeen": self.last_seen}


@dataclass
class Memory:
    """What the controller remembers of an App between syncs."""

    digest: str = ""  # of the desired state last deployed ("" until the first deploy of this process)
    ghosts: dict[Key, Ghost] = field(default_factory=dict)
    quiet: Quiet | None = None  # the last sync's plan, when it changed nothing (deploy.Quiet)


def read_back(status: Obj) -> dict[Key, Ghost]:
    """The ghost diffs a status lists (after a restart): kept until they are quiet long enough. An entry without a
    `live` value was resolved: it counts as one quiet sync."""
    out = {}
    for item in (status.get("ghostDiffs") or {}).get("diffs") or []:
        if not isinstance(item, dict):
            continue
        entry = {k: v for k, v in item.items() if k not in ("recurrences", "firstSeen", "lastSeen")}
        last = str(item.get("lastSeen") or "")
        recurrences = item.get("recurrences")
        count = recurrences if isinstance(recurrences, int) and recurrences > 0 else 1  # anyone may edit a status
        ghost = Ghost(entry, str(item.get("firstSeen") or last), last, count, 0 if "live" in item else 1)
        out[(str(item.get("resource")), str(item.get("path")))] = ghost
    return out


def after_sync(
    known: Mapping[Key, Ghost],
    found: Mapping[Key, tuple[Obj, Obj, FieldPath]],
    now: str,
    quiet: int,
    digest: str,
) -> dict[Key, Ghost]:
    """The ghost diffs after a checked sync of the desired state `digest` that found `found` (key -> status entry,
    resource, path): each found one seen once more; the others one sync quieter, dropped after `quiet` quiet syncs,
    or at once when the desired state changed since they were last seen (fixed)."""
    out = {
        key: replace(g, quiet=g.quiet + 1)
        for key, g in known.items()
        if key not in found and g.quiet + 1 < quiet and g.digest in ("", digest)
    }
    for key, (entry, resource, path) in found.items():
        before = known.get(key)
        first = before.first_seen if before else now
        out[key] = Ghost(entry, first, now, (before.recurrences if before else 0) + 1, 0, (resource, path), digest)
    return out


def event_message(item: FieldReport, namespace: str) -> str:
    """The GhostDiff Event's message about one field, the same at every recurrence: `Deployment web: spec.replicas
    set back to 2, written by kube-controller-manager (Update, scale); ...`. The writer's time is left out, a masked
    value (a Secret's) is not shown, and a resource of another namespace than the App's says which."""
    obj = item.obj
    subject = f"{objects.kind(obj)} {objects.name(obj)}"
    if (where := objects.namespace(obj)) and where != namespace:
        subject += f" (namespace {where})"
    value = "its desired value" if item.desired.startswith(_MASKED) else item.desired
    return (
        f"{subject}: {item.path} set back to {value}, written by {_WHEN.sub('', item.written_by)}; "
        "a rebase rule ends it: status.ghostDiffs.suggestedConfig"
    )


def event_messages(found: Sequence[FieldReport], namespace: str) -> list[str]:
    """The GhostDiff Events of a sync: one per field, at most MAX_EVENTS (the rest share the one MORE Event)."""
    messages = list(dict.fromkeys(event_message(item, namespace) for item in found))
    return messages if len(messages) <= MAX_EVENTS else [*messages[: MAX_EVENTS - 1], MORE]
