"""The App resource's reads: an App by name (None when there is none) and whether it has the controller's finalizer,
in either vocabulary. Its status and finalizer writes are kapply.resources.cluster's
(tests/unit/test_cluster_writes.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kapply import objects
from kapply.controller import apps
from kapply.controller.apps import APPS
from kapply.controller.spec import FINALIZER
from kapply.controller.vocabulary import CARVEL, KAPPLY, Vocabulary
from kapply.objects import Obj
from kapply.packaging import names
from kapply.resources.cluster import ResourceType


def app(**extra: Any) -> Obj:
    return {"apiVersion": "kapply.dev/v1alpha1", "kind": "App", "metadata": {"name": "web", "namespace": "ns"}, **extra}


class OneApp:
    def __init__(self, rtype: ResourceType) -> None:
        self.rtype = rtype

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        assert rtype == self.rtype
        return app() if (namespace, name) == ("ns", "web") else None


@pytest.mark.parametrize("vocabulary", [KAPPLY, CARVEL])
def test_has_finalizer(vocabulary: Vocabulary) -> None:
    assert not apps.has_finalizer(app(), vocabulary)
    assert not apps.has_finalizer(app(metadata={"finalizers": None}), vocabulary)
    assert apps.has_finalizer(app(metadata={"finalizers": ["x", vocabulary.app_finalizer]}), vocabulary)


def test_each_vocabulary_has_its_own_finalizer() -> None:
    assert KAPPLY.app_finalizer == FINALIZER == "finalizers.kapply.dev/delete"
    assert not apps.has_finalizer(app(metadata={"finalizers": [FINALIZER]}), CARVEL)
    assert apps.has_finalizer(app(metadata={"finalizers": ["finalizers.kapp-ctrl.k14s.io/delete"]}), CARVEL)


def test_a_packages_finalizer_is_found_by_the_same_function() -> None:
    install = {"metadata": {"finalizers": ["x", names.INSTALL_FINALIZER]}}
    assert objects.has_finalizer(install, names.INSTALL_FINALIZER) and not objects.has_finalizer(install, FINALIZER)


@pytest.mark.parametrize("vocabulary", [KAPPLY, CARVEL])
def test_get_reads_the_app_of_the_vocabulary(vocabulary: Vocabulary) -> None:
    cluster = OneApp(vocabulary.app.rtype)
    assert asyncio.run(apps.get(cluster, vocabulary, "ns", "web")) == app()  # type: ignore[arg-type]
    assert asyncio.run(apps.get(cluster, vocabulary, "ns", "other")) is None  # type: ignore[arg-type]


def test_the_clis_type_is_kapplys() -> None:
    assert KAPPLY.app.rtype == APPS and APPS.path("ns", "web") == "/apis/kapply.dev/v1alpha1/namespaces/ns/apps/web"
