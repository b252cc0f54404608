"""A deploy's or delete's first requests, before its planning code is imported (issue 33; bench/why.md, "First
requests before the planning imports"): the nodes (kapp's target line), discovery and the app's record leave first,
and the planning code imports on a thread meanwhile; the plan's own calls then take those answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.ui.output import Output


# Seconds a failed plan (a file that does not parse, a bad flag) waits for the nodes, to name them as kapp does;
# a cluster that does not answer (a server that accepts connections and hangs) must not hold the input's error up.
TARGET_GRACE = 2.0


@asynccontextmanager
async def planning(
    api: AsyncClient, out: Output, app: str, app_namespace: str | None, modules: tuple[str, ...], *, show_target: bool
) -> AsyncIterator[None]:
    """The body plans `app` (its record in `app_namespace`, else the client's namespace): the nodes (with
    `show_target`), discovery and the record are asked first, then `modules` import on a thread, then the body runs.
    With `show_target` the cluster is named after the body, as kapp names it first; when the body fails, if the
    nodes answer within TARGET_GRACE, else without them. Errors are the body's: the early discovery is only a head
    start (the plan asks again if it failed, and reports that), and its failure is retrieved here, never left to the
    event loop; the record's answers are the plan's when it reads the record, else the client's close drops them."""
    target = asyncio.ensure_future(api.target()) if show_target else None
    discovering = asyncio.ensure_future(api.cluster.discovery())
    await api.prefetch_app(app, app_namespace=app_namespace)  # returns at once
    try:
        try:
            await asyncio.sleep(0)  # the requests start (their connections open) before the thread holds the GIL
            await asyncio.to_thread(_import, modules)
            yield
        except BaseException:  # bad input is not held up by a cluster that does not answer: nodes named if in time
            if target is not None:
                await asyncio.wait({target}, timeout=TARGET_GRACE)
                out.line(await target if target.done() else api.cluster.unnamed_target())
                target.cancel()
            raise
        if target is not None:
            out.line(await target)
    finally:
        discovering.cancel()  # done unless the plan failed before it asked
        await asyncio.gather(discovering, return_exceptions=True)


def _import(modules: tuple[str, ...]) -> None:
    for module in modules:
        import_module(module)
