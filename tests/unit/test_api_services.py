"""Unavailable aggregated APIs: what discovery marks failing, and when kapp stops for them."""

from __future__ import annotations

import pytest

from kapply.errors import ClusterError
from kapply.resources.api_services import check_required, group_version
from kapply.resources.cluster import Discovery, _stale_from_aggregated


def test_stale_versions_of_aggregated_discovery_are_failing():
    doc = {
        "items": [
            {"metadata": {"name": "metrics.k8s.io"}, "versions": [{"version": "v1beta1", "freshness": "Stale"}]},
            {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "freshness": "Current", "resources": []}]},
            {"metadata": {}, "versions": [{"version": "v1", "freshness": "Stale"}]},
        ]
    }
    assert _stale_from_aggregated(doc) == {"metrics.k8s.io/v1beta1", "v1"}


def test_a_failing_group_version_matters_only_when_required():
    discovery = Discovery((), frozenset({"b.dev/v1", "a.dev/v1"}))
    check_required(discovery, {"v1", "apps/v1"})
    check_required(discovery, {"a.dev/v1"}, ignore=True)
    with pytest.raises(ClusterError) as failure:
        check_required(discovery, {"a.dev/v1"})
    assert str(failure.value) == (
        "unable to retrieve the complete list of server APIs: a.dev/v1: the server is currently unable to handle the "
        "request, b.dev/v1: the server is currently unable to handle the request "
        "(possibly related issue: https://github.com/vmware-tanzu/carvel-kapp/issues/12)"
    )
    assert group_version("", "v1") == "v1" and group_version("apps", "v1") == "apps/v1"
