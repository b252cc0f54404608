"""Objects as the API server and controllers write them, for the waiters' tests."""


def obj(api_version, kind, name="x", namespace="default", *, generation=1, annotations=None, **fields):
    metadata = {"name": name, "uid": f"uid-{name}"}
    if namespace:
        metadata["namespace"] = namespace
    if generation is not None:
        metadata["generation"] = generation
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}


def cond(type_, status, reason="", message="", **extra):
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2024-03-28T10:00:00Z",
        **extra,
    }


# A kapp config whose wait rule has a Pod waited on until its Ready condition is True.
POD_READY_RULE = {
    "apiVersion": "kapp.k14s.io/v1alpha1",
    "kind": "Config",
    "waitRules": [
        {
            "conditionMatchers": [{"type": "Ready", "status": "True", "success": True}],
            "resourceMatchers": [{"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "Pod"}}],
        }
    ],
}

MINIMUM = "kapp.k14s.io/apps-v1-deployment-wait-minimum-replicas-available"


REVISION = "deployment.kubernetes.io/revision"


def revisioned_deployment(status, replicas=3, revision="2", annotations=None):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "generation": 2,
            "annotations": {REVISION: revision, **(annotations or {})},
        },
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"observedGeneration": 2, **status},
    }


def replica_set(name, revision, available, generation=1, observed=1, replicas=3):
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "generation": generation,
            "annotations": {REVISION: revision, "deployment.kubernetes.io/desired-replicas": str(replicas)},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": True}],
        },
        "spec": {"replicas": replicas},
        "status": {
            "replicas": replicas,
            "readyReplicas": available,
            "availableReplicas": available,
            "observedGeneration": observed,
        },
    }


def child_pod(name, phase="Running", ready="True", waiting=None):
    status = {
        "phase": phase,
        "conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": ready},
            {"type": "ContainersReady", "status": ready},
            {"type": "PodScheduled", "status": "True"},
        ],
    }
    if waiting:
        status["containerStatuses"] = [{"name": "web", "ready": False, "state": {"waiting": {"reason": waiting}}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"}, "status": status}
