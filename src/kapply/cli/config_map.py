"""`kapply config-map list`: an app's ConfigMaps, key by key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import existing_app, run

if TYPE_CHECKING:
    from kapply.ui.output import Output


def list_config_maps(args: Args, out: Output) -> None:
    run(_list(args, out))


async def _list(args: Args, out: Output) -> None:
    from kapply.app.record import CONFIGMAPS
    from kapply.ui.config_maps import config_maps_table

    async with existing_app(args, out) as (api, found):
        config_maps = await api.cluster.list(CONFIGMAPS, label_selector=found.label_selector)
        out.table(config_maps_table(config_maps, values=args["values"]))
        out.finish()
