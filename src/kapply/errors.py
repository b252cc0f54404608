"""kapply's user-facing errors. Each kind of failure has its own type carrying
what the user needs to fix it; the CLI prints `kapply: Error: <message>` and
exits 1 without a traceback."""

from __future__ import annotations


class KapplyError(Exception):
    """Base of every error that is the user's input or the cluster's answer, not a bug."""


class ManifestError(KapplyError):
    """A manifest that cannot be read or is not a valid resource (names the file and document)."""


class ConfigError(KapplyError):
    """A kapp Config resource (or a rule in it) that is not valid."""


class ClusterError(KapplyError):
    """The API server refused or failed a request (carries its status and reason, and the server's own message)."""

    def __init__(self, message: str, status: int = 0, reason: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.detail = detail or message


class OwnershipError(KapplyError):
    """A resource already belongs to another app."""


class AppNotFoundError(KapplyError):
    """The app has no record in the namespace."""


class GraphError(KapplyError):
    """A change group or rule that is not valid, or rules that order changes in a cycle."""


class ApplyError(KapplyError):
    """A change the API server refused, or a resource that did not converge; the message says which and why."""


class ConcurrencyError(KapplyError):
    """Another deploy or delete of the same app ran, or is running: nothing was applied."""
