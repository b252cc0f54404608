"""The in-place move from kapp-controller: what a cluster it left may still hold that stops the controller.

kapp-controller serves `data.packaging.carvel.dev` (Packages, PackageMetadatas) from its own aggregated API: its
install registers the APIService `v1alpha1.data.packaging.carvel.dev` backed by its Service. An APIService that a
user made takes precedence over the one the API server makes for a CRD of that group version, so once
kapp-controller's Deployment is gone, every request to the group is answered 503 and the Package CRDs are never
served. The controller cannot tell why from that answer alone, so it asks once, at start, and says what to do."""

from __future__ import annotations

from kapply.controller.vocabulary import VERSION, ApiGroups, Vocabulary
from kapply.errors import ClusterError
from kapply.resources.cluster import Cluster


async def taken_data_group(cluster: Cluster, vocabulary: Vocabulary) -> str | None:
    """What to tell the user when the Packages' group version answers 503 (an APIService that does not answer
    serves it, rather than the CRDs); None when it answers (any other way: no CRDs is said elsewhere)."""
    group = vocabulary.package.group
    try:
        await cluster.group_version(group, VERSION)
    except ClusterError as e:
        if e.unavailable:
            return taken_message(group, vocabulary.api_groups)
    return None


def taken_message(group: str, groups: ApiGroups) -> str:
    whose = " (kapp-controller's aggregated API, left by its install)" if groups is ApiGroups.CARVEL else ""
    name = f"{VERSION}.{group}"
    return (
        f"{group}/{VERSION} is served by APIService {name}{whose}, which does not answer, not by the Package CRDs: "
        f"Packages and PackageMetadatas cannot be read or written until it is deleted "
        f"(kubectl delete apiservice {name})"
    )
