"""`Client` is `AsyncClient`'s synchronous twin: the same public methods with the same parameters (docs/api.md)."""

from __future__ import annotations

import inspect

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
