"""Shared values for unit tests: a discovery of the common built-in kinds, kapp's default config, and a PKI."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from kapply.config.config import Config
from kapply.config.default import default_config
from kapply.resources.cluster import Discovery, ResourceType

VERBS = frozenset({"create", "delete", "get", "list", "patch", "update", "watch"})

BUILTIN_TYPES = (
    ResourceType("", "v1", "ConfigMap", "configmaps", True, VERBS),
    ResourceType("", "v1", "Secret", "secrets", True, VERBS),
    ResourceType("", "v1", "Service", "services", True, VERBS),
    ResourceType("", "v1", "Namespace", "namespaces", False, VERBS),
    ResourceType("", "v1", "Pod", "pods", True, VERBS),
    ResourceType("apps", "v1", "Deployment", "deployments", True, VERBS),
    ResourceType("apps", "v1", "ReplicaSet", "replicasets", True, VERBS),
    ResourceType("batch", "v1", "Job", "jobs", True, VERBS),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, VERBS),
    ResourceType("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False, VERBS),
)


@pytest.fixture(scope="session")
def discovery() -> Discovery:
    return Discovery(BUILTIN_TYPES)


@pytest.fixture(scope="session")
def config() -> Config:
    return default_config()


@pytest.fixture(scope="session")
def pki(cluster_script: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA and the certificates hack/cluster.py makes for the local control plane (ca.crt, apiserver.crt/.key, ...),
    for the tests' own TLS servers."""
    path = tmp_path_factory.mktemp("pki")
    cluster_script.make_certs(path)
    return path
