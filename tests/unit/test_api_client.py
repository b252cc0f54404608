"""`Client` is `AsyncClient`'s synchronous twin: the same public methods with the same parameters (docs/api.md)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from kapply.api import AsyncClient, Client


def _public(cls: type) -> dict[str, object]:
    return {name: member for name, member in vars(cls).items() if not name.startswith("_")}


def test_every_async_client_method_is_on_client() -> None:
    missing = sorted(set(_public(AsyncClient)) - set(_public(Client)))
    assert missing == []


def test_the_twins_take_the_same_parameters() -> None:
    for name, member in _public(AsyncClient).items():
        if isinstance(member, property):
            continue
        twin = getattr(Client, name)
        assert list(inspect.signature(twin).parameters) == list(inspect.signature(member).parameters), name  # type: ignore[arg-type]


def test_the_constructors_take_the_same_parameters() -> None:
    assert (
        inspect.signature(Client.__init__).parameters.keys()
        == inspect.signature(AsyncClient.__init__).parameters.keys()
    )


def test_the_twins_methods_are_plain_and_async() -> None:
    for name, member in _public(AsyncClient).items():
        twin = getattr(Client, name)
        if inspect.iscoroutinefunction(member):
            assert not inspect.iscoroutinefunction(twin), name


class _FakeAsync:
    """What a Client calls of its AsyncClient: here, answers saying on which event loop they ran."""

    async def get_app(self, app: str, *, namespace: str | None = None) -> tuple[str, str | None, object]:
        return app, namespace, asyncio.get_running_loop()

    async def close(self) -> None:
        return None


def test_a_twin_runs_the_async_method_on_the_clients_own_loop() -> None:
    with Client._of(_FakeAsync()) as client:  # type: ignore[arg-type]
        first: Any = client.get_app("web", namespace="prod")
        second: Any = client.get_app("db")
    assert first[:2] == ("web", "prod") and second[:2] == ("db", None)
    assert first[2] is second[2]  # one loop (so one connection) serves every call


def test_a_twin_keeps_the_async_methods_name_and_docstring() -> None:
    assert Client.get_app.__name__ == "get_app"
    assert Client.get_app.__doc__ == AsyncClient.get_app.__doc__
