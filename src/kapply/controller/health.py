"""The controller's HTTP endpoints: `/metrics` for Prometheus, `/healthz` and `/readyz` for the Deployment's probes.

Served by aiohttp.web on the controller's own event loop, not by prometheus_client's server (a thread of its own):
`/healthz` answering then proves the loop answers (a thread would answer while the loop is stuck), and the gauges
read at a scrape (queues, shards, Apps' drift) are read on the loop that changes them, without locks. The exposition
is prometheus_client's own aiohttp handler (text or OpenMetrics, as the scraper asks).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler

_log = logging.getLogger("kapply.controller")


@dataclass(frozen=True, slots=True)
class Address:
    host: str | None  # None: every interface
    port: int  # 0: a free port, named in the log


def parse_address(text: str) -> Address | None:
    """`--metrics-bind-address`: `:8080` (every interface), `HOST:PORT`, `[IPv6]:PORT`; `0` turns the endpoints off,
    as controller-runtime's flag does."""
    if text == "0":
        return None
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"Expected --metrics-bind-address to be [HOST]:PORT or 0, got {text!r}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return Address(host or None, int(port))


def _plain(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text + "\n")


@asynccontextmanager
async def serving(
    address: Address, registry: CollectorRegistry, unready: Callable[[], str | None]
) -> AsyncIterator[list[str]]:
    """The endpoints, listening while the block runs; yields the URLs they listen on. `unready` says why the process
    is not ready (None: it is)."""

    async def healthz(request: web.Request) -> web.Response:
        return _plain(200, "ok")

    async def readyz(request: web.Request) -> web.Response:
        reason = unready()
        return _plain(200, "ok") if reason is None else _plain(503, reason)

    app = web.Application()
    app.router.add_get("/metrics", make_aiohttp_handler(registry))
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, address.host, address.port).start()
        urls = [f"http://{f'[{a[0]}]' if ':' in a[0] else a[0]}:{a[1]}" for a in runner.addresses]
        _log.info("serving /metrics, /healthz and /readyz on %s", ", ".join(urls))
        yield urls
    finally:
        await runner.cleanup()
