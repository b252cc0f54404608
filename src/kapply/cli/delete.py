"""`kapply delete`: delete an app's resources and its record."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from kapply.cli import diff_ui
from kapply.cli.command import Args
from kapply.cli.common import ExitStatus, client, exit_status, require_app_name, run
from kapply.cli.first_requests import planning
from kapply.flags import APPLY_EXIT_STATUS, diff_view

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.ui.output import Output


def delete(args: Args, out: Output) -> None:
    run(_delete(args, out))


async def _delete(args: Args, out: Output) -> None:
    app = require_app_name(args)
    async with client(args, app.namespace, out) as api:
        namespace = api.namespace(app.app_namespace or None)
        status = await delete_app(api, args, out, app.name, namespace, show_target=True)
        if status is not None:
            raise status
        out.finish()


async def delete_app(
    api: AsyncClient, args: Args, out: Output, name: str, namespace: str, prefix: str = "", *, show_target: bool = False
) -> ExitStatus | None:
    """Plan one app's delete, show it, and (unless --diff-run) confirm and run it; `prefix` "delete-" takes
    `app-group deploy`'s `--delete-apply-*` and `--delete-wait-*` flags. The exit status asked for (`--diff-exit-status`
    with --diff-run, `--apply-exit-status`), else None; a missing app has none, as with kapp. With `show_target`, the
    cluster is named first, as kapp does. The first requests leave before the planning code is imported
    (`first_requests.planning`)."""
    diff = diff_view(args.parsed.flags)
    async with planning(api, out, name, namespace, ("kapply.delete", "kapply.ui.changes"), show_target=show_target):
        from kapply.api import delete_options

        # app-group deploy deletes the apps it no longer has with its diff flags but no resource filter, as kapp
        options = delete_options(args.parsed.flags, prefix)  # a bad filter fails after the cluster was named
        plan = await api.plan_delete(name, namespace=namespace, options=options)
    from kapply.app.record import elsewhere, missing, partly
    from kapply.diff.change import ApplyOp
    from kapply.ui.changes import changes_table, show_changes
    from kapply.ui.messages import ProgressLines

    if plan is None:
        if options.prev_app:  # kapp names both apps it looked for, the previous one first
            out.line(missing(namespace, options.prev_app) + await elsewhere(api.cluster, options.prev_app))
        out.line(missing(namespace, name) + await elsewhere(api.cluster, name))
        return None
    show_changes(out, plan.text(diff.format(), yaml=diff.changes_yaml, diffs=diff.changes))
    if diff.summary:
        out.table(changes_table(plan.changes))
    if not plan.complete:
        out.line(partly(namespace, plan.app.name))  # the previous app, when --prev-app found it
    pending = any(c.apply_op is not ApplyOp.NOOP for c in plan.changes)
    review = partial(diff_ui.delete_review, api, plan, diff.format())
    if diff.run:
        async with diff_ui.confirmation(args, out, review, asks=False):
            pass
        if diff.exit_status:
            return exit_status("Exiting after diffing with {maybe_no}pending changes (exit status {code})", pending)
        return None
    async with diff_ui.confirmation(args, out, review, asks=True):
        await api.run_delete(plan, progress=ProgressLines(out))
    if args[prefix + APPLY_EXIT_STATUS.name]:
        return exit_status("Exiting after applying with {maybe_no}changes (exit status {code})", pending)
    return None
