"""Progress as kapp prints it: timestamped lines (`3:04:05PM: ---- applying 2 changes [0/2 done] ----`)."""

from __future__ import annotations

import sys
from datetime import datetime

from kapply.ui.escape import escaped
from kapply.ui.output import Output


def timestamp() -> str:
    """kapp's `3:04:05PM` (Go's time format), in local time."""
    now = datetime.now()
    return f"{now.hour % 12 or 12}:{now:%M:%S}{'AM' if now.hour < 12 else 'PM'}"


class ProgressLines:
    """The apply stage's Progress, written to an Output as kapp's BeginLinef lines."""

    def __init__(self, out: Output) -> None:
        self.out = out

    def line(self, message: str) -> None:
        self.out.begin_line(f"{timestamp()}: {message}\n")

    def section(self, message: str) -> None:
        self.line(f"---- {message} ----")

    def warn(self, message: str) -> None:
        """`Warning: ...` on stderr, without a timestamp, as kapp prints API warnings; shown in every mode."""
        print(escaped(f"Warning: {message}"), file=sys.stderr, flush=True)
