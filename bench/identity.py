"""Who the measured tools are to the API server, so that their requests can be told from everyone else's.

`apiserver_request_total` counts every client of the API server: kube-controller-manager (endpoints for each
Service, ReplicaSets and Pods for each Deployment, the namespace controller emptying deleted namespaces), the
scheduler, kwok, lease renewals, and any other test running on the same cluster. It has no label for the user. So the
tools run as their own ServiceAccount (bound to cluster-admin, like the admin user), and one API Priority and Fairness
FlowSchema per verb sends that ServiceAccount's requests to the `exempt` priority level, where the admin user's
requests go too (no queuing, no rejection: the same treatment). The API server then counts them in
`apiserver_flowcontrol_dispatched_requests_total{flow_schema="kapply-bench-<verb>"}`: every request of the tools,
by verb, and nothing else. Everything is removed by `teardown`.
"""

from __future__ import annotations

import base64
import contextlib
import json
from pathlib import Path

from bench.kube import Kube, KubeError

NAMESPACE = "kapply-bench"
SERVICE_ACCOUNT = "bench"
PREFIX = "kapply-bench-"  # flow schemas: kapply-bench-<verb>; also the ClusterRoleBinding's name prefix
RESOURCE_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
LABELS = {"app.kubernetes.io/managed-by": "kapply-bench"}
TOKEN_SECONDS = 7 * 24 * 3600  # a full run takes hours; the token only reaches this cluster


def subject(namespace: str, account: str) -> dict[str, object]:
    """A FlowSchema subject naming a ServiceAccount (`account` "*": every one of the namespace)."""
    return {"kind": "ServiceAccount", "serviceAccount": {"name": account, "namespace": namespace}}


def flow_schemas(
    prefix: str = PREFIX,
    subjects: list[dict[str, object]] | None = None,
    labels: dict[str, str] = LABELS,
    precedence: int = 2,
) -> list[dict[str, object]]:
    """One FlowSchema per resource verb, one for non-resource requests (discovery, /version, /openapi) and a
    catch-all (any other verb), all for the bench ServiceAccount only (or `subjects`) and all at the `exempt`
    priority level, named `prefix<verb>`. They match at `precedence` (the catch-all one after): before every default
    schema but `exempt` (1, the only one allowed 1) at 2; a harness counting some of the account's requests apart
    gives those schemas 2 and these 3."""
    subjects = subjects or [subject(NAMESPACE, SERVICE_ACCOUNT)]
    all_resources = {"apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": True}
    rules: dict[str, dict[str, object]] = {
        verb: {"subjects": subjects, "resourceRules": [{"verbs": [verb], **all_resources}]} for verb in RESOURCE_VERBS
    }
    rules["nonresource"] = {"subjects": subjects, "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}
    rules["other"] = {"subjects": subjects, "resourceRules": [{"verbs": ["*"], **all_resources}]}
    return [
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": prefix + suffix, "labels": labels},
            "spec": {
                "priorityLevelConfiguration": {"name": "exempt"},
                "matchingPrecedence": precedence + 1 if suffix == "other" else precedence,  # catch-all last
                "rules": [rule],
            },
        }
        for suffix, rule in rules.items()
    ]


FLOW_SCHEMA_PATH = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/"
BINDINGS_PATH = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/"
BINDING_PATH = BINDINGS_PATH + PREFIX + "cluster-admin"


def apply_flow_schemas(kube: Kube, schemas: list[dict[str, object]]) -> None:
    for schema in schemas:
        kube.apply(FLOW_SCHEMA_PATH + str(schema["metadata"]["name"]), schema)  # type: ignore[index]


def delete_flow_schemas(kube: Kube, schemas: list[dict[str, object]]) -> None:
    for schema in schemas:
        with contextlib.suppress(KubeError):
            kube.delete(FLOW_SCHEMA_PATH + str(schema["metadata"]["name"]))  # type: ignore[index]


def setup(
    kube: Kube,
    kubeconfig_out: Path,
    *,
    namespace: str = NAMESPACE,
    account: str = SERVICE_ACCOUNT,
    prefix: str = PREFIX,
    labels: dict[str, str] = LABELS,
    precedence: int = 2,
) -> Path:
    """Create the ServiceAccount, its binding and the flow schemas (idempotent), and write a kubeconfig that
    authenticates as the ServiceAccount with a fresh token. Returns the kubeconfig's path. The defaults are the
    side-by-side bench's identity; another harness passes its own names so that both can run at once."""
    ns_path = f"/api/v1/namespaces/{namespace}"
    with contextlib.suppress(KubeError):  # still terminating after an earlier run's teardown: wait for it to go
        if kube.json("GET", ns_path).get("metadata", {}).get("deletionTimestamp"):
            kube.wait_gone([ns_path], timeout=120)
    kube.apply(
        ns_path,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}},
    )
    sa_path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}"
    kube.apply(
        sa_path,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}},
    )
    kube.apply(
        BINDINGS_PATH + prefix + "cluster-admin",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": prefix + "cluster-admin", "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
    )
    apply_flow_schemas(kube, flow_schemas(prefix, [subject(namespace, account)], labels, precedence))
    token = kube.json(
        "POST",
        sa_path + "/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS},
        },
    )["status"]["token"]
    cluster: dict[str, object] = {"server": kube.endpoint.server}
    if kube.endpoint.ca_data:
        cluster["certificate-authority-data"] = base64.b64encode(kube.endpoint.ca_data).decode()
    if kube.endpoint.insecure:
        cluster["insecure-skip-tls-verify"] = True
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "bench", "cluster": cluster}],
        "users": [{"name": "bench", "user": {"token": token}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench", "namespace": "default"}}],
        "current-context": "bench",
    }
    kubeconfig_out.touch(mode=0o600)
    kubeconfig_out.write_text(json.dumps(doc, indent=2))
    return kubeconfig_out


def teardown(kube: Kube, *, namespace: str = NAMESPACE, prefix: str = PREFIX) -> None:
    """Remove what `setup` made; tolerant of parts already gone."""
    delete_flow_schemas(kube, flow_schemas(prefix))
    for path in (BINDINGS_PATH + prefix + "cluster-admin", f"/api/v1/namespaces/{namespace}"):
        with contextlib.suppress(KubeError):
            kube.delete(path)
