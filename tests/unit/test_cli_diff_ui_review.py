"""kapply.cli.diff_ui: the page of a deploy and of a delete are one review of the plan (title, target, changes, masked
hunks, graph, Config); a deploy's adds the fields others wrote, its drift policy and default update strategy."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from kapply.cli import diff_ui
from kapply.diff.render import DiffFormat


class FakeApi:
    async def target(self) -> str:
        return "Target cluster 'https://x'"

    async def outside_changes(self, plan: Any) -> list[str]:
        return ["someone wrote spec.replicas"]


def _plan() -> Any:
    return SimpleNamespace(
        app=SimpleNamespace(name="web", namespace="prod"),
        changes=("c1",),
        text=lambda fmt: SimpleNamespace(hunks=(f"hunk masked={fmt.mask}",)),
        graph="graph",
        config="config",
        options=SimpleNamespace(drift_policy="warn", apply=SimpleNamespace(default_update_strategy="fallback")),
    )


@pytest.fixture
def reviewed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    monkeypatch.setattr("kapply.ui.browser.review", lambda *args, **kwargs: calls.append((args, kwargs)))
    return calls


def test_a_delete_page_is_the_plan_masked(reviewed: list[tuple[tuple[Any, ...], dict[str, Any]]]) -> None:
    asyncio.run(diff_ui.delete_review(FakeApi(), _plan(), DiffFormat(mask=False), True))  # type: ignore[arg-type]
    assert reviewed == [
        (
            (
                "delete",
                "Delete app 'web' (namespace: prod)",
                "Target cluster 'https://x'",
                ("c1",),
                ("hunk masked=True",),
                "graph",
            ),
            {"asks": True, "config": "config"},
        )
    ]


def test_a_deploy_page_adds_the_outside_fields_and_the_plans_options(
    reviewed: list[tuple[tuple[Any, ...], dict[str, Any]]],
) -> None:
    asyncio.run(diff_ui.deploy_review(FakeApi(), _plan(), DiffFormat(mask=False), False))  # type: ignore[arg-type]
    assert reviewed == [
        (
            (
                "deploy",
                "Deploy app 'web' (namespace: prod)",
                "Target cluster 'https://x'",
                ("c1",),
                ("hunk masked=True",),
                "graph",
            ),
            {
                "asks": False,
                "config": "config",
                "outside": ["someone wrote spec.replicas"],
                "policy": "warn",
                "default_update_strategy": "fallback",
            },
        )
    ]
