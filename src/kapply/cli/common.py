"""What command handlers share: connecting, finding the app, output, confirmation, exit statuses."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from kapply.cli import groups
from kapply.cli.command import Args
from kapply.errors import KapplyError

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.app.record import App
    from kapply.ui.output import Output

T = TypeVar("T")


class ExitStatus(KapplyError):
    """Not a failure: kapp's --diff-exit-status / --apply-exit-status outcome (2: no changes, 3: changes)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def output(args: Args) -> Output:
    """The command's output: `--json`, `--tty` (its default is the command's), `--column`; TTY-like also when
    stdout is a terminal."""
    from kapply.ui.output import Output

    return Output(tty=args["tty"] or sys.stdout.isatty(), as_json=args["json"], columns=args["column"])


def client(args: Args, namespace: str = "") -> AsyncClient:
    """A client of the public API, connected as the kubeconfig flags say; `namespace` is `-n` ("" when not given)."""
    from kapply.api import AsyncClient

    kube = groups.kubeconfig(args)
    return AsyncClient(kube.path, context=kube.context, kubeconfig_yaml=kube.yaml, namespace=namespace or None)


def require_app_name(args: Args) -> groups.AppFlags:
    app = groups.app(args)
    if not app.name:
        raise KapplyError("Expected app name to be non-empty")
    return app


@asynccontextmanager
async def existing_app(args: Args, out: Output) -> AsyncIterator[tuple[AsyncClient, App]]:
    """Connect (saying where, as kapp does), resolve the app namespace (`--app-namespace`, else `-n` and its
    defaults) and find the app."""
    app = require_app_name(args)
    async with client(args, app.namespace) as api:
        out.line(await api.target())
        yield api, await api.get_app(app.name, namespace=app.app_namespace or None)


def run(coro: Coroutine[Any, Any, T]) -> T:
    import asyncio  # not at the top: `kapply version` and `--help` never start a loop (0.03 s of imports)

    return asyncio.run(coro)


def confirm(args: Args, out: Output) -> None:
    """kapp's `Continue? [yN]:` unless `--yes`; any answer but y/yes stops the command."""
    if args["yes"]:
        return
    out.prompt("Continue? [yN]: ")
    answer = sys.stdin.readline()
    if answer.strip().lower() not in ("y", "yes"):
        raise KapplyError("Stopped")


def exit_status(message: str, pending: bool) -> ExitStatus:
    """kapp's exit statuses 2 (nothing to do) and 3 (changes)."""
    code = 3 if pending else 2
    return ExitStatus(message.format(maybe_no="" if pending else "no ", code=code), code)
