"""No exception ends a PackageRepository's or PackageInstall's pass without ReconcileFailed and a message in its status
(kapply.packaging.failures): for every kind of exception a pass can meet, the status says it failed (kapply's own
errors with their message, anything else with its type only: its text could hold a value it was given), except a
conflict, left to the worker that tries again within seconds. The reconcilers run against an in-memory API server of
one object each."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kapply.controller.settings import Settings
from kapply.controller.vocabulary import KAPPLY
from kapply.errors import ClusterError, ConcurrencyError, KapplyError
from kapply.objects import Obj
from kapply.packaging import names
from kapply.packaging.failures import is_conflict, unexpected
from kapply.packaging.install import InstallReconciler
from kapply.packaging.repository import RepositoryReconciler
from kapply.packaging.settings import PackagingSettings
from tests.unit.cluster_fakes import Stored


class Api:
    def __init__(self, obj: Obj) -> None:
        self.cluster = Stored(obj)  # the API server, holding the one object


def obj(**meta: Any) -> Obj:
    return {"metadata": {"name": "o", "namespace": "ns", "resourceVersion": "1", "generation": 1, **meta}}


SECRET = "s3cr3t-value"
RAISED = {
    "a bug": (KeyError(SECRET), "Reconciling: unexpected KeyError (a bug of the controller's; its log has"),
    "undecodable bytes": (
        UnicodeDecodeError("utf-8", SECRET.encode(), 0, 1, "invalid start byte"),
        "Reconciling: unexpected UnicodeDecodeError",
    ),
    "a broken stream": (EOFError(SECRET), "Reconciling: unexpected EOFError"),
    "kapply's own": (KapplyError("Reading Secret 'x': refused"), "Reconciling: Reading Secret 'x': refused"),
    "the cluster's answer": (ClusterError("Forbidden: no", status=403), "Reconciling: Forbidden: no"),
}


def reconcile(reconciler: RepositoryReconciler | InstallReconciler) -> float | None:
    return asyncio.run(reconciler.reconcile("ns", "o"))


@pytest.mark.parametrize(("error", "message"), RAISED.values(), ids=RAISED.keys())
@pytest.mark.parametrize("deleting", [False, True], ids=["syncing", "deleting"])
def test_a_repository_pass_that_raises_ends_failed_with_a_message(
    monkeypatch: pytest.MonkeyPatch, error: Exception, message: str, deleting: bool
):
    async def raises(*args: object) -> None:
        raise error

    monkeypatch.setattr(RepositoryReconciler, "_delete" if deleting else "_sync", raises)
    monkeypatch.setattr("kapply.packaging.repository.parse_package_repository", lambda _: _Spec())
    meta = {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": [names.REPOSITORY_FINALIZER]} if deleting else {}
    api = Api(obj(**meta))
    again = reconcile(RepositoryReconciler(api, Settings()))  # type: ignore[arg-type]
    status = api.cluster.stored[("ns", "o")]["status"]
    condition = "DeleteFailed" if deleting else "ReconcileFailed"
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [(condition, "True")]
    assert status["conditions"][0]["message"].startswith(message)
    assert status["usefulErrorMessage"].startswith(message)
    assert status["consecutiveReconcileFailures"] == 1 and again is not None and again > 0
    assert SECRET not in str(status)


class _Spec:
    paused = False
    sync_period = 30.0


@pytest.mark.parametrize(("error", "message"), RAISED.values(), ids=RAISED.keys())
def test_an_install_pass_that_raises_ends_failed_with_a_message(
    monkeypatch: pytest.MonkeyPatch, error: Exception, message: str
):
    def raises(_: Obj) -> None:
        raise error

    monkeypatch.setattr("kapply.packaging.install.parse_package_install", raises)
    api = Api(obj())
    again = reconcile(InstallReconciler(api, PackagingSettings(), KAPPLY))  # type: ignore[arg-type]
    status = api.cluster.stored[("ns", "o")]["status"]
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [("ReconcileFailed", "True")]
    assert status["conditions"][0]["message"].startswith(message)
    assert again is not None and again > 0
    assert SECRET not in str(status)


@pytest.mark.parametrize(
    "error", [ConcurrencyError("changed by others"), ClusterError("conflict", status=409)], ids=["ours", "the API's"]
)
def test_a_conflict_is_left_to_the_worker(monkeypatch: pytest.MonkeyPatch, error: Exception):
    def raises(_: Obj) -> None:
        raise error

    monkeypatch.setattr("kapply.packaging.install.parse_package_install", raises)
    api = Api(obj())
    with pytest.raises(type(error)):
        reconcile(InstallReconciler(api, PackagingSettings(), KAPPLY))  # type: ignore[arg-type]
    assert "status" not in api.cluster.stored[("ns", "o")]
    assert is_conflict(error)


def test_only_kapplys_own_errors_are_shown_with_their_text():
    assert unexpected(KapplyError("shown")) == "Reconciling: shown"
    assert SECRET not in unexpected(ValueError(SECRET))
