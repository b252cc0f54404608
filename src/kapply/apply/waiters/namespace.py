"""Namespace, beyond kapp: done when Active (a Terminating one cannot take new resources)."""

from __future__ import annotations

from typing import Any

from kapply.apply.waiters.reading import status, text
from kapply.apply.waiters.state import State, ok, ongoing


def check(resource: dict[str, Any]) -> State:
    phase = text(status(resource), "phase")
    return ok() if phase in ("", "Active") else ongoing(f"Phase is {phase}")
