"""The controller's HTTP endpoints: `/metrics` for Prometheus, `/healthz` and `/readyz` for the Deployment's probes.

Served by aiohttp.web on the controller's own event loop, not by prometheus_client's server (a thread of its own):
`/healthz` answering then proves the loop answers (a thread would answer while the loop is stuck), and the gauges
read at a scrape (queues, shards, Apps' drift) are read on the loop that changes them, without locks. The exposition
is prometheus_client's own aiohttp handler (text or OpenMetrics, as the scraper asks).

`/readyz` also says whether the API server answers (`Contact`): a controller that cannot reach it cannot reconcile,
and a Service or a rollout should know.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler

_log = logging.getLogger("kapply.controller")
READY_WINDOW = 15.0  # seconds: ready while the API server answered within them (three readiness probes' periods)
PROBE_TIMEOUT = 5.0  # seconds a probe of the API server (`/version`) may take
PROBE_RETRY = 1.0  # seconds between probes while the API server does not answer


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


class Contact:
    """When the API server last answered this process, for `/readyz`: every answer to the controller's requests and
    watches (the cluster client's REQUEST_OBSERVERS, through `answered`) counts; an answer of 500 or more does not
    (the server is there but cannot serve). When a readiness check (`check`) finds nothing answered for half the
    window, it asks for `/version`, at most one probe at a time and then one a second while they fail, so an idle
    controller (no Lease to renew, no request due) stays ready and one cut off from the API server is unready within
    the window and a readiness probe's period.

    The probes follow the checks, not a timer of their own: an idle controller that nobody asks whether it is ready
    sends no request at all (issue 33: an idle sync costs none, and neither does the time between two), and one whose
    kubelet checks it every 5 s asks for `/version` about once every two checks while nothing else is answered."""

    def __init__(
        self,
        probe: Callable[[], Awaitable[object]],
        window: float = READY_WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window = window
        self._probe = probe
        self._clock = clock
        self._last = clock()  # the process starts counted as in contact: its first requests are made at once
        self._failure = ""  # why the last probe failed ("" once one succeeded)
        self._probing: asyncio.Task[None] | None = None  # probes until one is answered, started by a check

    def answered(self, code: int) -> None:
        if code < 500:
            self._last = self._clock()

    def unready(self) -> str | None:
        """Why the process is not ready as far as the API server goes (None: it answered within the window)."""
        silent = self._clock() - self._last
        if silent <= self.window:
            return None
        why = f": {self._failure}" if self._failure else ""
        return f"the API server has not answered for {silent:.0f}s{why}"

    async def probe(self) -> bool:
        """One probe; True when the API server answered (its answer is counted through `answered`)."""
        try:
            await asyncio.wait_for(self._probe(), PROBE_TIMEOUT)
        except Exception as e:  # readiness outlives any failure of a probe: each is "no answer"
            failure = str(e).strip() or f"{type(e).__name__} after {PROBE_TIMEOUT:g}s"
            if not self._failure:
                _log.warning("the API server does not answer: %s", failure)
            self._failure = failure
            return False
        if self._failure:
            _log.info("the API server answers again")
        self._failure = ""
        self._last = self._clock()
        return True

    async def check(self) -> str | None:
        """`unready`, for a readiness check: after half the window without an answer, probes start (in the
        background: the silence is still within the window); after the whole window (nobody asked meanwhile), the
        answer waits for the first probe's, so that a check after a long quiet says whether the API server answers
        now, not that nothing asked it."""
        silent = self._clock() - self._last
        if silent > self.window / 2 and (self._probing is None or self._probing.done()):
            first = asyncio.create_task(self.probe())
            self._probing = asyncio.create_task(self._until_answered(first))
            if silent > self.window:
                await asyncio.shield(first)
        return self.unready()

    async def _until_answered(self, first: asyncio.Task[bool]) -> None:
        """After `first`, one probe a second until one is answered."""
        answered = await first
        while not answered:
            await asyncio.sleep(PROBE_RETRY)
            answered = await self.probe()

    async def close(self) -> None:
        """Stop the probes running, if any."""
        if self._probing is not None:
            self._probing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probing


def _plain(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text + "\n")


@asynccontextmanager
async def serving(
    address: Address, registry: CollectorRegistry, unready: Callable[[], str | None], contact: Contact | None = None
) -> AsyncIterator[list[str]]:
    """The endpoints, listening while the block runs; yields the URLs they listen on. `unready` says why the process
    is not ready (None: it is); with `contact`, so does the API server's silence, probed when a check finds it long."""

    async def healthz(request: web.Request) -> web.Response:
        return _plain(200, "ok")

    async def readyz(request: web.Request) -> web.Response:
        reason = unready() or (await contact.check() if contact else None)
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
        try:
            await runner.cleanup()  # the checks answered (or cut off after a second): none starts probes after it
        finally:
            if contact:
                await contact.close()
