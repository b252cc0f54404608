"""A waiter's verdict on one resource, and how kapp words it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Word(StrEnum):
    """How kapp names a state in its wait output (`ok: reconcile ...`)."""

    OK = "ok"
    FAIL = "fail"
    ONGOING = "ongoing"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class State:
    done: bool
    successful: bool = False
    message: str = ""
    unblock: bool = False  # not done, but changes waiting on this one may proceed

    @property
    def word(self) -> Word:
        if not self.done:
            return Word.ONGOING
        return Word.OK if self.successful else Word.FAIL

    @property
    def terminally_failed(self) -> bool:
        return self.done and not self.successful


def ok(message: str = "") -> State:
    return State(done=True, successful=True, message=message)


def ongoing(message: str = "", *, unblock: bool = False) -> State:
    return State(done=False, message=message, unblock=unblock)


def failed(message: str) -> State:
    return State(done=True, successful=False, message=message)
