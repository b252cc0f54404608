"""Fixtures of the differential tests: the real kapp (found through $KAPPLY_KAPP or PATH: a test told where it is
fails when it is missing) and a harness per test with its own pair of namespaces."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lightkube import Client

from tests.compat.harness import Harness, Namespaces
from tests.e2e.harness import Cluster, external_tool


@pytest.fixture(scope="session")
def kapp_binary() -> object:
    return external_tool("kapp", "KAPPLY_KAPP")


@pytest.fixture
def both(kapp_binary, cluster: Cluster, kube: Client, request: pytest.FixtureRequest) -> Iterator[Harness]:
    namespaces = Namespaces(kube, request.node.name)
    try:
        yield Harness(kapp_binary, cluster.kubeconfig, namespaces)
    finally:
        namespaces.cleanup()
