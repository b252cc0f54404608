"""`kapply ls`: the apps in a namespace, or in all namespaces."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kapply.cli.common import bool_flag, connect, handle_errors, kube_options, make_output, output_options, run

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


async def _list(
    *,
    namespace: str,
    all_namespaces: bool,
    tty: bool | None,
    as_json: bool,
    kube: KubeconfigFlags,
) -> None:

    from kapply.app import record
    from kapply.cli.common import namespace_or_default
    from kapply.ui.apps import apps_table

    out = make_output(tty, as_json)
    async with connect(kube) as cluster:
        ns = None if all_namespaces else namespace_or_default(namespace, cluster.namespace)
        apps = await record.list_apps(cluster, ns)
        title = "Apps in all namespaces" if ns is None else f"Apps in namespace '{ns}'"
        out.table(apps_table(apps, title, show_namespace=ns is None))
        out.finish()
