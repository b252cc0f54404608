"""How the apply stage reports what it is doing. The stage owns the protocol; its users choose where it goes
(the CLI prints kapp's timestamped lines, the library logs, tests collect)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

_log = logging.getLogger("kapply")


class Progress(Protocol):
    def section(self, message: str) -> None:
        """A phase: `applying 2 changes [0/3 done]`, `waiting on 1 changes [1/3 done]`."""

    def line(self, message: str) -> None:
        """One event: `create configmap/x (v1) namespace: ns`, `ongoing: reconcile ...`, ` ^ Waiting for ...`."""

    def warn(self, message: str) -> None:
        """Something the user should know that does not stop the run."""


class LoggedProgress:
    """Progress as records of the `kapply` logger: sections and lines at INFO, warnings at WARNING."""

    def section(self, message: str) -> None:
        _log.info("---- %s ----", message)

    def line(self, message: str) -> None:
        _log.info("%s", message)

    def warn(self, message: str) -> None:
        _log.warning("%s", message)


FORGET_AFTER = 60.0  # seconds: kapp's DedupingMessagesUI shows an identical section or group again after a minute


class Notices:
    """kapp's de-duplication of progress (DedupingMessagesUI): a section, or a group of lines (a change's progress
    line with its ` ^ ...` and ` L ...` details), identical to one shown in the last minute is not shown again. A
    wait that does not change is then a few lines a minute, not a line per check."""

    def __init__(self, progress: Progress, clock: Callable[[], float] = time.monotonic) -> None:
        self.progress = progress
        self._clock = clock
        self._shown: dict[str, float] = {}

    def _fresh(self, key: str) -> bool:
        now = self._clock()
        shown = self._shown.get(key)
        if shown is not None and now - shown <= FORGET_AFTER:
            return False
        self._shown[key] = now
        return True

    def section(self, message: str) -> None:
        if self._fresh(f"---- {message}"):
            self.progress.section(message)

    def lines(self, messages: Sequence[str]) -> None:
        if messages and self._fresh("\n".join(messages)):
            for message in messages:
                self.progress.line(message)
