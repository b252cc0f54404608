"""`kapply delete`: delete an app's resources and its record."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapply.cli import groups
from kapply.cli.command import Args
from kapply.cli.common import client, confirm, require_app_name, run

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.ui.output import Output


def delete(args: Args, out: Output) -> None:
    run(_delete(args, out))


async def _delete(args: Args, out: Output) -> None:
    app = require_app_name(args)
    async with client(args, app.namespace) as api:
        out.line(await api.target())
        await delete_app(api, args, out, app.name, api.namespace(app.app_namespace or None))
        out.finish()


async def delete_app(api: AsyncClient, args: Args, out: Output, name: str, namespace: str, prefix: str = "") -> None:
    """Plan one app's delete, show it, and (unless --diff-run) confirm and run it; `prefix` "delete-" takes
    `app-group deploy`'s `--delete-apply-*` and `--delete-wait-*` flags."""
    from kapply.app.record import elsewhere, missing
    from kapply.delete import DeleteOptions
    from kapply.ui.changes import changes_table, show_hunks
    from kapply.ui.messages import ProgressLines

    diff = groups.diff_flags(args)
    options = DeleteOptions(groups.apply_options(args, prefix), groups.wait_options(args, prefix))
    plan = await api.plan_delete(name, namespace=namespace, options=options)
    if plan is None:
        out.line(missing(namespace, name) + await elsewhere(api.cluster, name))
        return
    if diff.changes:
        show_hunks(out, plan.hunks(diff.format()))
    if diff.summary:
        out.table(changes_table(plan.changes))
    if not diff.run:
        confirm(args, out)
        await api.run_delete(plan, progress=ProgressLines(out))
