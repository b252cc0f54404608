"""Pod logs as kapp's `logs` prints them: each line tagged `<pod> > <container> | `, with `#` progress lines around
each container's stream (TTY and JSON only, as kapp's BeginLinef). During a deploy every line of it is prefixed
`logs | ` (kapp's LinePrefix)."""

from __future__ import annotations

from kapply.ui.escape import escaped
from kapply.ui.output import Output


class LogView:
    """Where the log tailers of one `logs` run write; lines of several containers interleave as they come."""

    def __init__(self, out: Output, *, container_tag: bool, prefix: str = "") -> None:
        self.out = out
        self.container_tag = container_tag
        self.prefix = f"{prefix} | " if prefix else ""

    def waiting(self, tag: str) -> None:
        self.out.begin_line(f"{self.prefix}# waiting for '{tag}' logs to become available...\n")

    def starting(self, tag: str) -> None:
        self.out.begin_line(f"{self.prefix}# starting tailing '{tag}' logs\n")

    def line(self, tag: str, text: str) -> None:
        """One log line (with its newline): the text as the container wrote it (colours and all), after a prefix
        whose Pod and container names show control characters as escapes."""
        self.out.block(escaped(self.prefix + (f"{tag} | " if self.container_tag else "")) + text, raw=True)

    def stopped(self, tag: str) -> None:
        """A followed container's stream ended; it is tailed again when it runs again."""
        self.out.begin_line(f"{self.prefix}# container stopped '{tag}' logs\n")

    def ending(self, tag: str) -> None:
        self.out.begin_line(f"{self.prefix}# ending tailing '{tag}' logs\n")
