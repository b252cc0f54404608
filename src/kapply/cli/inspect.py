"""`kapply inspect`: the resources of an app."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kapply.cli.common import (
    AppFlags,
    OutputFlags,
    app_options,
    bool_flag,
    existing_app,
    handle_errors,
    kube_options,
    output_options,
    run,
)

if TYPE_CHECKING:
    from kapply.resources.kubeconfig import KubeconfigFlags


@click.command()
@app_options
@bool_flag("-t", "--tree", help="Tree view")
@bool_flag("--status", help="Show status of each resource")
@output_options
@kube_options
@handle_errors
def inspect(**flags: object) -> None:
    """Inspect app"""
    run(_inspect(**flags))  # type: ignore[arg-type]


async def _inspect(*, app: AppFlags, tree: bool, status: bool, out: OutputFlags, kube: KubeconfigFlags) -> None:
    from kapply.app.record import list_resources
    from kapply.ui.resources import resources_table, status_table

    output = out.output()
    async with existing_app(kube, app) as (api, found):
        resources = await list_resources(api.cluster, found)
        output.table(status_table(found, resources) if status else resources_table(found, resources, tree=tree))
        output.finish()
