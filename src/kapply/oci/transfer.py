"""The slowest a download may go: a minimum transfer rate, measured as curl and git measure theirs
(`http.lowSpeedLimit` and `http.lowSpeedTime`): a body that brings fewer than `bytes_per_second` × `window` bytes
in any `window` seconds is stopped.

Without it, a server that sends a byte just before each read timeout keeps a download, and the worker running it,
for as long as the overall deadline allows. Registry blobs and manifests (kapply.oci.registry) and the controller's
http sources (kapply.controller.fetch) read their bodies through `paced`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from kapply.oci.errors import OciError

MIN_BYTES_PER_SECOND = 1024
WINDOW = 30.0  # seconds


@dataclass(frozen=True, slots=True)
class MinRate:
    """At least `bytes_per_second` on average over each `window` seconds of a body (0: no minimum)."""

    bytes_per_second: int = MIN_BYTES_PER_SECOND
    window: float = WINDOW

    def describe(self) -> str:
        return f"{self.bytes_per_second} bytes/s over {self.window:g} s"


class TooSlow(OciError):
    """A body came slower than its minimum rate."""


class Body(Protocol):
    """What a body is read from: an aiohttp response's `content`."""

    async def read(self, n: int = -1) -> bytes: ...


async def paced(content: Body, rate: MinRate, chunk: int) -> AsyncIterator[bytes]:
    """The body in pieces of at most `chunk` bytes; TooSlow as soon as a window of `rate.window` seconds (counted
    from the first read) has passed with fewer bytes than the rate asks for, whether or not bytes are still coming.
    Windows follow each other: a fast start does not pay for a stall later."""
    if rate.bytes_per_second <= 0:
        while data := await content.read(chunk):
            yield data
        return
    loop = asyncio.get_running_loop()
    needed = rate.bytes_per_second * rate.window
    received = 0
    window_end = loop.time() + rate.window
    while True:
        piece: bytes | None = None
        try:
            async with asyncio.timeout_at(window_end) as timer:
                piece = await content.read(chunk)
        except TimeoutError:
            if not timer.expired():  # the connection's own read timeout: not ours to hide
                raise
        if piece == b"":
            return
        if piece:
            received += len(piece)
            yield piece
        if loop.time() >= window_end:
            if received < needed:
                raise TooSlow(
                    f"slower than the minimum rate of {rate.describe()} ({received} bytes in the last "
                    f"{rate.window:g} s)"
                )
            received = 0
            window_end = loop.time() + rate.window
