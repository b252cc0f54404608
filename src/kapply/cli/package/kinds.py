"""The resource types the package commands read and write, besides the packaging ones (kapply.packaging.store)."""

from __future__ import annotations

from kapply.resources.cluster import ResourceType

_VERBS = frozenset({"get", "list", "create", "update", "patch", "delete"})
RBAC = "rbac.authorization.k8s.io"

NAMESPACES = ResourceType("", "v1", "Namespace", "namespaces", False, _VERBS)
SECRETS = ResourceType("", "v1", "Secret", "secrets", True, _VERBS)
SERVICE_ACCOUNTS = ResourceType("", "v1", "ServiceAccount", "serviceaccounts", True, _VERBS)
CLUSTER_ROLES = ResourceType(RBAC, "v1", "ClusterRole", "clusterroles", False, _VERBS)
CLUSTER_ROLE_BINDINGS = ResourceType(RBAC, "v1", "ClusterRoleBinding", "clusterrolebindings", False, _VERBS)
