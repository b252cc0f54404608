"""bench/delay_proxy.py: the delaying TCP proxy against a local echo server (a ping-pong costs the asked round trip,
a bulk transfer is delayed once and not per chunk, bytes keep their order, half-close passes) and the round trips on
the critical path derived from the chunks it passed."""

from __future__ import annotations

import socket
import socketserver
import statistics
import threading
import time
from collections.abc import Iterator

import pytest
from bench.delay_proxy import DOWN, UP, Chunk, DelayProxy, critical_path


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)
        self.request.shutdown(socket.SHUT_WR)


@pytest.fixture
def echo() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _proxy(port: int, rtt: float) -> DelayProxy:
    proxy = DelayProxy("127.0.0.1", port, rtt)
    proxy.start()
    return proxy


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    got = bytearray()
    while len(got) < n:
        data = sock.recv(n - len(got))
        assert data, "connection closed early"
        got += data
    return bytes(got)


def test_a_ping_pong_costs_the_asked_round_trip_and_the_first_one_a_connect_more(echo: int) -> None:
    rtt = 0.04
    proxy = _proxy(echo, rtt)
    try:
        with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            times = []
            for i in range(6):
                start = time.monotonic()
                sock.sendall(b"ping %d" % i)
                assert _recv_exactly(sock, 6) == b"ping %d" % i
                times.append(time.monotonic() - start)
        assert 2 * rtt - 0.002 <= times[0] <= 2 * rtt + 0.05, times  # the TCP handshake's round trip, then the ping
        assert min(times[1:]) >= rtt - 0.002, times  # never early
        assert statistics.median(times[1:]) <= rtt + 0.008, times  # late by a few ms at most (a loaded machine)
        # the connect and six ping-pongs, one after another (pings this small count as requests only without the
        # flow-control threshold)
        assert critical_path(proxy.take(), min_bytes=1).round_trips == 7
    finally:
        proxy.stop()


def test_a_bulk_transfer_is_delayed_once_not_per_chunk_and_keeps_its_order(echo: int) -> None:
    rtt = 0.05
    proxy = _proxy(echo, rtt)
    payload = bytes(i % 251 for i in range(4 * 1024 * 1024))
    try:
        with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
            got = bytearray()

            def receive() -> None:
                while data := sock.recv(65536):
                    got.extend(data)

            reader = threading.Thread(target=receive)
            reader.start()
            start = time.monotonic()
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)  # the half-close reaches the echo server, whose own comes back
            reader.join(30)
            elapsed = time.monotonic() - start
        assert bytes(got) == payload
        chunks = proxy.take()
        assert len([c for c in chunks if c.direction == UP]) >= 64  # 4 MiB in reads of at most 64 KiB
        assert elapsed < 2 * rtt + 1.5, elapsed  # per-chunk delays would be seconds: 64+ chunks x 50 ms
    finally:
        proxy.stop()


def test_connections_in_parallel_are_one_round_trip_not_one_each(echo: int) -> None:
    rtt = 0.05
    proxy = _proxy(echo, rtt)
    try:
        socks = [socket.create_connection(("127.0.0.1", proxy.port)) for _ in range(4)]
        start = time.monotonic()
        for s in socks:
            s.sendall(b"x" * 100)
        for s in socks:
            assert _recv_exactly(s, 100) == b"x" * 100
        elapsed = time.monotonic() - start
        for s in socks:
            s.close()
        assert elapsed < 4 * rtt, elapsed  # connect and exchange: 2 round trips, where one after another would be 8
        found = critical_path(proxy.take())
        assert (found.round_trips, found.flights, found.connections) == (2, 4, 4)
    finally:
        proxy.stop()


def _c(conn: int, direction: str, t: float, size: int = 200) -> Chunk:
    return Chunk(conn, direction, t, size)


def test_the_critical_path_is_the_longest_chain_of_sends_after_answers() -> None:
    chunks = [
        # connection 0: a request, its answer, a second request sent after it, its answer
        _c(0, UP, 0.0),
        _c(0, DOWN, 0.04),
        _c(0, UP, 0.05),
        _c(0, DOWN, 0.09),
        # connection 1 opened at the same time as the first: independent, same depth
        _c(1, UP, 0.0),
        _c(1, DOWN, 0.04),
        # connection 2 opened after connection 0's second answer: connect + request, two deeper
        _c(2, UP, 0.1),
        _c(2, DOWN, 0.2),
    ]
    found = critical_path(chunks)
    assert (found.round_trips, found.flights, found.connections) == (5, 4, 3)


def test_http2_flow_control_flights_are_not_requests() -> None:
    chunks = [
        _c(0, UP, 0.0),  # a LIST
        _c(0, DOWN, 0.04, 16000),
        _c(0, UP, 0.041, 48),  # WINDOW_UPDATE while the answer streams
        _c(0, DOWN, 0.042, 16000),
        _c(0, UP, 0.043, 39),  # a PING acknowledgement
        _c(0, DOWN, 0.044, 16000),
        _c(0, UP, 0.06),  # the next request
    ]
    found = critical_path(chunks)
    assert (found.round_trips, found.flights) == (3, 2)
