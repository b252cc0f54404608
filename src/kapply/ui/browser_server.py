"""The local web server of `--diff-ui-alpha`: serves one plan's page (`kapply.ui.browser`) and takes one decision.

It listens on 127.0.0.1 only, on a port the system chooses (as kapp's UI server does), and answers only requests
whose path starts with a random token made for this run (`/<token>/`): another local user, who can reach the port
but has not seen the URL in the terminal, gets 403. Every request must name the server itself as its Host (a DNS
rebinding page names its own host), and a POST that carries an Origin (a browser's always does) must come from the
page itself. The first decision counts; a later one gets 409 and changes nothing. Answers are never cached and
carry a Content-Security-Policy that lets nothing load or run (`browser.CSP`).
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from enum import StrEnum

from aiohttp import web

from kapply.ui.browser import CSP, FINAL, Review, Stage, page

HOST = "127.0.0.1"
# How long the server stays up after the run ends for a browser that follows it (the page reloads every second) to
# show the outcome; not at all when none did (a script that posted Apply).
LINGER = 3.0

HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # not no-referrer: with it a browser posts forms with `Origin: null`
}


class Decision(StrEnum):
    APPLY = "apply"
    CANCEL = "cancel"
    CLOSE = "close"


_DECISIONS = {Stage.APPLYING: Decision.APPLY, Stage.CANCELLED: Decision.CANCEL, Stage.CLOSED: Decision.CLOSE}


class ReviewServer:
    """One page, one decision (see the module docs). `url` is known once `serving` has started it."""

    def __init__(self, review: Review, token: str | None = None) -> None:
        self.review = review
        self.token = token or secrets.token_urlsafe(32)
        self.port = 0
        self.stage = Stage.ASKING
        self.failure = ""
        self._decided: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self._followed = False  # a browser was shown the page while the run went on
        self._outcome_shown = asyncio.Event()  # the page was served with the run's outcome

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/{self.token}/"

    async def decision(self) -> Decision:
        """Wait for Apply, Cancel or Close."""
        return await self._decided

    def finished(self, failure: str = "") -> None:
        """The run that Apply started ended (with `failure`, its error, when it failed)."""
        self.stage, self.failure = (Stage.FAILED, failure) if failure else (Stage.APPLIED, "")

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Host") not in self._hosts():
            return _plain(403, "Forbidden: wrong Host")
        _, token, action = (request.path.split("/", 2) + ["", ""])[:3]
        if not hmac.compare_digest(token.encode(errors="replace"), self.token.encode()):
            return _plain(403, "Forbidden: this page needs the URL kapply printed")
        if action == "":
            if request.method not in ("GET", "HEAD"):
                return _plain(405, "Method Not Allowed", Allow="GET, HEAD")
            return self._page(request, 200)
        if action not in self.review.actions:
            return _plain(404, "Not Found")
        if request.method != "POST":
            return _plain(405, "Method Not Allowed", Allow="POST")
        if not self._same_origin(request):
            return _plain(403, "Forbidden: not posted by this page")
        if self._decided.done():
            return self._page(request, 409)
        self.stage = self.review.actions[action]
        self._decided.set_result(_DECISIONS[self.stage])
        return self._page(request, 200)

    def _hosts(self) -> set[str]:
        return {f"{HOST}:{self.port}", f"localhost:{self.port}"}

    def _same_origin(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is not None and origin not in {f"http://{host}" for host in self._hosts()}:
            return False
        return request.headers.get("Sec-Fetch-Site", "same-origin") == "same-origin"

    def _page(self, request: web.Request, status: int) -> web.Response:
        if self.stage is Stage.APPLYING and "text/html" in request.headers.get("Accept", ""):
            self._followed = True  # a browser: the page reloads itself until it shows the outcome
        if self.stage in FINAL:
            self._outcome_shown.set()
        return web.Response(
            status=status,
            text=page(self.review, self.token, self.stage, self.failure),
            content_type="text/html",
            charset="utf-8",
            headers=HEADERS,
        )

    async def linger(self) -> None:
        """Give a page that follows the run the time to show its outcome (see LINGER)."""
        if self._followed and self.stage in FINAL and not self._outcome_shown.is_set():
            with suppress(TimeoutError):
                await asyncio.wait_for(self._outcome_shown.wait(), LINGER)


def _plain(status: int, text: str, **headers: str) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers={**HEADERS, **headers})


@asynccontextmanager
async def serving(review: Review, token: str | None = None) -> AsyncIterator[ReviewServer]:
    """The server, listening while the block runs; stopped after it (after `linger` when the block ends normally or
    with an error, at once when it is cancelled: Ctrl-C)."""
    server = ReviewServer(review, token)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, HOST, 0)
        await site.start()
        server.port = runner.addresses[0][1]
        try:
            yield server
        except Exception:
            await server.linger()
            raise
        await server.linger()
    finally:
        await runner.cleanup()
