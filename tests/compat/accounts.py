"""Narrow users for the differential tests: a ServiceAccount given exactly the RBAC rules a test names, in the
namespaces it names, and a kubeconfig that acts as it (a TokenRequest token), for kapp and kapply alike."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from lightkube import Client
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ServiceAccount
from lightkube.resources.rbac_authorization_v1 import Role, RoleBinding


def service_account_kubeconfig(
    kube: Client,
    admin_kubeconfig: Path,
    home: str,
    rules: Sequence[dict[str, Any]],
    namespaces: Sequence[str],
    path: Path,
    name: str = "narrow",
) -> Path:
    """A kubeconfig at `path` acting as ServiceAccount `name` of namespace `home`, which may do what `rules` (RBAC
    PolicyRules) allow in each of `namespaces`, and nothing else; its context's namespace is `home`. Everything is
    made in those namespaces, so it goes when they do."""
    kube.create(ServiceAccount.from_dict({"metadata": {"name": name}}), namespace=home)
    for namespace in namespaces:
        kube.create(Role.from_dict({"metadata": {"name": name}, "rules": list(rules)}), namespace=namespace)
        kube.create(
            RoleBinding.from_dict(
                {
                    "metadata": {"name": name},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                    "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": home}],
                }
            ),
            namespace=namespace,
        )
    request = ServiceAccount.Token(metadata=ObjectMeta(), spec=TokenRequestSpec(audiences=[], expirationSeconds=3600))
    token = kube.create(request, name, namespace=home).status.token
    cluster = yaml.safe_load(admin_kubeconfig.read_text())["clusters"][0]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [cluster],
                "users": [{"name": name, "user": {"token": token}}],
                "contexts": [{"name": name, "context": {"cluster": cluster["name"], "user": name, "namespace": home}}],
                "current-context": name,
            }
        )
    )
    return path
