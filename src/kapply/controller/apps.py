"""The App resource on the cluster: its type, reading it, and whether it has kapply's finalizer. The controller writes
an App's status and finalizer with kapply.resources.cluster's `Cluster.write_status`, `add_finalizer` and
`remove_finalizer`: the writers packages use too, with one conflict policy."""

from __future__ import annotations

from kapply import objects
from kapply.controller.spec import FINALIZER, KIND, PLURAL
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, ResourceType

APPS = ResourceType("kapply.dev", "v1alpha1", KIND, PLURAL, True, frozenset({"get", "list", "watch", "update"}))


async def get(cluster: Cluster, namespace: str, name: str) -> Obj | None:
    return await cluster.get(APPS, namespace, name)


def has_finalizer(app: Obj) -> bool:
    return objects.has_finalizer(app, FINALIZER)
