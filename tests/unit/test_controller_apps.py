"""The App resource's reads: an App by name (None when there is none) and whether it has kapply's finalizer. Its
status and finalizer writes are kapply.resources.cluster's (tests/unit/test_cluster_writes.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from kapply import objects
from kapply.controller import apps
from kapply.controller.apps import APPS
from kapply.controller.spec import FINALIZER
from kapply.objects import Obj
from kapply.packaging import names
from kapply.resources.cluster import ResourceType


def app(**extra: Any) -> Obj:
    return {"apiVersion": "kapply.dev/v1alpha1", "kind": "App", "metadata": {"name": "web", "namespace": "ns"}, **extra}


class OneApp:
    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        assert rtype == APPS
        return app() if (namespace, name) == ("ns", "web") else None


def test_has_finalizer() -> None:
    assert not apps.has_finalizer(app())
    assert not apps.has_finalizer(app(metadata={"finalizers": None}))
    assert apps.has_finalizer(app(metadata={"finalizers": ["x", FINALIZER]}))


def test_a_packages_finalizer_is_found_by_the_same_function() -> None:
    install = {"metadata": {"finalizers": ["x", names.INSTALL_FINALIZER]}}
    assert objects.has_finalizer(install, names.INSTALL_FINALIZER) and not objects.has_finalizer(install, FINALIZER)


def test_get_reads_the_app() -> None:
    assert asyncio.run(apps.get(OneApp(), "ns", "web")) == app()  # type: ignore[arg-type]
    assert asyncio.run(apps.get(OneApp(), "ns", "other")) is None  # type: ignore[arg-type]
