"""No failure ends an App's reconcile without its status saying so: an exception nothing foresaw becomes
ReconcileFailed with its type and message (the worker would otherwise log `reconcile crashed` and retry while the App
stays `Reconciling`); the controller's own failures (a status that cannot be written, a conflict) stay the worker's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kapply.controller.cache import Cache
from kapply.controller.reconciler import Failed, Reconciler
from kapply.errors import ConcurrencyError
from kapply.objects import Obj

APP: Obj = {
    "apiVersion": "kapply.dev/v1alpha1",
    "kind": "App",
    "metadata": {"name": "a", "namespace": "n", "generation": 1},
    "spec": {
        "serviceAccountName": "sa",
        "fetch": [{"inline": {}}],
        "template": [{"ytt": {}}],
        "deploy": [{"kapp": {}}],
    },
}


class Api:
    cluster: Any = None


def reconciler(raised: BaseException, failed: list[tuple[str, str]]) -> Reconciler:
    cache = Cache()
    cache.apps.put(APP)
    r = Reconciler(Api(), cache=cache)  # type: ignore[arg-type]

    async def reconcile(app: Obj, spec: object, status: Obj) -> float:
        raise raised

    async def fail(app: Obj, status: Obj, spec: object, failure: Failed) -> float:
        failed.append((failure.message, failure.useful))
        return 7.0

    r._reconcile = reconcile  # type: ignore[method-assign,assignment]
    r._fail = fail  # type: ignore[method-assign]
    return r


def test_an_unforeseen_exception_ends_in_reconcile_failed_with_its_type_and_message():
    failed: list[tuple[str, str]] = []
    again = asyncio.run(
        reconciler(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), failed).reconcile("n", "a")
    )
    message = (
        "Reconcile failed: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"
    )
    assert again == 7.0 and failed == [(message, message)]


@pytest.mark.parametrize("raised", [ConcurrencyError("another deploy is running"), asyncio.CancelledError()])
def test_the_controllers_own_failures_stay_the_workers(raised: BaseException):
    failed: list[tuple[str, str]] = []
    with pytest.raises(type(raised)):
        asyncio.run(reconciler(raised, failed).reconcile("n", "a"))
    assert failed == []
