"""The packaging objects on the cluster, as the controllers read them: their types (whether one has a finalizer is
kapply.objects' `has_finalizer`, as for Apps). Their status and finalizers are written by kapply.resources.cluster's
`Cluster.write_status`, `add_finalizer` and `remove_finalizer`: the writers Apps use too, with one conflict policy."""

from __future__ import annotations

from kapply.objects import Obj
from kapply.packaging import names
from kapply.resources.cluster import Cluster, ResourceType

_VERBS = frozenset({"get", "list", "watch", "update"})


def resource_type(resource: names.Resource) -> ResourceType:
    return ResourceType(resource.group, names.VERSION, resource.kind, resource.plural, True, _VERBS)


REPOSITORIES = resource_type(names.PACKAGE_REPOSITORY)
INSTALLS = resource_type(names.PACKAGE_INSTALL)
PACKAGES = resource_type(names.PACKAGE)
PACKAGE_METADATAS = resource_type(names.PACKAGE_METADATA)


async def get(cluster: Cluster, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
    return await cluster.get(rtype, namespace, name)
