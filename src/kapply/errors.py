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
    """The API server refused or failed a request (carries its status and reason, and the server's own message).

    Only the cluster client (kapply.resources.cluster) reads `status`, the HTTP status code (0: no answer, a broken
    connection); everything else asks the predicates below, one for each answer a caller handles, as client-go's
    `apierrors.IsNotFound` and the like (tests/unit/test_cluster_seam.py holds every other module to that)."""

    def __init__(self, message: str, status: int = 0, reason: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.detail = detail or message

    def again(self) -> ClusterError:
        """The same answer as a new error, to raise again (raising one error twice piles up its traceback)."""
        return ClusterError(str(self), status=self.status, reason=self.reason, detail=self.detail)

    @property
    def unanswered(self) -> bool:
        """No answer (a refused or broken connection, a timeout): the server may be back in a moment."""
        return self.status == 0

    @property
    def unavailable(self) -> bool:
        """503: the server (or the aggregated API behind it) cannot serve the request now."""
        return self.status == 503

    @property
    def unauthorized(self) -> bool:
        """401: the credentials are not (or no longer) taken."""
        return self.status == 401

    @property
    def forbidden(self) -> bool:
        """403: not allowed (RBAC, or the confined client's refusal)."""
        return self.status == 403

    @property
    def not_found(self) -> bool:
        """404: no such object, or the type is not served (its CRD is gone)."""
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """409: the object changed since it was read (an update), or exists already (a create)."""
        return self.status == 409

    @property
    def gone(self) -> bool:
        """410: a watch's resourceVersion is too old: list again."""
        return self.status == 410

    @property
    def invalid(self) -> bool:
        """422: the object is not valid as sent (its fields, or annotations too large for the server)."""
        return self.status == 422


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
