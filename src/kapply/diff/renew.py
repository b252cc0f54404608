"""kapp's renewable resources (`kapp.k14s.io/renew-duration`): once the duration has passed since the resource was
last renewed (`kapp.k14s.io/last-renewed-time`, else its creation), the deploy stamps `last-renewed-time` with the
current time, which makes an update; before that, the live stamp is carried over so that nothing changes."""

from __future__ import annotations

from datetime import UTC, datetime

from kapply import objects
from kapply.errors import ManifestError
from kapply.objects import Obj
from kapply.values import parse_duration


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def renewed(new: Obj, existing: Obj | None, now: datetime) -> Obj:
    """`new` with the `last-renewed-time` a deploy at `now` applies (unchanged without `renew-duration` or an existing
    object)."""
    value = objects.annotations(new).get(objects.RENEW_DURATION)
    if value is None or existing is None:
        return new
    try:
        duration = parse_duration(str(value))
    except ValueError as e:
        raise ManifestError(
            f"Expected annotation '{objects.RENEW_DURATION}' on {objects.describe(new)} to be a duration: {e}"
        ) from None
    stamp = objects.annotations(existing).get(objects.LAST_RENEWED_TIME)
    since = _time(stamp) or _time(objects.metadata(existing).get("creationTimestamp"))
    if since is None or (now - since).total_seconds() >= duration:
        stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if stamp is None:
        return new
    return objects.with_annotations(new, {objects.LAST_RENEWED_TIME: stamp})
