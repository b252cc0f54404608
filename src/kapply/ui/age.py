"""Kubernetes' short age of an object, as kapp's tables show it: a module of its own so that `inspect`, `ls` and
`app-change ls` show ages without importing the Changes table and the planning stack it needs (issue 33)."""

from __future__ import annotations

from datetime import UTC, datetime

from kapply import objects
from kapply.objects import Obj


def age(obj: Obj | None, now: datetime | None = None) -> str:
    """Kubernetes' short age (`45s`, `12m`, `5h`, `3d`) of an object, or empty for one not yet created."""
    created = objects.metadata(obj or {}).get("creationTimestamp")
    if not created:
        return ""
    seconds = int(((now or datetime.now(UTC)) - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit != "d" else 1):
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"
