"""`kapply package` speaks the groups the cluster serves (kapply's first, else kapp-controller's), or those
`--api-groups` names; a dry run, which needs no cluster, kapply's when the cluster does not answer."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from kapply.cli.command import Args, resolve
from kapply.cli.package.available import speaks as available_speaks
from kapply.cli.package.common import as_go_prints, dry_run_vocabulary, explicit_vocabulary, vocabulary
from kapply.cli.package.install import speaks as install_speaks
from kapply.cli.package.repository import new_repository
from kapply.cli.package.repository import speaks as repository_speaks
from kapply.cli.pflag import UsageError
from kapply.cli.tree import global_flags, tree
from kapply.controller.vocabulary import CARVEL, KAPPLY, Resource
from kapply.errors import ClusterError
from kapply.resources.cluster import Discovery
from tests.unit.fake_cluster import FakeCluster


def args(*extra: str) -> Args:
    found = resolve(tree(), ["package", "installed", "list", *extra], global_flags(), "kapply")
    assert found is not None
    return found


def serving(*resources: Resource) -> FakeCluster:
    return FakeCluster(Discovery(tuple(r.rtype for r in resources)))


class Unanswered:
    async def discovery(self, refresh: bool = False) -> Discovery:
        raise ClusterError("Request GET /api to https://127.0.0.1:1 failed: connection refused")


def test_the_groups_the_cluster_serves_are_spoken_kapplys_first() -> None:
    carvel = serving(CARVEL.app, CARVEL.install, CARVEL.repository, CARVEL.package)
    both = serving(KAPPLY.install, KAPPLY.package, CARVEL.install, CARVEL.package)
    for speaks in (install_speaks, repository_speaks, available_speaks):
        assert asyncio.run(vocabulary(args(), carvel, speaks)) is CARVEL  # type: ignore[arg-type]
        assert asyncio.run(vocabulary(args(), both, speaks)) is KAPPLY  # type: ignore[arg-type]


def test_api_groups_names_them_whatever_the_cluster_serves() -> None:
    both = serving(KAPPLY.install, CARVEL.install)
    assert asyncio.run(vocabulary(args("--api-groups", "carvel"), both, install_speaks)) is CARVEL  # type: ignore[arg-type]
    assert asyncio.run(vocabulary(args("--api-groups=kapply"), serving(), install_speaks)) is KAPPLY  # type: ignore[arg-type]
    assert explicit_vocabulary(args()) is None
    with pytest.raises(UsageError, match="^--api-groups 'k14s': expected kapply, carvel$"):
        explicit_vocabulary(args("--api-groups", "k14s"))


def test_a_dry_run_asks_the_cluster_and_speaks_kapplys_groups_when_it_does_not_answer() -> None:
    unanswered = SimpleNamespace(cluster=Unanswered())
    assert asyncio.run(dry_run_vocabulary(args(), unanswered, install_speaks)) is KAPPLY  # type: ignore[arg-type]
    named = asyncio.run(dry_run_vocabulary(args("--api-groups", "carvel"), unanswered, install_speaks))  # type: ignore[arg-type]
    assert named is CARVEL
    carvel = SimpleNamespace(cluster=serving(CARVEL.install))
    assert asyncio.run(dry_run_vocabulary(args(), carvel, install_speaks)) is CARVEL  # type: ignore[arg-type]


def test_a_repository_is_written_in_the_groups_spoken_and_dry_runs_print_it_as_kctrl() -> None:
    fetch = {"imgpkgBundle": {"image": "reg.io/repo:1.0.0"}}
    carvel = new_repository(CARVEL, "r", "ns", fetch)
    assert carvel["apiVersion"] == "packaging.carvel.dev/v1alpha1"
    assert new_repository(KAPPLY, "r", "ns", fetch)["apiVersion"] == "packaging.kapply.dev/v1alpha1"
    printed = as_go_prints(carvel)
    assert printed["metadata"] == {"name": "r", "namespace": "ns", "creationTimestamp": None}
    assert printed["status"] == {"conditions": None, "friendlyDescription": "", "observedGeneration": 0}
    assert "creationTimestamp" not in carvel["metadata"], "the object itself is left as it is"
