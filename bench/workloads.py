"""The apps the benchmark deploys, as manifests (pure).

- `mix-N`: N resources, ConfigMaps 80 %, Secrets 10 %, Services 10 % (resource i is a ConfigMap when i % 10 < 8,
  a Secret when it is 8, a Service when it is 9).
- `deploy-N`: N Deployments of one replica; kwok marks their pods Ready, so waiting counts.
- `crd-N`: N custom resources of one CRD (`benchitems.bench.kapply.dev`). The CRD is not part of the app: the harness
  creates it once, before the workload's runs, and deletes it after them, so both tools find the same CRD, already
  established, and the measured deploys contain only the custom resources.

The "10 % changed" variant changes one resource in every ten, rotating through the block of ten (resource i changes
when i % 10 == (i // 10) % 10), so the changed set has the same 80/10/10 mix as the app. What changes is the data:
a ConfigMap's or Secret's `data`, a custom resource's `spec`, a Deployment's pod template (an env var, so a rollout
that waits for the new pod), and for a Service, which has no data, an annotation.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import yaml

try:
    from yaml import CSafeDumper as _Dumper
except ImportError:  # pragma: no cover - PyYAML without libyaml
    from yaml import SafeDumper as _Dumper  # type: ignore[assignment]

NS = "__BENCH_NAMESPACE__"  # replaced by each run's namespace
CR_GROUP = "bench.kapply.dev"
CRD_NAME = f"benchitems.{CR_GROUP}"
KINDS = ("mix", "deploy", "crd")


def changed(i: int) -> bool:
    """Whether resource i is one of the 10 % the change step changes."""
    return i % 10 == (i // 10) % 10


def _payload(i: int) -> str:
    return (f"value-{i:05d}-" * 20)[:200]


def _meta(name: str, i: int) -> dict[str, Any]:
    return {"name": name, "namespace": NS, "labels": {"bench.kapply.dev/index": str(i)}}


def _mix(i: int, rev: str) -> dict[str, Any]:
    position = i % 10
    if position < 8:
        meta = _meta(f"cm-{i:05d}", i)
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"rev": rev, "payload": _payload(i)}}
    if position == 8:
        meta = _meta(f"secret-{i:05d}", i)
        data = {"rev": rev, "payload": _payload(i)}
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": meta,
            "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        }
    meta = _meta(f"svc-{i:05d}", i)
    meta["annotations"] = {"bench.kapply.dev/rev": rev}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "selector": {"app": f"bench-{i:05d}"},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
        },
    }


def _deployment(i: int, rev: str) -> dict[str, Any]:
    meta = _meta(f"deploy-{i:05d}", i)
    labels = {"app": f"bench-{i:05d}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": "app", "image": "registry.invalid/bench:1", "env": [{"name": "REV", "value": rev}]}
                    ]
                },
            },
        },
    }


def _custom(i: int, rev: str) -> dict[str, Any]:
    meta = _meta(f"item-{i:05d}", i)
    return {
        "apiVersion": f"{CR_GROUP}/v1",
        "kind": "BenchItem",
        "metadata": meta,
        "spec": {"index": i, "rev": rev, "data": _payload(i)},
    }


_BUILDERS = {"mix": _mix, "deploy": _deployment, "crd": _custom}


def crd() -> dict[str, Any]:
    """The CRD of the `crd-N` workload (namespaced, structural schema)."""
    spec_schema = {
        "type": "object",
        "properties": {"index": {"type": "integer"}, "rev": {"type": "string"}, "data": {"type": "string"}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME, "labels": {"app.kubernetes.io/managed-by": "kapply-bench"}},
        "spec": {
            "group": CR_GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": "benchitems",
                "singular": "benchitem",
                "kind": "BenchItem",
                "listKind": "BenchItemList",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}},
                }
            ],
        },
    }


@dataclass(frozen=True)
class Workload:
    kind: str  # mix | deploy | crd
    n: int

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.n}"

    @property
    def waits(self) -> bool:
        return self.kind == "deploy"

    def documents(self, *, change: bool = False) -> list[dict[str, Any]]:
        build = _BUILDERS[self.kind]
        return [build(i, "2" if change and changed(i) else "1") for i in range(self.n)]

    def manifest(self, *, change: bool = False) -> str:
        """The app as one multi-document YAML text, with `NS` where the namespace goes (see `for_namespace`)."""
        return yaml.dump_all(self.documents(change=change), Dumper=_Dumper, sort_keys=False, default_flow_style=False)


def for_namespace(manifest: str, namespace: str) -> str:
    return manifest.replace(NS, namespace)


def parse_workloads(sizes: list[int], deployments: list[int], crs: list[int]) -> list[Workload]:
    """The workloads of a run, in the order they run: the mix by size, then Deployments, then custom resources."""
    return (
        [Workload("mix", n) for n in sizes]
        + [Workload("deploy", n) for n in deployments]
        + [Workload("crd", n) for n in crs]
    )
