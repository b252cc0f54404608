"""What command handlers share: connecting, finding the app, output, confirmation, exit statuses."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from kapply.cli import groups
from kapply.cli.command import Args
from kapply.errors import KapplyError
from kapply.flags import COLUMN, JSON, TTY, WARNINGS, YES

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.app.record import App
    from kapply.ui.output import Output

T = TypeVar("T")


class Terminated(Exception):
    """SIGTERM (a CI job cancelled, a pod stopping, `timeout`): the command stops as on Ctrl-C, after recording what
    it must (the app-change as failed, the app's hold released), and exits 143 (128 + SIGTERM, what a shell reports
    for a process the signal ends)."""

    STATUS = 143


class ExitStatus(KapplyError):
    """Not a failure: kapp's --diff-exit-status / --apply-exit-status outcome (2: no changes, 3: changes)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def output(args: Args) -> Output:
    """The command's output: `--json`, `--tty` (its default is the command's), `--column`; TTY-like also when
    stdout is a terminal."""
    from kapply.ui.output import Output

    return Output(tty=args[TTY] or sys.stdout.isatty(), as_json=args[JSON], columns=args[COLUMN])


def client(args: Args, namespace: str = "", out: Output | None = None) -> AsyncClient:
    """A client of the public API, connected as the kubeconfig flags say; `namespace` is `-n` ("" when not given).
    The API server's warnings (a deprecated API version, say) are shown as kapp shows them, once each, unless
    `--warnings=false`: `Warning: <text>` among `out`'s progress lines, or on stderr without `out`."""
    from kapply.api import AsyncClient

    kube = groups.kubeconfig(args)
    api = AsyncClient(
        kube.path,
        context=kube.context,
        kubeconfig_yaml=kube.yaml,
        namespace=namespace or None,
        timeout=request_timeout(os.environ),
    )
    api.cluster.on_warning = _show_warning(out) if args[WARNINGS] else _ignore_warning
    return api


REQUEST_TIMEOUT = "KAPPLY_KUBE_API_TIMEOUT"
DEFAULT_REQUEST_TIMEOUT = 60.0  # seconds: kapply.api.AsyncClient's default


def request_timeout(environ: Mapping[str, str]) -> float:
    """$KAPPLY_KUBE_API_TIMEOUT: the seconds a request to the API server may wait for its connection, and for each
    part of its answer, before it fails (as kubectl's `--request-timeout`); 60 when not set. A script that would
    rather fail fast against a hung server than wait a minute sets it lower."""
    text = environ.get(REQUEST_TIMEOUT, "")
    if not text:
        return DEFAULT_REQUEST_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise KapplyError(f"Expected ${REQUEST_TIMEOUT} to be a positive number of seconds, got '{text}'")
    return seconds


def _show_warning(out: Output | None) -> Callable[[str], None]:
    shown: set[str] = set()

    def show(text: str) -> None:
        if text in shown:
            return
        shown.add(text)
        if out is None:
            from kapply.ui.escape import escaped

            print(escaped(f"Warning: {text}"), file=sys.stderr, flush=True)
        else:
            out.begin_line(f"Warning: {text}\n")

    return show


def _ignore_warning(_text: str) -> None:
    """`--warnings=false`."""


def require_app_name(args: Args) -> groups.AppFlags:
    app = groups.app(args)
    if not app.name:
        raise KapplyError("Expected app name to be non-empty")
    return app


@asynccontextmanager
async def app_client(
    args: Args, out: Output, warnings: Output | None
) -> AsyncIterator[tuple[AsyncClient, groups.AppFlags, str]]:
    """Connect for the app the flags name, saying where as kapp does (the API server's warnings shown through
    `warnings`, as `client`): the client, the app's flags, and its namespace (`--app-namespace`, else `-n` and its
    defaults)."""
    app = require_app_name(args)
    async with client(args, app.namespace, warnings) as api:
        out.line(await api.target())
        yield api, app, api.namespace(app.app_namespace or None)


@asynccontextmanager
async def existing_app(args: Args, out: Output) -> AsyncIterator[tuple[AsyncClient, App]]:
    """Connect, saying where as `app_client` does, and find the app: its record asked beside the nodes of the
    target line (issue 33: a round trip less at a distance)."""
    app = require_app_name(args)
    async with client(args, app.namespace, out) as api:
        await api.prefetch_app(app.name, namespace=app.app_namespace or None)
        out.line(await api.target())
        yield api, await api.get_app(app.name, namespace=app.app_namespace or None)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run the command's coroutine. SIGTERM stops it as Ctrl-C does: the coroutine is cancelled, so that what it
    holds is released and what it was doing is recorded as failed on the way out, then `Terminated` is raised; a
    second SIGTERM while that runs raises `Terminated` at once."""
    import asyncio  # not at the top: `kapply version` and `--help` never start a loop (0.03 s of imports)
    import signal

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        requested = False

        def terminate(_signal: int, _frame: object) -> None:
            nonlocal requested
            if requested:
                raise Terminated
            requested = True
            task.cancel()  # as asyncio's own SIGINT handler does, then wakes the loop
            loop.call_soon_threadsafe(lambda: None)

        previous = signal.signal(signal.SIGTERM, terminate)
        try:
            return await coro
        except asyncio.CancelledError:
            if requested:
                raise Terminated from None
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)

    return asyncio.run(main())


def confirm(args: Args, out: Output) -> None:
    """kapp's `Continue? [yN]:` unless `--yes`; any answer but y/yes stops the command. Ctrl-C or SIGTERM while the
    question waits ends the command at once (nothing was applied)."""
    if args[YES]:
        return
    with _interruptible():
        out.prompt("Continue? [yN]: ")
        answer = sys.stdin.readline()
    if answer.strip().lower() not in ("y", "yes"):
        raise KapplyError("Stopped")


@contextmanager
def _interruptible() -> Iterator[None]:
    """A blocking read that Ctrl-C (KeyboardInterrupt) and SIGTERM (Terminated) interrupt. Within the event loop,
    both signals only cancel the running coroutine (asyncio's own SIGINT handler, and `run`'s), which a read that
    blocks the loop would never see; one that came just before is honoured at once."""
    import asyncio
    import signal

    def terminate(_signal: int, _frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGINT, signal.default_int_handler), signal.signal(signal.SIGTERM, terminate)
    try:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError
        yield
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])


def exit_status(message: str, pending: bool) -> ExitStatus:
    """kapp's exit statuses 2 (nothing to do) and 3 (changes)."""
    code = 3 if pending else 2
    return ExitStatus(message.format(maybe_no="" if pending else "no ", code=code), code)
