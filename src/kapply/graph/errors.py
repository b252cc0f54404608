"""The error raised when changes cannot be ordered."""

from __future__ import annotations

from kapply.errors import KapplyError


class GraphError(KapplyError):
    """A change group or rule that is not valid, or rules that order changes in a cycle."""
