"""`kapply app status`'s tables: an App's ghost diffs (a resolved one says since when it was not seen, never a stale
live value) and its drift."""

from __future__ import annotations

import io
import json
from typing import Any

from kapply.objects import Obj
from kapply.ui.app_status import ghost_live, show_app_status
from kapply.ui.output import Output

WEB = "deployment/web (apps/v1) namespace: ns"
SEEN = "2026-01-01T00:00:05Z"


def diff(**changes: Any) -> Obj:
    base = {
        "resource": WEB,
        "path": "spec.replicas",
        "desired": "2",
        "live": "1",
        "writtenBy": "kubectl (Update, scale)",
        "recurrences": 3,
        "firstSeen": "2026-01-01T00:00:01Z",
        "lastSeen": SEEN,
    }
    return {k: v for k, v in {**base, **changes}.items() if v is not None}


def shown(status: Obj) -> dict[str, Any]:
    out = io.StringIO()
    output = Output(tty=False, as_json=True, out=out)
    show_app_status(output, {"metadata": {"name": "web", "namespace": "ns"}, "spec": {}, "status": status})
    output.finish()
    return dict(json.loads(out.getvalue()))


def ghost_rows(status: Obj) -> list[dict[str, str]]:
    table = next(t for t in shown(status)["Tables"] if t["Content"] == "ghost diffs")
    return list(table["Rows"])


def test_a_ghost_diff_set_back_at_the_last_sync_shows_its_live_value() -> None:
    (row,) = ghost_rows({"ghostDiffs": {"diffs": [diff()]}})
    assert (row["resource"], row["field"], row["desired"], row["live"], row["syncs"]) == (
        WEB,
        "spec.replicas",
        "2",
        "1",
        "3",
    )
    assert row["written_by"] == "kubectl (Update, scale)"


def test_a_resolved_ghost_diff_says_since_when_it_was_not_seen() -> None:
    (row,) = ghost_rows({"ghostDiffs": {"diffs": [diff(live=None)]}})
    assert row["live"] == f"not seen since {SEEN}"
    assert row["desired"] == "2"


def test_the_live_value_of_a_ghost_diff() -> None:
    assert ghost_live(diff()) == "1"
    assert ghost_live(diff(live="")) == ""  # a value, if an empty one
    assert ghost_live(diff(live=None, lastSeen=None)) == "not seen since (unknown)"


def test_an_app_without_ghost_diffs_shows_an_empty_table() -> None:
    assert ghost_rows({}) == []
