"""kapp's de-duplication of progress (DedupingMessagesUI): a section or a group of lines identical to one shown in
the last minute is not shown again; after a minute it is."""

from __future__ import annotations

from kapply.apply.progress import FORGET_AFTER, Notices
from kapply.resources.cluster import warnings_of


class Collected:
    def __init__(self) -> None:
        self.shown: list[str] = []

    def section(self, message: str) -> None:
        self.shown.append(f"---- {message} ----")

    def line(self, message: str) -> None:
        self.shown.append(message)

    def warn(self, message: str) -> None:
        self.shown.append(f"Warning: {message}")


def test_what_was_shown_in_the_last_minute_is_not_shown_again():
    now = [0.0]
    collected = Collected()
    notices = Notices(collected, clock=lambda: now[0])
    for _ in range(3):
        notices.section("waiting on 1 changes [1/2 done]")
        notices.lines(["exists namespace/x (v1) cluster", " ^ Retryable error: External resource doesn't exists"])
        now[0] += 1
    notices.lines(["exists namespace/x (v1) cluster"])  # a group of its own: shown
    assert collected.shown == [
        "---- waiting on 1 changes [1/2 done] ----",
        "exists namespace/x (v1) cluster",
        " ^ Retryable error: External resource doesn't exists",
        "exists namespace/x (v1) cluster",
    ]
    now[0] += FORGET_AFTER
    notices.section("waiting on 1 changes [1/2 done]")
    assert collected.shown[-1] == "---- waiting on 1 changes [1/2 done] ----"


def test_a_change_whose_state_goes_back_is_not_shown_again_within_the_minute():
    collected = Collected()
    notices = Notices(collected, clock=lambda: 0.0)
    for state in ("ongoing", "ok", "ongoing"):
        notices.lines([f"{state}: reconcile deployment/web (apps/v1) namespace: ns"])
    assert collected.shown == [
        "ongoing: reconcile deployment/web (apps/v1) namespace: ns",
        "ok: reconcile deployment/web (apps/v1) namespace: ns",
    ]


def test_api_warnings_are_read_as_client_go_reads_them():
    headers = [
        '299 - "a/v1 X is deprecated, use \\"b/v1\\""',
        '299 - "one", 299 - "two" "Mon, 02 Jan 2006 15:04:05 GMT"',
        '199 - "not a deprecation"',
        '299 - ""',
        "not a warning",
    ]
    assert warnings_of(headers) == ['a/v1 X is deprecated, use "b/v1"', "one", "two"]
