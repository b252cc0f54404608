"""The packaging objects on the cluster, as the controllers read them: their types (whether one has a finalizer is
kapply.objects' `has_finalizer`, as for Apps). Their status and finalizers are written by kapply.resources.cluster's
`Cluster.write_status`, `add_finalizer` and `remove_finalizer`: the writers Apps use too, with one conflict policy."""

from __future__ import annotations

from kapply.objects import Obj
from kapply.packaging import names
from kapply.resources.cluster import Cluster, ResourceType

# kapply's groups (`kapply package`'s); the controller takes its types from its vocabulary (`Resource.rtype`).
REPOSITORIES = names.PACKAGE_REPOSITORY.rtype
INSTALLS = names.PACKAGE_INSTALL.rtype
PACKAGES = names.PACKAGE.rtype
PACKAGE_METADATAS = names.PACKAGE_METADATA.rtype


async def get(cluster: Cluster, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
    return await cluster.get(rtype, namespace, name)
