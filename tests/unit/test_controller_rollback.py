"""kapply.controller.rollback.roll_back: what the CLI's `app-change rollback` and the dashboard's rollback both run
(pausing the controller's App first: tests/unit/test_app_change_kept.py; on a cluster: tests/e2e/test_rollback.py
and tests/e2e/test_dashboard.py)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

from kapply.controller.rollback import PAUSE, roll_back


class Api:
    def __init__(self, app: Any) -> None:
        self.calls: list[object] = []
        self.cluster, self.app = self, app

    async def get(self, rtype: Any, namespace: str, name: str) -> Any:
        return self.app if rtype.group == "kapply.dev" else None

    async def patch(self, rtype: Any, namespace: str, name: str, patch: Any) -> Any:
        self.calls.append(("patch", rtype.kind, name, patch))

    async def run_deploy(self, plan: Any, *, progress: Any = None) -> Any:
        self.calls.append(("run", plan.app.name))
        return SimpleNamespace(app_change="web.app-change-x")


def plan(app: str) -> Any:
    return SimpleNamespace(app=SimpleNamespace(name=app, namespace="ns"), options=SimpleNamespace(rollback_of="c-1"))


def test_a_rollback_pauses_the_controllers_app_then_deploys_and_says_so() -> None:
    said: list[str] = []
    api = Api({"metadata": {"name": "web", "namespace": "ns"}, "spec": {}})
    recorded = asyncio.run(roll_back(cast(Any, api), plan("web.app"), said.append))
    assert api.calls == [("patch", "App", "web", PAUSE), ("run", "web.app")]
    assert recorded == "web.app-change-x"
    assert said[0].startswith("Paused App 'web' (kapply.dev, namespace: ns)")
    assert said[-1] == "Rolled back to app change 'c-1', recorded as app change 'web.app-change-x'"


def test_a_rollback_of_an_app_no_controller_deploys_only_deploys() -> None:
    said: list[str] = []
    api = Api(None)
    asyncio.run(roll_back(cast(Any, api), plan("plain"), said.append))
    assert api.calls == [("run", "plain")]
    assert said == ["Rolled back to app change 'c-1', recorded as app change 'web.app-change-x'"]
