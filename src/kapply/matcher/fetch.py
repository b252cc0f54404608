"""The cluster's own schemas: its OpenAPI v3 documents, fetched once (all group-versions at once over one
HTTP/2 connection) and optionally kept in a file cache.

The cache file is named after the content hashes the server puts in its OpenAPI v3 index, so an upgrade or
a new or changed CRD gives a new file, and a hit costs one small request.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

from kapply.matcher.schema import Schema
from kapply.resources.cluster import Cluster
from kapply.resources.kubeconfig import KubeconfigFlags, load


def _is_group_version(path: str) -> bool:
    parts = path.split("/")
    return (parts[0] == "api" and len(parts) == 2) or (parts[0] == "apis" and len(parts) == 3)


async def fetch_schema(cluster: Cluster, *, cache_dir: Path | None = None) -> Schema:
    """The schemas of every group-version the cluster serves, built-in and custom."""
    index = await cluster.request("GET", "/openapi/v3")
    urls = sorted(
        entry["serverRelativeURL"] for path, entry in (index.get("paths") or {}).items() if _is_group_version(path)
    )
    cache_file = None
    if cache_dir is not None:
        digest = hashlib.sha256("\n".join(urls).encode()).hexdigest()[:32]
        cache_file = Path(cache_dir) / f"openapi-{digest}.json"
        if cache_file.exists():
            return Schema.from_json(cache_file.read_bytes())
    schema = Schema.from_openapi(await asyncio.gather(*(cluster.request("GET", url) for url in urls)))
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        partial = cache_file.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(schema.to_json())
        partial.replace(cache_file)
    return schema


def schema_from_kubeconfig(
    path: str | None = None, *, context: str | None = None, cache_dir: Path | None = None
) -> Schema:
    """`fetch_schema` for the cluster a kubeconfig selects (kapply's precedence: `path`, `$KAPP_KUBECONFIG`,
    `$KUBECONFIG`, `~/.kube/config`). Not for use inside a running event loop: await `fetch_schema` there."""

    async def fetch() -> Schema:
        async with Cluster(load(KubeconfigFlags(path=path, context=context))) as cluster:
            return await fetch_schema(cluster, cache_dir=cache_dir)

    return asyncio.run(fetch())
