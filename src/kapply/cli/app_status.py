"""`kapply app status`: an App resource's status, with its ghost diffs, their suggested rebase rules, and drift."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import app_client, run
from kapply.errors import KapplyError

if TYPE_CHECKING:
    from kapply.ui.output import Output


def status(args: Args, out: Output) -> None:
    run(_status(args, out))


async def _status(args: Args, out: Output) -> None:
    from kapply.controller.apps import APPS
    from kapply.ui.app_status import show_app_status

    async with app_client(args, out, None) as (api, app, namespace):
        found = await api.cluster.get(APPS, namespace, app.name)
        if found is None:
            raise KapplyError(f"App resource '{app.name}' (namespace: {namespace}) does not exist")
        show_app_status(out, found)
        out.finish()
