"""kapply.transport's pipelined GETs against the real kube-apiserver (tests/unit/test_transport_pipelining.py tests
them against a toy server): a burst of GETs goes out on the connections already open, several requests on each
before its first answer, and every answer is the object its request asked for."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from bench.delay_proxy import Chunk, DelayProxy, critical_path
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap

from kapply.resources.cluster import CONNECTIONS, ResourceType
from kapply.resources.cluster import Cluster as KapplyCluster
from kapply.resources.kubeconfig import KubeconfigFlags, KubeContext, load
from tests.e2e.harness import Cluster

CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True, frozenset({"get"}))
GETS = 40  # more than CONNECTIONS: one connection each cannot carry them
OPEN = 5  # connections open before the burst: 8 GETs each, within kapply.transport.DEPTH (12)
RTT = 0.1  # seconds, through the proxy: far longer than the client takes to write the burst


@pytest.fixture
def distant(cluster: Cluster) -> Iterator[tuple[DelayProxy, KubeContext]]:
    """The cluster's context with its server behind a DelayProxy, RTT away: TLS passes through, only the server's
    port changes (its certificate still checked against the server's own name)."""
    context = load(KubeconfigFlags(str(cluster.kubeconfig)))
    server = urlsplit(context.cluster.server)
    proxy = DelayProxy(server.hostname or "", server.port or 443, RTT)
    port = proxy.start()
    entry = dataclasses.replace(
        context.cluster,
        server=server._replace(netloc=f"127.0.0.1:{port}").geturl(),
        tls_server_name=context.cluster.tls_server_name or server.hostname,
    )
    try:
        yield proxy, dataclasses.replace(context, cluster=entry)
    finally:
        proxy.stop()


def test_a_burst_of_gets_is_pipelined_on_the_open_connections_and_each_gets_its_own_answer(
    kube: Client, namespace: str, distant: tuple[DelayProxy, KubeContext]
) -> None:
    """OPEN GETs at once open OPEN connections; then GETS GETs at once, through kapply's Cluster, must each get their
    own ConfigMap (name and data: the data differ in content and length, so an answer handed to the request behind
    or before it fails), on those connections only.

    That they were pipelined is read off the bytes the proxy passed (bench/delay_proxy.py's `critical_path`, from the
    order of its timestamps, not from wall-clock durations): TLS hides the requests, but not the client's flights
    (its bytes on a connection between two answers there). Sent one after another on the OPEN connections, each GET
    waits for the answer before it: GETS flights, and a chain of GETS / OPEN + 1 = 9 round trips (a connection's first
    flight counts 2). Pipelined, each connection's 8 requests go out before its first answer comes back (one RTT
    later: the client writes the whole burst in one pass of its event loop): OPEN flights, 2 round trips. The bounds
    asserted, 2 flights a connection and 4 round trips, leave room for a writer stalled a round trip long and stay
    far below sequential reuse's. With pipelining off (kapply.transport.DEPTH = 1) the burst opened 11 connections of
    its own, 51 flights; off and CONNECTIONS = OPEN (sequential reuse, no new connection), 40 flights, 9 round
    trips."""
    proxy, context = distant
    data = {f"cm-{i:02d}": {"index": str(i), "payload": secrets.token_hex(i * 700)} for i in range(GETS)}
    for name, values in data.items():
        kube.create(ConfigMap(metadata=ObjectMeta(name=name, namespace=namespace), data=values))

    async def gets(client: KapplyCluster, names: list[str]) -> list[tuple[str, object]]:
        answers = await asyncio.gather(*(client.get(CONFIGMAPS, namespace, name) for name in names))
        return [(answer["metadata"]["name"], answer["data"]) if answer else ("(none)", None) for answer in answers]

    async def run() -> tuple[list[Chunk], list[Chunk], list[tuple[str, object]]]:
        async with KapplyCluster(context) as client:
            assert await gets(client, list(data)[:OPEN]) == list(data.items())[:OPEN]
            opening = proxy.take()
            answers = await gets(client, list(data))
            return opening, proxy.take(), answers

    opening, burst, answers = asyncio.run(run())
    assert answers == list(data.items())
    opened = {chunk.conn for chunk in opening}
    used = {chunk.conn for chunk in burst}
    path = critical_path(burst)
    assert len(opened) == OPEN, "the first GETs did not open a connection each"
    assert path.flights <= 2 * OPEN and path.round_trips <= 4, f"not pipelined: {path}"
    assert used <= opened, f"the burst opened {len(used - opened)} connections of its own"
    assert len(used) <= CONNECTIONS < GETS
