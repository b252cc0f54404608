"""What a resource is: its unique key and the description kapp prints for it."""

from __future__ import annotations

from dataclasses import dataclass


def api_group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


@dataclass(frozen=True, slots=True, order=True)
class ResourceKey:
    """kapp's unique key, `<ns>/<group>/<kind>/<name>`: the API version is not part of it."""

    namespace: str
    group: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.group}/{self.kind}/{self.name}"


def key_of(obj: dict) -> ResourceKey:
    meta = obj.get("metadata") or {}
    return ResourceKey(meta.get("namespace") or "", api_group(obj.get("apiVersion", "")), obj.get("kind", ""),
                       meta.get("name") or f"{meta.get('generateName', '')}*")


def describe(obj: dict) -> str:
    """`deployment/web (apps/v1) namespace: ns`, or `... cluster` for cluster-scoped resources."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or f"{meta.get('generateName', '')}*"
    where = f"namespace: {meta['namespace']}" if meta.get("namespace") else "cluster"
    return f"{obj.get('kind', '').lower()}/{name} ({obj.get('apiVersion', '')}) {where}"
