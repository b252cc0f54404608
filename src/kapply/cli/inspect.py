"""`kapply inspect`: the resources of an app."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kapply.cli.common import (
    app_options,
    bool_flag,
    connect,
    handle_errors,
    kube_options,
    make_output,
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


async def _inspect(
    *,
    app: str,
    namespace: str,
    app_namespace: str,
    tree: bool,
    status: bool,
    tty: bool | None,
    as_json: bool,
    kube: KubeconfigFlags,
) -> None:

    from kapply.app import record
    from kapply.cli.common import app_namespace_or_default
    from kapply.delete import app_resources
    from kapply.ui.resources import resources_table, status_table

    out = make_output(tty, as_json)
    async with connect(kube) as cluster:
        found = await record.require(
            cluster, app_namespace_or_default(app_namespace, namespace, cluster.namespace), app
        )
        resources = await app_resources(cluster, found, await cluster.discovery())
        out.table(status_table(found, resources) if status else resources_table(found, resources, tree=tree))
        out.finish()
