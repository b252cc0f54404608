"""Pod logs as kapp's `logs` prints them: each line tagged `<pod> > <container> | `, with `#` progress lines around
each container's stream (TTY and JSON only, as kapp's BeginLinef)."""

from __future__ import annotations

from kapply.ui.output import Output


class LogView:
    """Where the log tailers of one `logs` run write; lines of several containers interleave as they come."""

    def __init__(self, out: Output, *, container_tag: bool) -> None:
        self.out = out
        self.container_tag = container_tag

    def waiting(self, tag: str) -> None:
        self.out.begin_line(f"# waiting for '{tag}' logs to become available...\n")

    def starting(self, tag: str) -> None:
        self.out.begin_line(f"# starting tailing '{tag}' logs\n")

    def line(self, tag: str, text: str) -> None:
        """One log line (with its newline)."""
        self.out.block(f"{tag} | {text}" if self.container_tag else text)

    def stopped(self, tag: str) -> None:
        """A followed container's stream ended; it is tailed again when it runs again."""
        self.out.begin_line(f"# container stopped '{tag}' logs\n")

    def ending(self, tag: str) -> None:
        self.out.begin_line(f"# ending tailing '{tag}' logs\n")
