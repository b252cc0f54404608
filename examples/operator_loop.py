"""A minimal operator reconcile loop that uses kapply.matcher to skip needless updates.

    KUBECONFIG=~/.kube/config python examples/operator_loop.py NAMESPACE [--iterations 100] [--assert-no-updates]

Every iteration builds the desired Deployment, Service and ConfigMap from scratch, as operators do, and
reads each live object. A missing object is created with its last-applied annotation; an existing one is
patched only when the matcher finds a difference, and the patch records the new last-applied state.
The first pass creates what is missing; then it prints how many updates the iterations made (none, while
the desired state does not change: server defaults, allocated fields and controller writes are no reason).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter

from kapply.matcher import Matcher, fetch_schema
from kapply.resources.cluster import Cluster
from kapply.resources.kubeconfig import KubeconfigFlags, load

APP = "hello"


def desired_state(namespace: str) -> list[dict]:
    labels = {"app": APP}
    meta = {"name": APP, "namespace": namespace, "labels": labels}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"greeting": "hello", "level": "info"}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {"selector": labels, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": "registry.invalid/hello:1",
                                "ports": [{"name": "http", "containerPort": 8080}],
                                "envFrom": [{"configMapRef": {"name": APP}}],
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "64Mi"},
                                    "limits": {"cpu": "1000m"},
                                },
                            }
                        ]
                    },
                },
            },
        },
    ]


async def reconcile(cluster: Cluster, matcher: Matcher, desired: dict) -> str:
    """Make one object hold its desired state; say what that took."""
    rtype = (await cluster.discovery()).find(desired["apiVersion"], desired["kind"])
    meta = desired["metadata"]
    current = await cluster.get(rtype, meta["namespace"], meta["name"])
    if current is None:
        # Annotate the object exactly as later loops build it: what the annotation holds is the baseline.
        await cluster.create(rtype, matcher.annotate(desired))
        return "created"
    result = matcher.calculate(current, desired, record=True)
    if result.is_empty:
        return "unchanged"
    print(f"updating {desired['kind']} {meta['name']}: {result.patch}")
    await cluster.patch(rtype, meta["namespace"], meta["name"], result.patch, result.patch_type)
    return "updated"


async def run(namespace: str, iterations: int, interval: float) -> tuple[Counter, Counter]:
    async with Cluster(load(KubeconfigFlags())) as cluster:
        matcher = Matcher(await fetch_schema(cluster))
        namespaces = (await cluster.discovery()).find("v1", "Namespace")
        if await cluster.get(namespaces, None, namespace) is None:
            await cluster.create(namespaces, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        first = Counter([await reconcile(cluster, matcher, obj) for obj in desired_state(namespace)])
        later: Counter = Counter()
        for _ in range(iterations):
            await asyncio.sleep(interval)  # controllers write status and annotations in between
            later.update(await asyncio.gather(*(reconcile(cluster, matcher, obj) for obj in desired_state(namespace))))
        return first, later


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("namespace")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between iterations")
    parser.add_argument(
        "--assert-no-updates",
        action="store_true",
        help="exit 1 if the iterations after the first pass updated anything",
    )
    args = parser.parse_args(argv)
    first, later = asyncio.run(run(args.namespace, args.iterations, args.interval))
    print(f"first pass: created {first['created']}, updated {first['updated']}")
    print(f"updated {later['updated']} in {args.iterations} iterations ({later['unchanged']} objects unchanged)")
    return 1 if args.assert_no_updates and later["updated"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
