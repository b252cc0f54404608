"""`kapply ls`: the apps in a namespace, or in all namespaces."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kapply.cli.common import OutputFlags, bool_flag, client, handle_errors, kube_options, output_options, run

if TYPE_CHECKING:
    from kapply.resources.kubeconfig import KubeconfigFlags


@click.command(name="list")
@click.option("-n", "--namespace", default="", help="Specified namespace ($KAPP_NAMESPACE or default from kubeconfig)")
@bool_flag("-A", "--all-namespaces", help="List apps in all namespaces")
@output_options
@kube_options
@handle_errors
def list_apps(**flags: object) -> None:
    """List all apps"""
    run(_list(**flags))  # type: ignore[arg-type]


async def _list(*, namespace: str, all_namespaces: bool, out: OutputFlags, kube: KubeconfigFlags) -> None:
    from kapply.ui.apps import apps_table

    output = out.output()
    async with client(kube, namespace) as api:
        apps = await api.list_apps(all_namespaces=all_namespaces)
        title = "Apps in all namespaces" if all_namespaces else f"Apps in namespace '{api.namespace()}'"
        output.table(apps_table(apps, title, show_namespace=all_namespaces))
        output.finish()
