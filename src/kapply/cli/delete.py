"""`kapply delete`: delete an app's resources and its record."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kapply.cli.common import (
    AppFlags,
    DiffFlags,
    OutputFlags,
    app_options,
    apply_options,
    bool_flag,
    client,
    confirm,
    diff_options,
    handle_errors,
    kube_options,
    output_options,
    run,
    wait_options,
)

if TYPE_CHECKING:
    from kapply.apply.options import ApplyOptions, WaitOptions
    from kapply.resources.kubeconfig import KubeconfigFlags


@click.command()
@app_options
@bool_flag("-y", "--yes", help="Assumes yes for any prompt")
@output_options
@diff_options()
@apply_options()
@wait_options
@kube_options
@handle_errors
def delete(**flags: object) -> None:
    """Delete app"""
    run(_delete(**flags))  # type: ignore[arg-type]


async def _delete(
    *,
    app: AppFlags,
    yes: bool,
    out: OutputFlags,
    diff: DiffFlags,
    apply: ApplyOptions,
    wait: WaitOptions,
    kube: KubeconfigFlags,
) -> None:
    from kapply.delete import DeleteOptions
    from kapply.ui.changes import changes_table

    output = out.output(tty_by_default=True)
    async with client(kube, app.namespace) as api:
        namespace = api.namespace(app.app_namespace or None)
        plan = await api.plan_delete(app.name, namespace=namespace, options=DeleteOptions(apply, wait))
        if plan is None:
            click.echo(f"App '{app.name}' (namespace: {namespace}) does not exist")
            return
        output.line(await api.target())
        if diff.changes:
            output.block(plan.line_diffs(diff.format()))
        if diff.summary:
            output.table(changes_table(plan.changes))
        if not diff.run:
            if not yes:
                click.echo()
                confirm(yes)
            await api.run_delete(plan, progress=output.progress())
        output.finish()
