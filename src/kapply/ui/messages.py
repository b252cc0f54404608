"""Progress lines and the final words, as kapp prints them."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TextIO


def timestamp() -> str:
    """kapp's `3:04:05PM` (Go's time format), in local time."""
    now = datetime.now()
    return f"{now.hour % 12 or 12}:{now:%M:%S}{'AM' if now.hour < 12 else 'PM'}"


class Progress:
    """Timestamped progress lines (`3:04:05PM: ---- applying 2 changes [0/2 done] ----`)."""

    def __init__(self, out: TextIO | None = None, *, enabled: bool = True) -> None:
        self.out = out or sys.stdout
        self.enabled = enabled

    def line(self, message: str) -> None:
        if self.enabled:
            print(f"{timestamp()}: {message}", file=self.out, flush=True)

    def warn(self, message: str) -> None:
        """`Warning: ...` on stderr, without a timestamp, as kapp prints API warnings; shown in every mode."""
        print(f"Warning: {message}", file=sys.stderr, flush=True)

    def section(self, message: str) -> None:
        self.line(f"---- {message} ----")
