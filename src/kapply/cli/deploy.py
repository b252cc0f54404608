"""`kapply deploy`: flags in, the deploy planned and run through the public API, its results shown."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

from kapply.cli import diff_ui
from kapply.cli.command import Args
from kapply.cli.common import ExitStatus, client, exit_status, require_app_name, run
from kapply.cli.first_requests import planning
from kapply.flags import APPLY_EXIT_STATUS, DIFF_FIELD_OWNERS, FILE, LOGS_ALL, PREFLIGHT, Target, diff_view, setting

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.deploy import Plan
    from kapply.ui.output import Output


def deploy(args: Args, out: Output) -> None:
    run(_deploy(args, out))


async def _deploy(args: Args, out: Output) -> None:
    app = require_app_name(args)
    async with client(args, app.namespace, out) as api:
        status = await deploy_app(
            api, args, out, app.name, args[FILE], app.app_namespace or None, args.parsed.flags, show_target=True
        )
        if status is not None:
            raise status
        out.finish()


async def deploy_app(
    api: AsyncClient,
    args: Args,
    out: Output,
    name: str,
    files: Sequence[str],
    app_namespace: str | None,
    flags: Mapping[str, Any],
    *,
    show_target: bool,
) -> ExitStatus | None:
    """Plan one app's deploy, show it, and (unless --diff-run) confirm and run it. The exit status asked for
    (`--diff-exit-status` with --diff-run, `--apply-exit-status`), else None. `app-group deploy` calls it per app."""
    diff = diff_view(flags)
    setting((PREFLIGHT,), Target.DEPLOY, flags)  # a --preflight kapp refuses fails before anything is sent
    plan = await _plan(api, out, name, files, app_namespace, flags, show_target=show_target)
    from kapply.ui.changes import changes_table, show_changes, show_outside_changes
    from kapply.ui.messages import ProgressLines

    options = plan.options
    show_changes(out, plan.text(diff.format(), yaml=diff.changes_yaml, diffs=diff.changes))
    if diff.summary:
        out.table(changes_table(plan.changes, options.apply.default_update_strategy))
    if args[DIFF_FIELD_OWNERS]:
        show_outside_changes(out, await api.outside_changes(plan), plan.config, options.drift_policy)
    plan.check_allowed()  # kapp shows the plan before refusing what --allow-* does not allow
    review = partial(diff_ui.deploy_review, api, plan, diff.format())
    if diff.run:
        async with diff_ui.confirmation(args, out, review, asks=False):
            plan.write_app_metadata()
        if diff.exit_status:
            return exit_status(
                "Exiting after diffing with {maybe_no}pending changes (exit status {code})", plan.pending
            )
        return None
    await api.check_deploy(plan)  # --preflight
    async with diff_ui.confirmation(args, out, review, asks=plan.pending), _logs(api, args, out, plan):
        result = await api.run_deploy(plan, progress=ProgressLines(out))
    if result.deleted_app_changes:
        out.line(f"Deleted {result.deleted_app_changes} older app changes")
    if args[APPLY_EXIT_STATUS]:
        return exit_status("Exiting after applying with {maybe_no}changes (exit status {code})", plan.pending)
    return None


async def _plan(
    api: AsyncClient,
    out: Output,
    name: str,
    files: Sequence[str],
    app_namespace: str | None,
    flags: Mapping[str, Any],
    *,
    show_target: bool,
) -> Plan:
    """The deploy's plan; with `show_target`, the cluster named first, as kapp does, a failed plan included. Its first
    requests leave before the planning code is imported (`first_requests.planning`)."""
    async with planning(api, out, name, app_namespace, ("kapply.deploy", "kapply.ui.changes"), show_target=show_target):
        from kapply.api import deploy_options

        options = deploy_options(flags)  # a bad filter fails after the cluster was named, as kapp's
        plan = await api.plan_deploy(name, files=files, app_namespace=app_namespace, options=options, stdin=sys.stdin)
    return plan


@asynccontextmanager
async def _logs(api: AsyncClient, args: Args, out: Output, plan: Plan) -> AsyncIterator[None]:
    """kapp's `--logs` (`--logs-all`): the app's Pods' logs, followed while the deploy runs. A new app (no record
    when the plan looked) has no Pods yet: none is listed before the deploy starts."""
    if not plan.options.logs or not plan.changes:  # nothing applied or waited on: no Pod to show
        yield
        return
    from kapply.cli.deploy_logs import deploy_logs

    namespaces = list(dict.fromkeys([plan.app.namespace, *(ns for ns in plan.namespaces if ns != "(cluster)")]))
    logs_all, new_app = args[LOGS_ALL], not plan.app.stored
    async with deploy_logs(api.cluster, out, plan.app.label_selector, namespaces, logs_all=logs_all, new_app=new_app):
        yield
