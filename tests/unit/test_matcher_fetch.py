"""Fetching a cluster's schemas through any client, offline: a fake API server's OpenAPI v3 endpoints behind sync
and async functions and objects; the sync helper inside and outside an event loop; kinds fetched on first use."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import logging
import threading

import orjson
import pytest

from kapply.matcher import Matcher, Schema, annotate, fetch_schema, fetch_schema_sync
from tests.unit.test_matcher_schema import BUILTIN_DOC, CRD_DOC, as_openapi_v2

BUILTIN_GV = "apis/demo.k8s.io/v1"
CRD_GV = "apis/example.com/v1"
KINDS = [("demo.k8s.io/v1", "Gadget"), ("example.com/v1", "Widget")]


class FakeServer:
    """The OpenAPI v3 index and a document per group-version, as `GET /openapi/v3[/<group-version>]` answer."""

    def __init__(self, documents: dict[str, dict]) -> None:
        self.documents = dict(documents)
        self.requests: list[str] = []
        self.down = False

    def url(self, group_version: str) -> str:
        digest = hashlib.sha256(orjson.dumps(self.documents[group_version])).hexdigest()[:16]
        return f"/openapi/v3/{group_version}?hash={digest}"

    def get(self, path: str) -> dict:
        self.requests.append(path)
        if self.down:
            raise ConnectionError("connection refused")
        if path == "/openapi/v3":
            return {"paths": {gv: {"serverRelativeURL": self.url(gv)} for gv in self.documents}}
        return self.documents[path.removeprefix("/openapi/v3/").partition("?")[0]]


class AsyncFakeServer:
    def __init__(self, server: FakeServer) -> None:
        self.server = server

    async def get(self, path: str) -> dict:
        await asyncio.sleep(0)
        return self.server.get(path)


def widget(*parts: str) -> dict:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"parts": [{"name": name} for name in parts]},
    }


def reordered(desired: dict) -> dict:
    """The live object, its keyed list in another order: no difference only if the schema knows the list's key."""
    current = copy.deepcopy(annotate(desired))
    current["spec"]["parts"].reverse()
    return current


def test_every_kind_of_source_gives_the_cluster_schema() -> None:
    server = FakeServer({BUILTIN_GV: BUILTIN_DOC, CRD_GV: CRD_DOC})

    async def async_get(path: str) -> dict:
        return server.get(path)

    async def fetch_all() -> list[Schema]:
        sources = [server, server.get, AsyncFakeServer(server), async_get, lambda path: async_get(path)]
        return [await fetch_schema(source) for source in sources]

    for schema in asyncio.run(fetch_all()):
        assert schema.kinds() == KINDS
        assert Matcher(schema).calculate(reordered(widget("a", "b")), widget("a", "b")).is_empty
    assert fetch_schema_sync(server).kinds() == KINDS


def test_openapi_documents_are_sources_themselves() -> None:
    assert asyncio.run(fetch_schema(as_openapi_v2(BUILTIN_DOC, CRD_DOC))).kinds() == KINDS
    assert fetch_schema_sync(CRD_DOC).kinds() == [("example.com/v1", "Widget")]


def test_a_source_that_cannot_get_a_path_is_refused() -> None:
    with pytest.raises(TypeError, match="no get"):
        fetch_schema_sync(object())  # type: ignore[arg-type]


def test_sync_fetch_runs_on_this_thread_or_on_a_worker_thread_when_this_thread_runs_an_event_loop() -> None:
    server = FakeServer({BUILTIN_GV: BUILTIN_DOC})
    loops_on: list[threading.Thread] = []

    async def get(path: str) -> dict:
        loops_on.append(threading.current_thread())
        return server.get(path)

    assert fetch_schema_sync(get).kinds() == KINDS[:1]
    assert set(loops_on) == {threading.current_thread()}

    async def handler() -> Schema:  # an async handler calling sync code, which calls the sync helper
        return fetch_schema_sync(get)

    loops_on.clear()
    assert asyncio.run(handler()).kinds() == KINDS[:1]
    assert len(set(loops_on)) == 1 and loops_on[0] is not threading.current_thread()


def test_a_kind_created_since_is_fetched_on_first_use_with_only_its_group_version() -> None:
    server = FakeServer({BUILTIN_GV: BUILTIN_DOC})
    matcher = Matcher(fetch_schema_sync(server))
    server.documents[CRD_GV] = CRD_DOC  # a CRD created after the matcher was built
    server.requests.clear()

    assert matcher.calculate(reordered(widget("a", "b")), widget("a", "b")).is_empty
    assert server.requests == ["/openapi/v3", server.url(CRD_GV)]
    assert matcher.schema.kinds() == KINDS
    server.requests.clear()
    assert matcher.calculate(reordered(widget("c", "d")), widget("c", "d")).is_empty
    assert server.requests == []


def test_a_kind_that_stays_unknown_is_looked_for_at_most_once_per_interval() -> None:
    server = FakeServer({BUILTIN_GV: BUILTIN_DOC})
    for interval, index_requests in ((60, 1), (0, 3), (None, 0)):
        matcher = Matcher(fetch_schema_sync(server, refresh_interval=interval))
        server.requests.clear()
        for _ in range(3):
            assert not matcher.calculate(reordered(widget("a", "b")), widget("a", "b")).is_empty
        assert server.requests == ["/openapi/v3"] * index_requests


def test_an_async_client_whose_loop_is_running_refreshes_on_that_loop_in_the_background() -> None:
    server = FakeServer({BUILTIN_GV: BUILTIN_DOC})

    async def operator() -> tuple[bool, bool]:
        matcher = Matcher(await fetch_schema(AsyncFakeServer(server)))
        server.documents[CRD_GV] = CRD_DOC
        before = matcher.calculate(reordered(widget("a", "b")), widget("a", "b")).is_empty
        for _ in range(10):  # the refresh's requests, each a turn of the loop
            await asyncio.sleep(0)
        return before, matcher.calculate(reordered(widget("a", "b")), widget("a", "b")).is_empty

    assert asyncio.run(operator()) == (False, True)


def test_an_async_client_without_its_loop_refreshes_on_a_loop_of_its_own() -> None:
    server = FakeServer({BUILTIN_GV: BUILTIN_DOC})
    matcher = Matcher(fetch_schema_sync(AsyncFakeServer(server)))  # its loop is gone
    server.documents[CRD_GV] = CRD_DOC
    assert matcher.calculate(reordered(widget("a", "b")), widget("a", "b")).is_empty


def test_a_failed_refresh_is_logged_and_the_kind_compared_as_json(caplog: pytest.LogCaptureFixture) -> None:
    server = FakeServer({BUILTIN_GV: BUILTIN_DOC})
    matcher = Matcher(fetch_schema_sync(server))
    server.down = True
    with caplog.at_level(logging.WARNING, logger="kapply.matcher.fetch"):
        result = matcher.calculate(reordered(widget("a", "b")), widget("a", "b"))
    assert result.patch == {"spec": {"parts": [{"name": "a"}, {"name": "b"}]}}
    assert "Refreshing the matcher's schema failed: connection refused" in caplog.text
