"""The ConfigMap changes and plans the controller's deploy-stage tests give kapply.api and kapply.controller.deploy
(tests/unit/test_controller_deploy.py, test_api_controller_seam.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kapply import objects
from kapply.diff.change import Change, Op
from kapply.objects import Obj


def cm(value: str, name: str = "cm") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns"},
        "data": {"a": value},
    }


def change(op: Op, name: str = "cm", *, left: bool = True, right: bool = True, existing: bool = True) -> Change:
    """A change of ConfigMap `name` from the live `a: 2` to the desired `a: 1`; without `left` or `right` the diff's
    side, without `existing` the live object."""
    new, live = cm("1", name), cm("2", name)
    return Change(
        op, objects.key_of(new), new, live if existing else None, new, live if left else None, new if right else None
    )


def plan(*changes: Change, **more: Any) -> Any:
    """A plan of `changes` (as a deploy's plan holds them), with `more` of its fields."""
    return SimpleNamespace(changes=[SimpleNamespace(change=c) for c in changes], **more)
