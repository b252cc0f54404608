"""`kapply delete`: delete an app's resources and its record."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kapply.cli.common import (
    app_options,
    bool_flag,
    confirm,
    connect,
    handle_errors,
    kube_options,
    make_output,
    make_wait_options,
    output_options,
    run,
    wait_options,
)

if TYPE_CHECKING:
    from kapply.apply.loop import WaitOptions
    from kapply.resources.kubeconfig import KubeconfigFlags


@click.command()
@app_options
@bool_flag("-y", "--yes", help="Assumes yes for any prompt")
@output_options
@bool_flag("--diff-run", help="Show diff and exit")
@click.option("--apply-concurrency", default=5, help="Maximum number of concurrent apply operations")
@wait_options
@kube_options
@handle_errors
def delete(**flags: object) -> None:
    """Delete app"""
    run(_delete(wait=make_wait_options(flags), **flags))  # type: ignore[arg-type]


async def _delete(
    *,
    app: str,
    namespace: str,
    app_namespace: str,
    yes: bool,
    tty: bool | None,
    as_json: bool,
    diff_run: bool,
    apply_concurrency: int,
    wait: WaitOptions,
    kube: KubeconfigFlags,
) -> None:
    from kapply import delete as pipeline
    from kapply.apply.execute import ApplyOptions
    from kapply.cli.common import app_namespace_or_default
    from kapply.ui.changes import changes_table

    out = make_output(tty, as_json, tty_by_default=True)
    async with connect(kube) as cluster:
        ns = app_namespace_or_default(app_namespace, namespace, cluster.namespace)
        plan = await pipeline.plan(cluster, ns, app, wait.wait)
        if plan is None:
            click.echo(f"App '{app}' (namespace: {ns}) does not exist")
            return
        out.line(await cluster.target())
        out.table(changes_table(plan.changes))
        if not diff_run:
            if not yes:
                click.echo()
                confirm(yes)
            await pipeline.run(cluster, plan, ApplyOptions(concurrency=apply_concurrency), wait, out.progress())
        out.finish()
