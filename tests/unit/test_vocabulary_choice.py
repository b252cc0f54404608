"""kapply.cli.vocabulary_choice: which groups a client command speaks, from what the cluster serves."""

from __future__ import annotations

import asyncio

from kapply.cli.vocabulary_choice import chosen, served_vocabulary
from kapply.controller.vocabulary import CARVEL, KAPPLY, Resource, Vocabulary
from kapply.resources.cluster import Discovery
from tests.unit.fake_cluster import FakeCluster


def _serving(*resources: Resource) -> Discovery:
    return Discovery(tuple(r.rtype for r in resources))


def _install(vocabulary: Vocabulary) -> Resource:
    return vocabulary.install


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
    assert chosen(discovery, _install) is CARVEL


def test_served_vocabulary_reads_the_cluster_discovery() -> None:
    cluster = FakeCluster(_serving(CARVEL.app))
    assert asyncio.run(served_vocabulary(cluster)) is CARVEL  # type: ignore[arg-type]
