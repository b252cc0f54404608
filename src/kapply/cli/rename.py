"""`kapply rename`: give an app a new name, or move its record to another namespace."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import app_client, confirm, run
from kapply.errors import AppNotFoundError, KapplyError

if TYPE_CHECKING:
    from kapply.ui.output import Output


def rename(args: Args, out: Output) -> None:
    run(_rename(args, out))


async def _rename(args: Args, out: Output) -> None:
    from kapply.app import record
    from kapply.app.rename import rename

    async with app_client(args, out, None) as (api, app, namespace):
        found = await record.find(api.cluster, namespace, app.name)
        if found is None:
            raise AppNotFoundError(record.missing(namespace, app.name) + await record.elsewhere(api.cluster, app.name))
        new_name, new_namespace = args["new-name"], args["new-namespace"]
        if not new_name and not new_namespace:
            raise KapplyError("Expected either --new-name or/and --new-namespace to be supplied")
        # As kapp: the messages and the default new namespace are -n's, even when --app-namespace holds the record.
        flag_namespace = api.namespace()
        new_name, new_namespace = new_name or found.name, new_namespace or flag_namespace
        out.line(
            f"Renaming '{found.name}' (namespace: {flag_namespace}) to '{new_name}' (namespace: {new_namespace}) "
            "(app changes will not be renamed)"
        )
        confirm(args, out)
        await rename(api.cluster, found, new_name, new_namespace)
        out.finish()
