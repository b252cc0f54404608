"""The confined cluster client: every request outside its namespace, of a resource it does not allow, for a name it does
not allow, of a subresource or of a whole collection, and every cluster-wide one, is refused before it is sent (the
wrapped client sees nothing), as a 403; what it allows goes to the wrapped client unchanged, and a LIST of a resource
allowed by name only comes back with those names only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest

from kapply.errors import ClusterError
from kapply.resources.cluster import Cluster, Discovery, ResourceType
from kapply.resources.confined import Allowed, Confined, ConfinementError, Scope
from kapply.resources.kubeconfig import KubeconfigFlags, load

KUBECONFIG = orjson.dumps(
    {
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
).decode()
VERBS = frozenset({"get", "list", "watch", "create", "update", "patch", "delete"})
PACKAGES = ResourceType("data.packaging.kapply.dev", "v1alpha1", "Package", "packages", True, VERBS)
CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True, VERBS)
SECRETS = ResourceType("", "v1", "Secret", "secrets", True, VERBS)
NAMESPACES = ResourceType("", "v1", "Namespace", "namespaces", False, VERBS)
SCOPE = Scope(
    "t-evil",
    (
        Allowed("data.packaging.kapply.dev", "packages"),
        Allowed("", "configmaps", frozenset({"evil.pkgr", "evil.pkgr.apps.k14s.io"}), ("evil.pkgr-change-",)),
    ),
)


class Recording(Cluster):
    """A cluster that sends nothing: it records each request it is asked to send and answers `answer`."""

    def __init__(self, answer: Any = None) -> None:
        super().__init__(load(KubeconfigFlags(yaml=KUBECONFIG)))
        self.sent: list[tuple[str, str]] = []
        self.answer = answer

    async def request(self, method: str, path: str, **_: Any) -> Any:
        self.sent.append((method, path))
        return self.answer

    async def discovery(self, refresh: bool = False) -> Discovery:
        self.sent.append(("GET", "/apis"))
        return Discovery((PACKAGES, CONFIGMAPS))

    @asynccontextmanager
    async def stream_lines(
        self, path: str, params: dict[str, str], *, read_timeout: float | None
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        self.sent.append(("WATCH", path))

        async def lines() -> AsyncIterator[bytes]:
            yield b'{"type": "ADDED", "object": {"metadata": {"name": "a"}}}'

        yield lines()


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def item(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "t-evil"}, "data": {"k": name}}


async def watched(cluster: Cluster, rtype: ResourceType, namespace: str | None) -> list[str]:
    return [kind async for kind, _ in cluster.watch(rtype, namespace=namespace)]


REFUSED: dict[str, tuple[Callable[[Cluster], Awaitable[Any]], str]] = {
    # what: (request, the reason the refusal names)
    "a cluster-wide LIST": (lambda c: c.list(PACKAGES), "cluster-wide"),
    "a cluster-wide LIST of an allowed-by-name resource": (lambda c: c.list(CONFIGMAPS), "cluster-wide"),
    "a LIST in another namespace": (lambda c: c.list(PACKAGES, namespace="t-victim"), "in 't-victim'"),
    "a GET in another namespace": (lambda c: c.get(CONFIGMAPS, "t-victim", "evil.pkgr"), "in 't-victim'"),
    "a DELETE in another namespace": (lambda c: c.delete(PACKAGES, "kapply-packaging-global", "p"), "in 'kapply-pa"),
    "a cluster-scoped GET": (lambda c: c.get(NAMESPACES, None, "t-evil"), "cluster-wide"),
    "a cluster-scoped LIST (the nodes)": (lambda c: c.request("GET", "/api/v1/nodes"), "cluster-wide"),
    "the namespace object itself": (lambda c: c.request("GET", "/api/v1/namespaces/t-evil"), "cluster-wide"),
    "a resource the scope does not allow": (lambda c: c.get(SECRETS, "t-evil", "s"), "resource secrets"),
    "a LIST of a resource the scope does not allow": (lambda c: c.list(SECRETS, namespace="t-evil"), "secrets"),
    "a subresource": (
        lambda c: c.request("PUT", "/apis/data.packaging.kapply.dev/v1alpha1/namespaces/t-evil/packages/p/status"),
        "subresource status",
    ),
    "a DELETE of a whole collection": (
        lambda c: c.request("DELETE", "/apis/data.packaging.kapply.dev/v1alpha1/namespaces/t-evil/packages"),
        "DELETE of a whole collection",
    ),
    "a GET of a ConfigMap not the app's": (lambda c: c.get(CONFIGMAPS, "t-evil", "victim"), "configmaps 'victim'"),
    "an update of a ConfigMap not the app's": (
        lambda c: c.update(CONFIGMAPS, item("victim")),
        "configmaps 'victim'",
    ),
    "a DELETE of a ConfigMap not the app's": (lambda c: c.delete(CONFIGMAPS, "t-evil", "other"), "'other'"),
    "a PATCH of a ConfigMap not the app's": (lambda c: c.patch(CONFIGMAPS, "t-evil", "other", []), "'other'"),
    "a create of a ConfigMap not the app's": (lambda c: c.create(CONFIGMAPS, item("other")), "creating 'other'"),
    "a create of a ConfigMap without a name": (
        lambda c: c.create(CONFIGMAPS, {"metadata": {"namespace": "t-evil"}}),
        "creating ''",
    ),
    "a cluster-wide WATCH": (lambda c: watched(c, PACKAGES, None), "cluster-wide"),
    "a WATCH in another namespace": (lambda c: watched(c, PACKAGES, "t-victim"), "in 't-victim'"),
    "a WATCH of an allowed-by-name resource": (lambda c: watched(c, CONFIGMAPS, "t-evil"), "not all allowed"),
    "a WATCH of discovery": (lambda c: c.stream_lines("/apis", {}, read_timeout=1).__aenter__(), "not all allowed"),
    "a path that is not the Kubernetes API": (lambda c: c.request("GET", "/version"), "not a Kubernetes API path"),
    "a write to discovery": (lambda c: c.request("POST", "/apis"), "a write to a discovery path"),
    "another method": (lambda c: c.request("OPTIONS", "/api"), "method OPTIONS"),
    "an escaped way out": (
        lambda c: c.request("GET", "/api/v1/namespaces/t-evil%2F..%2Ft-victim/configmaps"),
        "in 't-",
    ),
}


@pytest.mark.parametrize("what", REFUSED)
def test_a_request_beyond_the_scope_is_refused_before_it_is_sent(what: str) -> None:
    request, why = REFUSED[what]
    inner = Recording(answer={"items": [item("evil.pkgr")]})
    confined = Confined(inner, SCOPE)
    with pytest.raises(ConfinementError) as refused:
        run(request(confined))
    assert inner.sent == []
    assert refused.value.status == 403 and isinstance(refused.value, ClusterError)
    assert why in str(refused.value)
    assert "this work may only reach namespace 't-evil': packages.data.packaging.kapply.dev, configmaps" in str(
        refused.value
    )


def test_what_the_scope_allows_goes_to_the_wrapped_client_unchanged() -> None:
    inner = Recording(answer=item("evil.pkgr"))
    confined = Confined(inner, SCOPE)

    async def allowed() -> None:
        await confined.get(PACKAGES, "t-evil", "p")
        await confined.create(PACKAGES, {"metadata": {"name": "p", "namespace": "t-evil"}})
        await confined.delete(PACKAGES, "t-evil", "p")
        await confined.get(CONFIGMAPS, "t-evil", "evil.pkgr.apps.k14s.io")
        await confined.update(CONFIGMAPS, item("evil.pkgr"))
        await confined.create(CONFIGMAPS, {"metadata": {"generateName": "evil.pkgr-change-", "namespace": "t-evil"}})
        await confined.delete(CONFIGMAPS, "t-evil", "evil.pkgr-change-abcde")
        await confined.request("GET", "/api")
        await confined.request("GET", "/apis/data.packaging.kapply.dev/v1alpha1")
        assert await watched(confined, PACKAGES, "t-evil") == ["ADDED"]

    run(allowed())
    assert inner.sent == [
        ("GET", "/apis/data.packaging.kapply.dev/v1alpha1/namespaces/t-evil/packages/p"),
        ("POST", "/apis/data.packaging.kapply.dev/v1alpha1/namespaces/t-evil/packages"),
        ("DELETE", "/apis/data.packaging.kapply.dev/v1alpha1/namespaces/t-evil/packages/p"),
        ("GET", "/api/v1/namespaces/t-evil/configmaps/evil.pkgr.apps.k14s.io"),
        ("PUT", "/api/v1/namespaces/t-evil/configmaps/evil.pkgr"),
        ("POST", "/api/v1/namespaces/t-evil/configmaps"),
        ("DELETE", "/api/v1/namespaces/t-evil/configmaps/evil.pkgr-change-abcde"),
        ("GET", "/api"),
        ("GET", "/apis/data.packaging.kapply.dev/v1alpha1"),
        ("WATCH", "/apis/data.packaging.kapply.dev/v1alpha1/namespaces/t-evil/packages"),
    ]


def test_a_list_of_a_resource_allowed_by_name_returns_those_names_only() -> None:
    names = ["evil.pkgr", "victim", "evil.pkgr-change-x", "evil.pkgr.apps.k14s.io", "evil.pkgr-changed"]
    inner = Recording(answer={"items": [item(n) for n in names]})
    listed = run(Confined(inner, SCOPE).list(CONFIGMAPS, namespace="t-evil", label_selector="kapp.k14s.io/app=1"))
    assert [i["metadata"]["name"] for i in listed] == ["evil.pkgr", "evil.pkgr-change-x", "evil.pkgr.apps.k14s.io"]
    everything = run(Confined(inner, SCOPE).list(PACKAGES, namespace="t-evil"))
    assert [i["metadata"]["name"] for i in everything] == names  # allowed whatever their names


def test_discovery_is_the_wrapped_clients_and_the_target_has_no_nodes() -> None:
    inner = Recording()
    confined = Confined(inner, SCOPE)
    assert run(confined.discovery()).find("v1", "ConfigMap") == CONFIGMAPS
    assert run(confined.target()) == "Target cluster 'https://127.0.0.1:1'"  # the nodes' LIST was refused, not sent
    assert inner.sent == [("GET", "/apis")]
    assert confined.namespace == "t-evil"


def test_it_opens_no_connection_of_its_own_and_closing_it_closes_nothing() -> None:
    confined = Confined(Recording(), SCOPE)
    with pytest.raises(ConfinementError, match="a connection of its own"):
        confined._session()
    run(confined.close())
    assert confined.inner.sent == []  # type: ignore[attr-defined]


def test_the_scope_describes_itself() -> None:
    assert SCOPE.describe() == (
        "namespace 't-evil': packages.data.packaging.kapply.dev, "
        "configmaps (evil.pkgr, evil.pkgr.apps.k14s.io, evil.pkgr-change-*)"
    )


def test_a_requests_options_reach_the_wrapped_client_as_given() -> None:
    class Options(Recording):
        async def request(self, method: str, path: str, **options: Any) -> Any:
            self.options = options
            return self.answer

    inner = Options()
    body = {"metadata": {"name": "p", "namespace": "t-evil"}}
    path = "/apis/data.packaging.kapply.dev/v1alpha1/namespaces/t-evil/packages/p"
    run(Confined(inner, SCOPE).request("PATCH", path, params={"dryRun": "All"}, body=body, content_type="x/y"))
    assert inner.options == {"params": {"dryRun": "All"}, "body": body, "content_type": "x/y"}
    run(Confined(inner, SCOPE).request("GET", "/api", accept="application/yaml"))
    assert inner.options == {"accept": "application/yaml"}
