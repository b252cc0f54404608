"""Cluster.list_metadata: a LIST answered as a PartialObjectMetadataList (the Accept header asks for it), by labels
and fields, page by page, giving each object's metadata only: what the dashboard's history and the package rollback
read of Secrets, whose data must not reach the process."""

from __future__ import annotations

import asyncio
from typing import Any

from kapply.resources.cluster import METADATA_LIST, Cluster, ResourceType
from tests.unit.cluster_fakes import OFFLINE

SECRETS = ResourceType("", "v1", "Secret", "secrets", True, frozenset({"list"}))


class Paged(Cluster):
    """Two pages of Secrets' metadata, as the API server answers `as=PartialObjectMetadataList`."""

    def __init__(self) -> None:
        super().__init__(OFFLINE)
        self.asked: list[tuple[str, str, dict[str, str], str]] = []

    async def request(self, method: str, path: str, *, params: Any = None, accept: str = "", **_: Any) -> Any:
        self.asked.append((method, path, dict(params or {}), accept))
        more = {"continue": "next"} if "continue" not in params else {}
        name = "two" if "continue" in params else "one"
        item = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": name}}
        return {"kind": "PartialObjectMetadataList", "metadata": more, "items": [item]}


def test_a_metadata_list_asks_for_metadata_only_by_labels_and_fields_page_by_page() -> None:
    cluster = Paged()
    found = asyncio.run(cluster.list_metadata(SECRETS, namespace="ns", label_selector="a=b", field_selector="type=t"))
    assert found == [{"name": "one"}, {"name": "two"}]
    selectors = {"labelSelector": "a=b", "fieldSelector": "type=t"}
    assert [(m, p, {k: v for k, v in q.items() if k in selectors}, a) for m, p, q, a in cluster.asked] == [
        ("GET", "/api/v1/namespaces/ns/secrets", selectors, METADATA_LIST)
    ] * 2
    assert cluster.asked[1][2]["continue"] == "next"
    assert METADATA_LIST == "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
