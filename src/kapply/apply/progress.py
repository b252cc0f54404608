"""How the apply stage reports what it is doing. The stage owns the protocol; its users choose where it goes
(the CLI prints kapp's timestamped lines, the library logs, tests collect)."""

from __future__ import annotations

import logging
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
