"""What a PackageRepository's or PackageInstall's pass does with an exception that no stage turned into a status:
every one ends ReconcileFailed with a message in the object's status (the traceback goes to the controller's log),
never a pass that leaves the object `Reconciling` while the worker retries. Only a conflict is left to the worker,
which tries again within seconds (another writer changed the object: nothing failed)."""

from __future__ import annotations

from kapply.errors import ClusterError, ConcurrencyError, KapplyError


def is_conflict(error: Exception) -> bool:
    """Another writer changed the object while the pass ran: the worker tries again soon, nothing is reported."""
    return isinstance(error, ConcurrencyError) or (isinstance(error, ClusterError) and error.conflict)


def unexpected(error: Exception) -> str:
    """The status message for an exception no stage expected. kapply's own errors are written to be shown (the
    cluster's answers, the user's input); of any other exception (a bug), only its type is said: its text could
    hold what it was given, a Secret's value included."""
    if isinstance(error, KapplyError):
        return f"Reconciling: {error}"
    return f"Reconciling: unexpected {type(error).__name__} (a bug of the controller's; its log has the traceback)"
