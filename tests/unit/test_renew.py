from datetime import UTC, datetime, timedelta

import pytest

from kapply.diff.renew import renewed
from kapply.errors import ManifestError

NOW = datetime(2026, 11, 24, 0, 0, 0, tzinfo=UTC)


def configmap(**annotations: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "r", "annotations": annotations}}


def live(created: datetime, **annotations: str) -> dict:
    obj = configmap(**annotations)
    obj["metadata"]["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    return obj


def stamp(obj: dict) -> str | None:
    return obj["metadata"]["annotations"].get("kapp.k14s.io/last-renewed-time")


def test_without_the_annotation_or_a_live_object_nothing_is_stamped():
    assert renewed(configmap(), live(NOW - timedelta(days=1)), NOW) == configmap()
    new = configmap(**{"kapp.k14s.io/renew-duration": "1h"})
    assert renewed(new, None, NOW) == new


def test_the_duration_counts_from_creation_then_from_the_last_renewal():
    new = configmap(**{"kapp.k14s.io/renew-duration": "1h"})
    assert stamp(renewed(new, live(NOW - timedelta(minutes=30)), NOW)) is None
    assert stamp(renewed(new, live(NOW - timedelta(hours=2)), NOW)) == "2026-11-24T00:00:00Z"
    recent = live(NOW - timedelta(days=2), **{"kapp.k14s.io/last-renewed-time": "2026-11-23T23:30:00Z"})
    assert stamp(renewed(new, recent, NOW)) == "2026-11-23T23:30:00Z"  # carried over: no change
    old = live(NOW - timedelta(days=2), **{"kapp.k14s.io/last-renewed-time": "2026-11-23T22:30:00Z"})
    assert stamp(renewed(new, old, NOW)) == "2026-11-24T00:00:00Z"


def test_a_bad_duration_names_the_resource():
    with pytest.raises(ManifestError, match="renew-duration.*configmap/r.*duration"):
        renewed(configmap(**{"kapp.k14s.io/renew-duration": "soon"}), live(NOW), NOW)
