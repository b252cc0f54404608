"""APIService (kapp's APIRegistrationV1APIService): done once available, or at once with
`--dangerous-ignore-failing-api-services`."""

from __future__ import annotations

from typing import Any

from kapply.apply.waiters.reading import selected_true
from kapply.apply.waiters.state import State, ok


def check(resource: dict[str, Any], ignore_failing: bool) -> State:
    state = selected_true(resource, ("Available",))
    if not state.done and ignore_failing:
        return ok(f"Ignoring ({state.message})")
    return state
