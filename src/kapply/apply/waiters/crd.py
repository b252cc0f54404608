"""CustomResourceDefinition (kapp's ApiExtensionsVxCRD): done once its names are accepted and it is established."""

from __future__ import annotations

from typing import Any

from kapply.apply.waiters.reading import selected_true
from kapply.apply.waiters.state import State


def check(resource: dict[str, Any]) -> State:
    return selected_true(resource, ("Established", "NamesAccepted"))
