"""The commands that start by reading an app's record (`inspect`, `logs`, `app-change ls`, ...: `existing_app`) ask
for it beside the nodes of kapp's target line, not after them (issue 33: a round trip less at a distance); the line is
still printed first, and the record is read from that answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kapply.cli import common
from kapply.cli.command import resolve
from kapply.cli.tree import global_flags, tree


class Api:
    def __init__(self, noted: list[str]) -> None:
        self.noted = noted

    async def __aenter__(self) -> Api:
        return self

    async def __aexit__(self, *_: object) -> None:
        pass

    async def prefetch_app(self, app: str, *, namespace: str | None = None) -> None:
        self.noted.append(f"record {namespace}/{app} asked")

    async def target(self) -> str:
        self.noted.append("nodes asked")
        await asyncio.sleep(0)
        return "Target cluster 'https://x' (nodes: n)"

    async def get_app(self, app: str, *, namespace: str | None = None) -> str:
        self.noted.append(f"record {namespace}/{app} read")
        return app


class Out:
    def __init__(self, noted: list[str]) -> None:
        self.noted = noted

    def line(self, text: str) -> None:
        self.noted.append(text)


def test_the_record_is_asked_before_the_target_line_is_awaited(monkeypatch: pytest.MonkeyPatch) -> None:
    noted: list[str] = []
    monkeypatch.setattr(common, "client", lambda *_: Api(noted))
    args = resolve(tree(), ["inspect", "-a", "app", "-n", "ns"], global_flags(), "kapply")

    async def run() -> Any:
        async with common.existing_app(args, Out(noted)) as (_, found):  # type: ignore[arg-type]
            return found

    assert asyncio.run(run()) == "app"
    assert noted == [
        "record None/app asked",
        "nodes asked",
        "Target cluster 'https://x' (nodes: n)",
        "record None/app read",
    ]
