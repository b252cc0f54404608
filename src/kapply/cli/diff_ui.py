"""kapp's `--diff-ui-alpha` (deploy, delete, and the apps of app-group deploy and delete): the question between
showing a plan and running it, asked in a browser instead of the terminal.

kapp serves a page of its change graph on 127.0.0.1 (a port the system chooses), prints `Diff UI server: <URL>`, and
waits until it is interrupted: nothing is ever applied, whatever `-y` or `--diff-run` say. kapply prints the same
line, with a URL that carries a per-run token, and serves the plan (the Changes table, each change's masked diff,
what it waits for, who wrote the fields the plan sets back) with buttons that decide: Apply runs the command as
answering `y` does, Cancel stops it as `n` does (`Stopped`, exit 1). `-y` does not skip the page, as kapp's does
not. Where no question is asked (`--diff-run`, a deploy with nothing to apply) the page only has Close, after which
the command ends as it would have. Ctrl-C stops the wait, as any other (exit 130). See docs/diff-ui.md.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import confirm
from kapply.errors import KapplyError
from kapply.flags import DIFF_UI_ALPHA

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.delete import DeletePlan
    from kapply.deploy import Plan
    from kapply.diff.render import DiffFormat
    from kapply.ui.browser import Review
    from kapply.ui.output import Output


@asynccontextmanager
async def confirmation(
    args: Args, out: Output, review: Callable[[bool], Awaitable[Review]], *, asks: bool
) -> AsyncIterator[None]:
    """Run the block once the run is confirmed: with `asks`, kapp's `Continue? [yN]:` (or `-y`); with
    `--diff-ui-alpha`, the page made by `review(asks)` (see the module docs). The block is what confirmation starts;
    the page shows how it ended."""
    if not args[DIFF_UI_ALPHA]:
        if asks:
            confirm(args, out)
        yield
        return
    from kapply.ui.browser_server import Decision, serving

    async with serving(await review(asks)) as server:
        out.line(f"Diff UI server: {server.url}")
        # kapp shows the line only on a terminal (--json buffers it); without one, a wait nobody can end would follow
        if not out.tty:
            print(f"Diff UI server: {server.url}", file=sys.stderr, flush=True)
        decision = await server.decision()
        if decision is Decision.CANCEL:
            raise KapplyError("Stopped")
        if decision is Decision.CLOSE:
            yield
            return
        try:
            yield
        except Exception as e:
            server.finished(str(e) or type(e).__name__)
            raise
        server.finished()


def _masked(fmt: DiffFormat) -> DiffFormat:
    """The page masks values even under `--diff-mask=false`: a page is easier to leave open, or to share, than a
    terminal."""
    return replace(fmt, mask=True)


async def _page(api: AsyncClient, command: str, plan: Plan | DeletePlan, fmt: DiffFormat) -> Callable[..., Review]:
    """kapply.ui.browser.review given what a deploy's page and a delete's have alike; the caller adds the rest."""
    from kapply.ui.browser import review

    app = plan.app
    title = f"{command.capitalize()} app '{app.name}' (namespace: {app.namespace})"
    hunks = plan.text(_masked(fmt)).hunks
    return partial(review, command, title, await api.target(), plan.changes, hunks, plan.graph, config=plan.config)


async def deploy_review(api: AsyncClient, plan: Plan, fmt: DiffFormat, asks: bool) -> Review:
    page = await _page(api, "deploy", plan, fmt)
    return page(
        asks=asks,
        outside=await api.outside_changes(plan),
        policy=plan.options.drift_policy,
        default_update_strategy=plan.options.apply.default_update_strategy,
    )


async def delete_review(api: AsyncClient, plan: DeletePlan, fmt: DiffFormat, asks: bool) -> Review:
    return (await _page(api, "delete", plan, fmt))(asks=asks)
