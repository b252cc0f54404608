"""The App resource on the cluster: its type, reading it, and whether it has the controller's finalizer. The
controller writes an App's status and finalizer with kapply.resources.cluster's `Cluster.write_status`,
`add_finalizer` and `remove_finalizer`: the writers packages use too, with one conflict policy. The controller's type
and finalizer are its vocabulary's (kapply.controller.vocabulary); APPS is kapply's, which the CLI reads."""

from __future__ import annotations

from kapply import objects
from kapply.controller.vocabulary import KAPPLY, Vocabulary
from kapply.objects import Obj
from kapply.resources.cluster import Cluster

APPS = KAPPLY.app.rtype


async def get(cluster: Cluster, vocabulary: Vocabulary, namespace: str, name: str) -> Obj | None:
    return await cluster.get(vocabulary.app.rtype, namespace, name)


def has_finalizer(app: Obj, vocabulary: Vocabulary) -> bool:
    return objects.has_finalizer(app, vocabulary.app_finalizer)
