"""How many Deployments per second kapply.matcher compares (no network).

    .venv/bin/python bench/matcher_bench.py [--objects 10000] [--repeat 5]

10,000 distinct Deployments (two containers, env, ports, probes, resources, volumes), each against its live
copy as the API server returns it (server metadata and managedFields, defaults, canonical quantities, the
last-applied annotation, status). Two cases: the desired state is unchanged (the operator's steady state)
and one field changed (an image). Prints the best of `--repeat` runs, for docs/matcher.md.
"""

from __future__ import annotations

import argparse
import copy
import platform
import time

from kapply.matcher import Matcher, annotate


def desired(i: int) -> dict:
    name = f"app-{i}"
    labels = {"app": name, "tier": "web"}
    probe = {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": f"team-{i % 50}", "labels": labels, "annotations": {"owner": "team"}},
        "spec": {
            "replicas": 1 + i % 3,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": "app",
                    "containers": [
                        {
                            "name": "app",
                            "image": f"registry.invalid/{name}:1.{i % 7}",
                            "args": ["--port=8080", "--log-level=info"],
                            "env": [
                                {"name": "MODE", "value": "production"},
                                {"name": "REPLICA", "value": str(i)},
                                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                            ],
                            "ports": [
                                {"name": "http", "containerPort": 8080},
                                {"name": "metrics", "containerPort": 9090},
                            ],
                            "readinessProbe": probe,
                            "livenessProbe": probe,
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "128Mi"},
                                "limits": {"cpu": "1000m", "memory": "1024Mi"},
                            },
                            "volumeMounts": [
                                {"name": "config", "mountPath": "/etc/app"},
                                {"name": "cache", "mountPath": "/cache"},
                            ],
                        },
                        {
                            "name": "proxy",
                            "image": "registry.invalid/proxy:2",
                            "ports": [{"name": "proxy", "containerPort": 15001}],
                            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                        },
                    ],
                    "volumes": [{"name": "config", "configMap": {"name": name}}, {"name": "cache", "emptyDir": {}}],
                },
            },
        },
    }


def served(obj: dict, i: int) -> dict:
    """The object as the API server returns it after creating it from `annotate(obj)`."""
    live = copy.deepcopy(annotate(obj))
    meta = live["metadata"]
    meta.update(
        uid=f"5f0c{i:08x}-0000-4000-8000-000000000000",
        resourceVersion=str(100000 + i),
        generation=1,
        creationTimestamp="2026-01-01T00:00:00Z",
    )
    meta["annotations"]["deployment.kubernetes.io/revision"] = "1"
    meta["managedFields"] = [
        {
            "manager": "operator",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "2026-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {"f:app": {}, "f:tier": {}}},
                "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {}}},
            },
        },
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "2026-01-01T00:00:01Z",
            "fieldsType": "FieldsV1",
            "subresource": "status",
            "fieldsV1": {"f:status": {"f:replicas": {}, "f:conditions": {}}},
        },
    ]
    spec = live["spec"]
    spec.update(revisionHistoryLimit=10, progressDeadlineSeconds=600)
    pod = spec["template"]["spec"]
    pod.update(
        restartPolicy="Always",
        terminationGracePeriodSeconds=30,
        dnsPolicy="ClusterFirst",
        securityContext={},
        schedulerName="default-scheduler",
        serviceAccount="app",
    )
    pod["volumes"][0]["configMap"]["defaultMode"] = 420
    for c in pod["containers"]:
        c.update(
            terminationMessagePath="/dev/termination-log",
            terminationMessagePolicy="File",
            imagePullPolicy="IfNotPresent",
        )
        for p in c["ports"]:
            p["protocol"] = "TCP"
        for probe in (c.get("readinessProbe"), c.get("livenessProbe")):
            if probe:
                probe.update(timeoutSeconds=1, successThreshold=1, failureThreshold=3)
                probe["httpGet"]["scheme"] = "HTTP"
        limits = c["resources"].get("limits")
        if limits:
            limits.update(cpu="1", memory="1Gi")
    live["status"] = {
        "observedGeneration": 1,
        "replicas": spec["replicas"],
        "readyReplicas": spec["replicas"],
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "reason": "MinimumReplicasAvailable",
                "lastUpdateTime": "2026-01-01T00:00:01Z",
            }
        ],
    }
    return live


def changed(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    obj["spec"]["template"]["spec"]["containers"][0]["image"] += "-next"
    return obj


def best_rate(matcher: Matcher, pairs: list[tuple[dict, dict]], repeat: int, *, expect_empty: bool) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for current, want in pairs:
            result = matcher.calculate(current, want)
        best = min(best, time.perf_counter() - start)
        assert result.is_empty is expect_empty
    return len(pairs) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    wanted = [desired(i) for i in range(args.objects)]
    live = [served(obj, i) for i, obj in enumerate(wanted)]
    matcher = Matcher()
    unchanged = best_rate(matcher, list(zip(live, wanted, strict=True)), args.repeat, expect_empty=True)
    one_field = best_rate(matcher, list(zip(live, map(changed, wanted), strict=True)), args.repeat, expect_empty=False)
    print(
        f"Python {platform.python_version()} on {platform.machine()}, {args.objects} Deployments, best of {args.repeat}"
    )
    print("| desired state | Deployments compared per second | per object |")
    print("|---|---|---|")
    for case, rate in (("unchanged", unchanged), ("one field changed", one_field)):
        print(f"| {case} | {rate:,.0f} | {1e6 / rate:.0f} µs |")


if __name__ == "__main__":
    main()
