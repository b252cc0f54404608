"""`kapply inspect`: the resources of an app."""

from __future__ import annotations

import sys

import click

from kapply.cli.common import app_options, connect, handle_errors, kube_options, run


@click.command()
@app_options
@click.option("-t", "--tree", is_flag=True, help="Tree view")
@click.option("--tty/--no-tty", default=False, help="Force TTY-like output")
@kube_options
@handle_errors
def inspect(**flags: object) -> None:
    """Inspect app"""
    run(_inspect(**flags))  # type: ignore[arg-type]


async def _inspect(*, app: str, namespace: str, app_namespace: str, tree: bool, tty: bool, kubeconfig: str | None,
                   kubeconfig_context: str | None, kubeconfig_yaml: str | None) -> None:
    from kapply.app import record
    from kapply.cli.common import namespace_or_default
    from kapply.delete import app_resources
    from kapply.errors import KapplyError
    from kapply.ui.resources import resources_table
    from kapply.ui.table import render

    async with connect(kubeconfig, kubeconfig_context, kubeconfig_yaml) as cluster:
        ns = app_namespace or namespace_or_default(namespace, cluster.namespace)
        found = await record.find(cluster, ns, app)
        if found is None:
            raise KapplyError(f"App '{app}' (namespace: {ns}) does not exist")
        resources = await app_resources(cluster, found, await cluster.discovery())
        click.echo(render(resources_table(found, resources, tree=tree), tty=tty or sys.stdout.isatty()), nl=False)
