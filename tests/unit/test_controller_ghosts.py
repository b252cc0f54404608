"""What the controller remembers of ghost diffs between syncs: each found one seen once more, the others a sync
quieter (resolved: no live value) until dropped, at once when the desired state changed since (fixed); the entries a
status lists, read back after a restart; and the GhostDiff Events' messages, the same at every recurrence."""

from __future__ import annotations

import pytest

from kapply.api import FieldPath, FieldReport
from kapply.controller import status as app_status
from kapply.controller.ghosts import (
    MAX_EVENTS,
    MORE,
    Ghost,
    Key,
    Memory,
    after_sync,
    event_message,
    event_messages,
    read_back,
)
from kapply.objects import Obj

WEB = "deployment/web (apps/v1) namespace: ns"
REPLICAS = FieldPath(("spec", "replicas"))
IMAGE = FieldPath(("spec", "image"))
RESOURCE: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"}}
T1, T2, T3 = "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"
D1, D2 = "digest-1", "digest-2"  # of two desired states


def entry(path: FieldPath, live: str = "5") -> Obj:
    return {"resource": WEB, "path": str(path), "desired": "2", "live": live, "writtenBy": "hpa"}


def found(*paths: FieldPath, live: str = "5") -> dict[Key, tuple[Obj, Obj, FieldPath]]:
    return {(WEB, str(p)): (entry(p, live), RESOURCE, p) for p in paths}


def test_a_ghost_seen_for_the_first_time_recurs_once_first_and_last_seen_now() -> None:
    out = after_sync({}, found(REPLICAS), T1, quiet=10, digest=D1)
    g = out[(WEB, "spec.replicas")]
    assert (g.recurrences, g.first_seen, g.last_seen, g.quiet) == (1, T1, T1, 0)
    assert g.entry == entry(REPLICAS)
    assert (g.source, g.digest) == ((RESOURCE, REPLICAS), D1)


def test_a_ghost_seen_again_counts_one_more_and_keeps_when_it_was_first_seen() -> None:
    once = after_sync({}, found(REPLICAS), T1, quiet=10, digest=D1)
    twice = after_sync(once, found(REPLICAS, live="6"), T2, quiet=10, digest=D1)
    g = twice[(WEB, "spec.replicas")]
    assert (g.recurrences, g.first_seen, g.last_seen, g.quiet) == (2, T1, T2, 0)
    assert g.entry["live"] == "6"  # the entry is the latest one


def test_a_ghost_not_found_gets_quieter_and_keeps_its_entry() -> None:
    once = after_sync({}, found(REPLICAS), T1, quiet=10, digest=D1)
    later = after_sync(once, {}, T2, quiet=10, digest=D1)
    g = later[(WEB, "spec.replicas")]
    assert (g.recurrences, g.first_seen, g.last_seen, g.quiet) == (1, T1, T1, 1)
    assert g.source == (RESOURCE, REPLICAS)  # a quiet ghost still has its rule suggested


def test_a_resolved_ghost_shows_when_it_was_last_seen_not_its_stale_live_value() -> None:
    once = after_sync({}, found(REPLICAS), T1, quiet=10, digest=D1)
    assert once[(WEB, "spec.replicas")].to_status()["live"] == "5"
    shown = after_sync(once, {}, T2, quiet=10, digest=D1)[(WEB, "spec.replicas")].to_status()
    assert "live" not in shown
    assert (shown["lastSeen"], shown["recurrences"], shown["desired"]) == (T1, 1, "2")


def test_a_ghost_seen_again_shows_its_live_value_again() -> None:
    ghosts = after_sync(after_sync({}, found(REPLICAS), T1, quiet=10, digest=D1), {}, T2, quiet=10, digest=D1)
    again = after_sync(ghosts, found(REPLICAS, live="7"), T3, quiet=10, digest=D1)[(WEB, "spec.replicas")]
    assert again.to_status()["live"] == "7"


def test_a_ghost_the_new_desired_state_ended_is_dropped_at_the_first_checked_sync_without_it() -> None:
    """A rebase rule or an overlay added since it was last seen (the digest changed), and it is gone: fixed."""
    ghosts = after_sync({}, found(REPLICAS), T1, quiet=10, digest=D1)
    assert after_sync(ghosts, {}, T2, quiet=10, digest=D2) == {}


def test_a_ghost_a_new_desired_state_did_not_end_is_seen_again_and_counts_on() -> None:
    ghosts = after_sync({}, found(REPLICAS), T1, quiet=10, digest=D1)
    g = after_sync(ghosts, found(REPLICAS), T2, quiet=10, digest=D2)[(WEB, "spec.replicas")]
    assert (g.recurrences, g.first_seen, g.digest) == (2, T1, D2)
    assert after_sync({(WEB, "spec.replicas"): g}, {}, T3, quiet=10, digest=D2), "quiet, same desired state: listed"


def test_a_quiet_ghost_is_dropped_when_the_desired_state_changes() -> None:
    ghosts = after_sync(after_sync({}, found(REPLICAS), T1, quiet=10, digest=D1), {}, T2, quiet=10, digest=D1)
    assert after_sync(ghosts, {}, T3, quiet=10, digest=D2) == {}


def test_only_the_ghosts_not_found_again_are_dropped_as_fixed() -> None:
    ghosts = after_sync({}, found(REPLICAS, IMAGE), T1, quiet=10, digest=D1)
    assert list(after_sync(ghosts, found(IMAGE), T2, quiet=10, digest=D2)) == [(WEB, "spec.image")]


def test_a_ghost_read_back_is_not_known_to_be_fixed_and_waits_its_quiet_syncs() -> None:
    status = {"ghostDiffs": {"diffs": [{**entry(REPLICAS), "recurrences": 4, "firstSeen": T1, "lastSeen": T2}]}}
    later = after_sync(read_back(status), {}, T3, quiet=10, digest=D2)
    assert later[(WEB, "spec.replicas")].quiet == 1


def test_a_ghost_is_dropped_when_its_quiet_syncs_reach_the_limit() -> None:
    ghosts = after_sync({}, found(REPLICAS), T1, quiet=3, digest=D1)
    ghosts = after_sync(ghosts, {}, T2, quiet=3, digest=D1)
    ghosts = after_sync(ghosts, {}, T2, quiet=3, digest=D1)
    assert ghosts[(WEB, "spec.replicas")].quiet == 2
    assert after_sync(ghosts, {}, T3, quiet=3, digest=D1) == {}


def test_a_ghost_seen_again_while_quiet_starts_its_quiet_count_over() -> None:
    ghosts = after_sync({}, found(REPLICAS), T1, quiet=3, digest=D1)
    ghosts = after_sync(ghosts, {}, T2, quiet=3, digest=D1)
    ghosts = after_sync(ghosts, {}, T2, quiet=3, digest=D1)
    ghosts = after_sync(ghosts, found(REPLICAS), T3, quiet=3, digest=D1)
    g = ghosts[(WEB, "spec.replicas")]
    assert (g.recurrences, g.first_seen, g.last_seen, g.quiet) == (2, T1, T3, 0)
    two_quiet = after_sync(after_sync(ghosts, {}, T3, quiet=3, digest=D1), {}, T3, quiet=3, digest=D1)
    assert two_quiet, "two quiet syncs again: still listed"


def test_with_a_limit_of_one_a_ghost_goes_at_the_first_sync_without_it() -> None:
    ghosts = after_sync({}, found(REPLICAS), T1, quiet=1, digest=D1)
    assert after_sync(ghosts, {}, T2, quiet=1, digest=D1) == {}


def test_ghosts_are_tracked_each_on_their_own() -> None:
    ghosts = after_sync({}, found(REPLICAS, IMAGE), T1, quiet=10, digest=D1)
    ghosts = after_sync(ghosts, found(IMAGE), T2, quiet=10, digest=D1)
    assert ghosts[(WEB, "spec.replicas")].quiet == 1
    assert ghosts[(WEB, "spec.image")].recurrences == 2


def test_after_sync_does_not_change_what_it_was_given() -> None:
    known = after_sync({}, found(REPLICAS), T1, quiet=10, digest=D1)
    before = dict(known)
    after_sync(known, {}, T2, quiet=10, digest=D1)
    assert known == before


def test_a_status_entry_is_the_entry_with_counts_and_times() -> None:
    g = Ghost(entry(REPLICAS), T1, T2, 3)
    assert g.to_status() == {**entry(REPLICAS), "recurrences": 3, "firstSeen": T1, "lastSeen": T2}


def test_the_ghosts_of_a_status_are_read_back_without_a_source() -> None:
    ghosts = after_sync({}, found(REPLICAS), T1, quiet=10, digest=D1)
    ghosts = after_sync(ghosts, found(REPLICAS), T2, quiet=10, digest=D1)
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
    ghosts = after_sync(read_back(status), found(REPLICAS), T3, quiet=10, digest=D1)
    g = ghosts[(WEB, "spec.replicas")]
    assert (g.recurrences, g.first_seen, g.last_seen) == (5, T1, T3)


def test_a_resolved_entry_is_read_back_resolved() -> None:
    resolved = {k: v for k, v in entry(REPLICAS).items() if k != "live"}
    back = read_back({"ghostDiffs": {"diffs": [{**resolved, "recurrences": 2, "firstSeen": T1, "lastSeen": T2}]}})
    g = back[(WEB, "spec.replicas")]
    assert g.quiet == 1
    assert "live" not in g.to_status()
    assert after_sync(back, {}, T3, quiet=2, digest=D1) == {}, "it was quiet once already"


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


# The GhostDiff Events' messages.


def report(
    path: FieldPath = REPLICAS, desired: str = "2", live: str = "5", written_by: str = "hpa", obj: Obj = RESOURCE
) -> FieldReport:
    return FieldReport(WEB, str(path), desired, live, written_by, obj, path)


def test_an_event_message_names_the_field_its_desired_value_its_writer_and_what_ends_it() -> None:
    item = report(written_by="kube-controller-manager (Update, scale)")
    assert event_message(item, "ns") == (
        "Deployment web: spec.replicas set back to 2, written by kube-controller-manager (Update, scale); "
        "a rebase rule ends it: status.ghostDiffs.suggestedConfig"
    )


def test_an_event_message_is_the_same_at_every_recurrence() -> None:
    """The live value and the writer's time change from one recurrence to the next: neither is in the message, so
    that the recurrences are counted on one Event."""
    first = event_message(report(live="5", written_by="kubectl-edit (Update) at 2026-11-23T21:46:16Z"), "ns")
    again = event_message(report(live="7", written_by="kubectl-edit (Update) at 2026-11-23T21:49:02Z"), "ns")
    assert first == again
    assert "written by kubectl-edit (Update);" in first
    assert "2026" not in first and "5" not in first


def test_an_event_message_never_shows_a_masked_value() -> None:
    secret: Obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "ns"}}
    item = report(FieldPath(("data", "password")), "<-- value not shown", "<-- value not shown", obj=secret)
    message = event_message(item, "ns")
    assert message.startswith("Secret creds: data.password set back to its desired value, written by hpa;")
    assert "value not shown" not in message


def test_an_event_message_names_another_namespace_than_the_apps() -> None:
    assert event_message(report(), "apps").startswith("Deployment web (namespace ns): spec.replicas")
    cluster_scoped: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    labels = FieldPath(("metadata", "labels", "x"))
    assert event_message(report(labels, obj=cluster_scoped), "apps").startswith("Namespace team: metadata.labels")


def test_a_sync_has_one_event_per_field() -> None:
    messages = event_messages([report(REPLICAS), report(IMAGE), report(REPLICAS)], "ns")
    assert messages == [event_message(report(REPLICAS), "ns"), event_message(report(IMAGE), "ns")]
    assert event_messages([], "ns") == []


@pytest.mark.parametrize("fields", [MAX_EVENTS, MAX_EVENTS + 1, MAX_EVENTS + 7])
def test_many_fields_share_one_event_past_the_limit(fields: int) -> None:
    items = [report(FieldPath(("spec", f"f{i}"))) for i in range(fields)]
    messages = event_messages(items, "ns")
    assert len(messages) == MAX_EVENTS
    expected = [event_message(i, "ns") for i in items]
    assert messages == (expected if fields == MAX_EVENTS else [*expected[: MAX_EVENTS - 1], MORE])
