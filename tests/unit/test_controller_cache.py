"""The controller's watch-fed cache (controller/cache.py): a store applies a watch's events in order, a relist (after
410 Gone) replaces it, bookmarks only move its version, deletes leave nothing behind and its memory is the JSON of the
objects it holds; the Apps' store never goes back to an older App; and an App's client answers from the cache only
while planning, only what the App's account was allowed to read, and remembers only cluster-wide refusals. No
cluster: the client's requests go to an in-memory stand-in of the API server."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import orjson
import pytest

from kapply.controller.cache import (
    RECORD_SELECTOR,
    AppStore,
    Cache,
    CachedCluster,
    Store,
    app_label_value,
    cached_reads,
)
from kapply.errors import ClusterError
from kapply.objects import APP_LABEL, IS_APP_LABEL, Obj
from kapply.resources.cluster import Cluster, ResourceType
from kapply.resources.kubeconfig import KubeconfigFlags, load

T = TypeVar("T")
VERBS = frozenset({"get", "list", "watch"})
CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True, VERBS)
SECRETS = ResourceType("", "v1", "Secret", "secrets", True, VERBS)
SELECTOR = f"{APP_LABEL}=web"


def run(test: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(test())  # type: ignore[arg-type]


def cm(name: str, *, value: str = "web", namespace: str = "team", version: str = "1", data: str = "x") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "resourceVersion": version,
            "labels": {APP_LABEL: value},
        },
        "data": {"key": data},
    }


def names(objs: list[Obj]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


# A store.


def test_events_are_applied_in_order() -> None:
    store = Store(APP_LABEL)
    store.replace([cm("a")], "10")
    store.apply("ADDED", cm("b", version="11"))
    store.apply("MODIFIED", cm("a", version="12", data="y"))
    store.apply("MODIFIED", cm("a", version="13", data="z"))
    store.apply("DELETED", cm("b", version="14"))
    assert [(o["metadata"]["name"], o["data"]["key"]) for o in store.select("web", "team")] == [("a", "z")]
    assert store.version == "14"


def test_select_gives_the_objects_of_one_label_value_and_namespace_as_fresh_copies() -> None:
    store = Store(APP_LABEL)
    store.replace([cm("a"), cm("b", namespace="other"), cm("c", value="api")], "10")
    assert names(store.select("web", None)) == ["a", "b"]
    assert names(store.select("web", "team")) == ["a"]
    assert store.select("nobody", None) == []
    mine = store.select("web", "team")[0]
    mine["data"]["key"] = "changed by the pipeline"
    assert store.select("web", "team")[0]["data"]["key"] == "x"


def test_a_relist_replaces_the_store_and_says_what_went() -> None:
    store = Store(APP_LABEL)
    store.replace([cm("kept"), cm("gone")], "10")
    store.apply("MODIFIED", cm("kept", version="11", data="y"))
    gone = store.replace([cm("kept", version="20", data="z"), cm("new", version="19")], "20")
    assert gone == {"uid-team-gone"}
    assert sorted((o["metadata"]["name"], o["data"]["key"]) for o in store.select("web", None)) == [
        ("kept", "z"),
        ("new", "x"),
    ]
    assert store.version == "20" and store.synced


def test_a_bookmark_moves_the_version_only() -> None:
    store = Store(APP_LABEL)
    store.replace([cm("a")], "10")
    store.apply("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": "99"}})
    assert store.version == "99"
    assert names(store.select("web", None)) == ["a"] and len(store) == 1


def test_a_deleted_object_leaves_nothing_behind() -> None:
    store = Store(APP_LABEL)
    store.replace([cm("a"), cm("b")], "10")
    store.apply("DELETED", cm("a", version="11"))
    store.apply("DELETED", cm("b", version="12"))
    store.apply("DELETED", cm("never-seen", version="13"))
    assert len(store) == 0 and store.size == 0
    assert store._by_value == {} and store._by_name == {}


def test_an_object_whose_label_value_changes_moves_to_its_new_value() -> None:
    store = Store(APP_LABEL)
    store.replace([cm("a")], "10")
    store.apply("MODIFIED", cm("a", value="api", version="11"))
    assert store.select("web", None) == [] and names(store.select("api", None)) == ["a"]
    assert store._by_value.keys() == {"api"}


def test_versions_are_read_without_decoding() -> None:
    store = Store(APP_LABEL)
    store.replace([cm("a", version="3"), cm("b", namespace="other", version="4")], "10")
    assert store.versions("web", "team") == {("uid-team-a", "3")}
    assert store.versions("web", None) == {("uid-team-a", "3"), ("uid-other-b", "4")}


def test_the_memory_of_a_store_is_the_json_of_the_objects_it_holds_once_each() -> None:
    store = Store(APP_LABEL)
    objects = [cm(f"cm-{i}", value=f"app-{i % 10}") for i in range(1_000)]
    store.replace(objects, "10")
    assert store.size == sum(len(orjson.dumps(o)) for o in objects)
    one = cm("cm-0", value="app-0", version="11", data="y")
    for version in range(12, 112):  # a hundred updates of one object keep one copy of it
        store.apply("MODIFIED", {**one, "metadata": {**one["metadata"], "resourceVersion": str(version)}})
    assert len(store) == 1_000
    assert store.size == sum(len(orjson.dumps(o)) for o in objects[1:]) + len(
        orjson.dumps({**one, "metadata": {**one["metadata"], "resourceVersion": "111"}})
    )


def test_the_record_store_finds_records_by_namespace_and_name() -> None:
    store = Store(RECORD_SELECTOR)
    record = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "web.app", "namespace": "team", "uid": "r", "labels": {IS_APP_LABEL: ""}},
    }
    store.replace([record], "10")
    assert store.named("team", "web.app") == record
    assert store.named("team", "web.app.apps.k14s.io") is None
    store.apply("DELETED", record)
    assert store.named("team", "web.app") is None


# The Apps.


def app(version: str, generation: int = 1, uid: str = "u1") -> Obj:
    meta = {"name": "web", "namespace": "team", "uid": uid, "resourceVersion": version, "generation": generation}
    return {"apiVersion": "kapply.dev/v1alpha1", "kind": "App", "metadata": meta, "spec": {}}


def test_the_app_store_gives_fresh_copies_and_forgets() -> None:
    apps = AppStore()
    apps.put(app("5"))
    got = apps.get(("team", "web"))
    assert got == app("5")
    assert got is not None
    got["metadata"]["resourceVersion"] = "6"  # the reconcile keeps its copy current
    assert apps.get(("team", "web")) == app("5")
    apps.forget(("team", "web"))
    assert apps.get(("team", "web")) is None


def test_the_app_store_never_goes_back_to_an_older_version_of_one_app() -> None:
    apps = AppStore()
    apps.put(app("7", generation=3))
    apps.put(app("6", generation=2))  # an event the list already showed, replayed
    assert apps.get(("team", "web")) == app("7", generation=3)
    apps.put(app("2", generation=1, uid="u2"))  # the App deleted and made anew: another uid
    assert apps.get(("team", "web")) == app("2", generation=1, uid="u2")


# What the cache answers.


def synced(cache: Cache, rtype: ResourceType, namespace: str | None, *objs: Obj) -> None:
    cache.store(rtype, namespace, APP_LABEL).replace(list(objs), "10")


def test_only_a_list_by_an_app_label_is_answered() -> None:
    assert app_label_value(SELECTOR) == "web"
    for selector in (None, "", APP_LABEL, f"{APP_LABEL}=web,tier=db", f"{APP_LABEL}!=web", "other=web", "a=b"):
        assert app_label_value(selector) is None, selector


def test_a_store_answers_only_once_synced() -> None:
    cache = Cache()
    store = cache.store(CONFIGMAPS, None, APP_LABEL)
    assert cache.labeled(CONFIGMAPS, SELECTOR, "team") is None
    store.replace([cm("a")], "10")
    assert names(cache.labeled(CONFIGMAPS, SELECTOR, "team") or []) == ["a"]
    store.synced = False  # a watch that failed and has not shown it follows again
    assert cache.labeled(CONFIGMAPS, SELECTOR, "team") is None


def test_a_store_of_one_namespace_answers_only_for_it() -> None:
    cache = Cache()
    synced(cache, SECRETS, "team", cm("a"))
    assert cache.labeled(SECRETS, SELECTOR, "team") is not None
    assert cache.labeled(SECRETS, SELECTOR, "other") is None
    assert cache.labeled(SECRETS, SELECTOR, None) is None  # a cluster-wide LIST would see more


def test_a_record_is_known_only_from_a_synced_record_store() -> None:
    cache = Cache()
    assert cache.record(CONFIGMAPS, "team", "web.app") == (False, None)
    cache.store(CONFIGMAPS, None, RECORD_SELECTOR).replace([], "10")
    assert cache.record(CONFIGMAPS, "team", "web.app") == (True, None)
    assert cache.record(SECRETS, "team", "web.app") == (False, None)
    assert cache.stats() == (1, 0, 0, 0)


# An App's client.


class Server:
    """The API server as an App's token sees it: `forbidden` (verb, plural, namespace or None) answer 403, everything
    else answers from `objects`; every request is logged as (verb, plural, namespace)."""

    def __init__(self, *objs: Obj) -> None:
        self.objects = list(objs)
        self.forbidden: set[tuple[str, str, str | None]] = set()
        self.unauthorized = False
        self.log: list[tuple[str, str, str | None]] = []

    async def __call__(self, method: str, path: str, **kwargs: Any) -> Any:
        parts = path.split("/")
        rest = parts[3:] if parts[1] == "api" else parts[4:]
        namespace = None
        if rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        plural, name = rest[0], rest[1] if len(rest) > 1 else None
        verb = "get" if name else "list"
        self.log.append((verb, plural, namespace))
        if self.unauthorized:
            raise ClusterError("API server says: Unauthorized", status=401)
        if (verb, plural, namespace) in self.forbidden:
            raise ClusterError(f"API server says: {plural} is forbidden", status=403, reason="Forbidden")
        found = [
            copy.deepcopy(o)
            for o in self.objects
            if namespace in (None, o["metadata"]["namespace"]) and name in (None, o["metadata"]["name"])
        ]
        if name is not None:
            if not found:
                raise ClusterError("API server says: not found", status=404)
            return found[0]
        return {"metadata": {}, "items": found}


def client(monkeypatch: pytest.MonkeyPatch, server: Server, cache: Cache, refused: list[str]) -> CachedCluster:
    async def request(cluster: Cluster, method: str, path: str, **kwargs: Any) -> Any:
        return await server(method, path, **kwargs)

    monkeypatch.setattr(Cluster, "request", request)
    kubeconfig = orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "team"}}],
            "current-context": "x",
        }
    ).decode()
    return CachedCluster(load(KubeconfigFlags(yaml=kubeconfig)), cache, lambda: refused.append("token"))


def test_reads_go_to_the_api_server_until_the_token_was_allowed_them_then_come_from_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def test() -> None:
        cache = Cache()
        synced(cache, CONFIGMAPS, None, cm("a"), cm("elsewhere", namespace="other"))
        server = Server(cm("a"))
        cluster = client(monkeypatch, server, cache, [])
        with cached_reads() as reads:
            assert names(await cluster.list(CONFIGMAPS, label_selector=SELECTOR, namespace="team")) == ["a"]
            assert names(await cluster.list(CONFIGMAPS, label_selector=SELECTOR, namespace="team")) == ["a"]
            assert names(await cluster.list(CONFIGMAPS, label_selector=SELECTOR)) == ["a"]
            assert names(await cluster.list(CONFIGMAPS, label_selector=SELECTOR)) == ["a", "elsewhere"]
        assert server.log == [("list", "configmaps", "team"), ("list", "configmaps", None)]
        assert (reads.asked, reads.served) == (2, 2)
        assert names(await cluster.list(CONFIGMAPS, label_selector=SELECTOR, namespace="team")) == ["a"]
        assert len(server.log) == 3  # outside cached_reads (a deploy's run): always the API server

    run(test)


def test_an_account_refused_a_type_never_reads_it_through_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller's watch keeps the App's Secrets, but the App's account may not list Secrets: every planning
    asks the API server, which refuses, and the cache is never read."""

    async def test() -> None:
        cache = Cache()
        synced(cache, SECRETS, None, cm("planted"))
        server = Server()
        server.forbidden = {("list", "secrets", "team"), ("list", "secrets", None)}
        cluster = client(monkeypatch, server, cache, [])
        for _ in range(3):
            with cached_reads() as reads:
                for namespace in (None, "team"):
                    with pytest.raises(ClusterError) as e:
                        await cluster.list(SECRETS, label_selector=SELECTOR, namespace=namespace)
                    assert e.value.status == 403
            assert reads.served == 0
        # The cluster-wide refusal is asked once and remembered; the namespace's is asked every time (rights given
        # later count at once).
        assert server.log == [("list", "secrets", None)] + [("list", "secrets", "team")] * 3

    run(test)


def test_a_record_is_read_from_the_cache_once_the_token_may_get_configmaps_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def test() -> None:
        cache = Cache()
        record = {**cm("web.app"), "metadata": {**cm("web.app")["metadata"], "labels": {IS_APP_LABEL: ""}}}
        cache.store(CONFIGMAPS, None, RECORD_SELECTOR).replace([record], "10")
        server = Server(record)
        cluster = client(monkeypatch, server, cache, [])
        with cached_reads():
            assert await cluster.get(CONFIGMAPS, "team", "web.app.apps.k14s.io") is None  # a 404: allowed
            assert await cluster.get(CONFIGMAPS, "team", "web.app") == record
            assert await cluster.get(CONFIGMAPS, "team", "nothing") is None
            assert await cluster.get(CONFIGMAPS, "other", "web.app") is None  # another namespace: asked
        assert server.log == [("get", "configmaps", "team"), ("get", "configmaps", "other")]

    run(test)


def test_a_get_refused_is_not_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    async def test() -> None:
        cache = Cache()
        cache.store(CONFIGMAPS, None, RECORD_SELECTOR).replace([], "10")
        server = Server()
        server.forbidden = {("get", "configmaps", "team")}
        cluster = client(monkeypatch, server, cache, [])
        for _ in range(2):
            with cached_reads(), pytest.raises(ClusterError):
                await cluster.get(CONFIGMAPS, "team", "web.app")
        server.forbidden.clear()  # the Role is given back
        with cached_reads():
            assert await cluster.get(CONFIGMAPS, "team", "web.app") is None
            assert await cluster.get(CONFIGMAPS, "team", "web.app") is None
        assert len(server.log) == 3

    run(test)


def test_a_token_the_api_server_no_longer_takes_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    async def test() -> None:
        refused: list[str] = []
        server = Server()
        server.unauthorized = True
        cluster = client(monkeypatch, server, Cache(), refused)
        with pytest.raises(ClusterError):
            await cluster.get(CONFIGMAPS, "team", "web.app")
        assert refused == ["token"]

    run(test)


def test_a_requests_options_reach_the_api_server_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[dict[str, Any]] = []

    async def request(cluster: Cluster, method: str, path: str, **options: Any) -> Any:
        sent.append(options)

    cluster = client(monkeypatch, Server(), Cache(), [])
    monkeypatch.setattr(Cluster, "request", request)
    body = {"metadata": {"name": "a"}}
    run(lambda: cluster.request("PATCH", "/api/v1/x", params={"dryRun": "All"}, body=body, content_type="x/y"))
    run(lambda: cluster.request("GET", "/api", accept="application/yaml"))
    assert sent == [{"params": {"dryRun": "All"}, "body": body, "content_type": "x/y"}, {"accept": "application/yaml"}]


def test_what_a_planning_read_from_the_cache_is_unchanged_until_a_version_it_saw_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What makes a quiet plan (deploy.Quiet) hold at the next sync: the versions of everything it read."""

    async def test() -> None:
        cache = Cache()
        synced(cache, CONFIGMAPS, None, cm("a"), cm("b", value="api"))
        record = {**cm("web.app"), "metadata": {**cm("web.app")["metadata"], "labels": {IS_APP_LABEL: ""}}}
        records = cache.store(CONFIGMAPS, None, RECORD_SELECTOR)
        records.replace([record], "10")
        cluster = client(monkeypatch, Server(cm("a"), record), cache, [])
        await cluster.list(CONFIGMAPS, label_selector=SELECTOR, namespace="team")  # rights learned
        await cluster.get(CONFIGMAPS, "team", "web.app")
        with cached_reads() as reads:
            await cluster.get(CONFIGMAPS, "team", "web.app.apps.k14s.io")
            await cluster.get(CONFIGMAPS, "team", "web.app")
            await cluster.list(CONFIGMAPS, label_selector=SELECTOR, namespace="team")
        assert reads.asked == 0 and reads.served == 3
        store = cache.store(CONFIGMAPS, None, APP_LABEL)
        assert cache.unchanged(reads.seen)
        store.apply("MODIFIED", cm("b", value="api", version="11"))  # another app's object
        assert cache.unchanged(reads.seen)
        store.apply("MODIFIED", cm("a", version="12"))
        assert not cache.unchanged(reads.seen)
        store.apply("MODIFIED", cm("a", version="1"))
        assert cache.unchanged(reads.seen)
        store.apply("ADDED", cm("c", version="13"))  # a new object of the app
        assert not cache.unchanged(reads.seen)
        store.apply("DELETED", cm("c", version="14"))
        records.apply("MODIFIED", {**record, "metadata": {**record["metadata"], "resourceVersion": "15"}})
        assert not cache.unchanged(reads.seen)  # the record moved
        records.apply("MODIFIED", record)
        assert cache.unchanged(reads.seen)
        store.synced = False
        assert not cache.unchanged(reads.seen)  # a store that serves nothing cannot say

    run(test)
