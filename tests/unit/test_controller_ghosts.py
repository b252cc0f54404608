"""What the controller remembers of ghost diffs between syncs: each found one seen once more, the others a sync
quieter until dropped; and the entries a status lists, read back after a restart."""

from __future__ import annotations

from kapply.api import FieldPath
from kapply.controller import status as app_status
from kapply.controller.ghosts import Ghost, Key, Memory, after_sync, read_back
from kapply.objects import Obj

WEB = "deployment/web (apps/v1) namespace: ns"
REPLICAS = FieldPath(("spec", "replicas"))
IMAGE = FieldPath(("spec", "image"))
RESOURCE: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"}}
T1, T2, T3 = "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"


def entry(path: FieldPath, live: str = "5") -> Obj:
    return {"resource": WEB, "path": str(path), "desired": "2", "live": live, "writtenBy": "hpa"}


def found(*paths: FieldPath, live: str = "5") -> dict[Key, tuple[Obj, Obj, FieldPath]]:
    return {(WEB, str(p)): (entry(p, live), RESOURCE, p) for p in paths}


def test_a_ghost_seen_for_the_first_time_recurs_once_first_and_last_seen_now() -> None:
    out = after_sync({}, found(REPLICAS), T1, quiet=10)
    g = out[(WEB, "spec.replicas")]
    assert (g.recurrences, g.first_seen, g.last_seen, g.quiet) == (1, T1, T1, 0)
    assert g.entry == entry(REPLICAS)
    assert g.source == (RESOURCE, REPLICAS)


def test_a_ghost_seen_again_counts_one_more_and_keeps_when_it_was_first_seen() -> None:
    once = after_sync({}, found(REPLICAS), T1, quiet=10)
    twice = after_sync(once, found(REPLICAS, live="6"), T2, quiet=10)
    g = twice[(WEB, "spec.replicas")]
    assert (g.recurrences, g.first_seen, g.last_seen, g.quiet) == (2, T1, T2, 0)
    assert g.entry["live"] == "6"  # the entry is the latest one


def test_a_ghost_not_found_gets_quieter_and_keeps_its_entry() -> None:
    once = after_sync({}, found(REPLICAS), T1, quiet=10)
    later = after_sync(once, {}, T2, quiet=10)
    g = later[(WEB, "spec.replicas")]
    assert (g.recurrences, g.first_seen, g.last_seen, g.quiet) == (1, T1, T1, 1)
    assert g.source == (RESOURCE, REPLICAS)  # a quiet ghost still has its rule suggested


def test_a_ghost_is_dropped_when_its_quiet_syncs_reach_the_limit() -> None:
    ghosts = after_sync({}, found(REPLICAS), T1, quiet=3)
    ghosts = after_sync(ghosts, {}, T2, quiet=3)
    ghosts = after_sync(ghosts, {}, T2, quiet=3)
    assert ghosts[(WEB, "spec.replicas")].quiet == 2
    assert after_sync(ghosts, {}, T3, quiet=3) == {}


def test_a_ghost_seen_again_while_quiet_starts_its_quiet_count_over() -> None:
    ghosts = after_sync({}, found(REPLICAS), T1, quiet=3)
    ghosts = after_sync(ghosts, {}, T2, quiet=3)
    ghosts = after_sync(ghosts, {}, T2, quiet=3)
    ghosts = after_sync(ghosts, found(REPLICAS), T3, quiet=3)
    g = ghosts[(WEB, "spec.replicas")]
    assert (g.recurrences, g.first_seen, g.last_seen, g.quiet) == (2, T1, T3, 0)
    assert after_sync(after_sync(ghosts, {}, T3, quiet=3), {}, T3, quiet=3)  # two quiet syncs again: still listed


def test_with_a_limit_of_one_a_ghost_goes_at_the_first_sync_without_it() -> None:
    ghosts = after_sync({}, found(REPLICAS), T1, quiet=1)
    assert after_sync(ghosts, {}, T2, quiet=1) == {}


def test_ghosts_are_tracked_each_on_their_own() -> None:
    ghosts = after_sync({}, found(REPLICAS, IMAGE), T1, quiet=10)
    ghosts = after_sync(ghosts, found(IMAGE), T2, quiet=10)
    assert ghosts[(WEB, "spec.replicas")].quiet == 1
    assert ghosts[(WEB, "spec.image")].recurrences == 2


def test_after_sync_does_not_change_what_it_was_given() -> None:
    known = after_sync({}, found(REPLICAS), T1, quiet=10)
    before = dict(known)
    after_sync(known, {}, T2, quiet=10)
    assert known == before


def test_a_status_entry_is_the_entry_with_counts_and_times() -> None:
    g = Ghost(entry(REPLICAS), T1, T2, 3)
    assert g.to_status() == {**entry(REPLICAS), "recurrences": 3, "firstSeen": T1, "lastSeen": T2}


def test_the_ghosts_of_a_status_are_read_back_without_a_source() -> None:
    ghosts = after_sync(after_sync({}, found(REPLICAS), T1, quiet=10), found(REPLICAS), T2, quiet=10)
    status = {"ghostDiffs": app_status.ghost_diffs(ghosts, {})}
    back = read_back(status)
    g = back[(WEB, "spec.replicas")]
    assert (g.entry, g.first_seen, g.last_seen, g.recurrences, g.quiet, g.source) == (
        entry(REPLICAS),
        T1,
        T2,
        2,
        0,
        None,
    )
    assert g.to_status() == status["ghostDiffs"]["diffs"][0]


def test_read_back_ghosts_continue_counting() -> None:
    status = {"ghostDiffs": {"diffs": [{**entry(REPLICAS), "recurrences": 4, "firstSeen": T1, "lastSeen": T2}]}}
    ghosts = after_sync(read_back(status), found(REPLICAS), T3, quiet=10)
    g = ghosts[(WEB, "spec.replicas")]
    assert (g.recurrences, g.first_seen, g.last_seen) == (5, T1, T3)


def test_read_back_fills_in_missing_counts_and_times() -> None:
    status = {"ghostDiffs": {"diffs": [{**entry(REPLICAS), "lastSeen": T2}, {**entry(IMAGE)}]}}
    back = read_back(status)
    assert (back[(WEB, "spec.replicas")].first_seen, back[(WEB, "spec.replicas")].recurrences) == (T2, 1)
    assert (back[(WEB, "spec.image")].first_seen, back[(WEB, "spec.image")].last_seen) == ("", "")


def test_read_back_skips_what_is_not_an_entry() -> None:
    assert read_back({"ghostDiffs": {"diffs": ["text", 3, None]}}) == {}
    assert read_back({}) == {}
    assert read_back({"ghostDiffs": None}) == {}
    assert read_back({"ghostDiffs": {"diffs": None}}) == {}


def test_memory_starts_empty() -> None:
    memory = Memory()
    assert (memory.digest, memory.ghosts) == ("", {})
    assert Memory().ghosts is not memory.ghosts
