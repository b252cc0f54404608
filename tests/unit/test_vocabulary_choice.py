"""kapply.controller.vocabulary_choice: which groups a client command speaks, from what the cluster serves."""

from __future__ import annotations

import asyncio

from kapply.controller.vocabulary import CARVEL, KAPPLY, Resource
from kapply.controller.vocabulary_choice import app, chosen, install, served, served_vocabulary
from kapply.resources.cluster import Discovery
from tests.unit.fake_cluster import FakeCluster


def _serving(*resources: Resource) -> Discovery:
    return Discovery(tuple(r.rtype for r in resources))


def test_kapply_groups_when_served_even_beside_carvel() -> None:
    assert chosen(_serving(KAPPLY.app)) is KAPPLY
    assert chosen(_serving(CARVEL.app, KAPPLY.app)) is KAPPLY


def test_carvel_groups_when_only_they_are_served() -> None:
    assert chosen(_serving(CARVEL.app, CARVEL.install)) is CARVEL


def test_kapply_groups_when_neither_is_served() -> None:
    assert chosen(_serving()) is KAPPLY


def test_the_needed_resource_decides() -> None:
    # kapply's App CRD alone (the packaging CRDs not installed), kapp-controller's packaging served
    discovery = _serving(KAPPLY.app, CARVEL.app, CARVEL.install)
    assert chosen(discovery) is KAPPLY
    assert chosen(discovery, install) is CARVEL


def test_served_lists_every_vocabulary_serving_the_resource_kapplys_first() -> None:
    discovery = _serving(CARVEL.app, KAPPLY.app, CARVEL.install)
    assert served(discovery, app) == [KAPPLY, CARVEL]
    assert served(discovery, install) == [CARVEL]
    assert served(_serving(), install) == []


def test_served_vocabulary_reads_the_cluster_discovery() -> None:
    cluster = FakeCluster(_serving(CARVEL.app))
    assert asyncio.run(served_vocabulary(cluster)) is CARVEL  # type: ignore[arg-type]
