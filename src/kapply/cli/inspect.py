"""`kapply inspect`: the resources of an app, as a table, a tree, their status or their YAML."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import existing_app, run
from kapply.flags import IGNORE_FAILING_API_SERVICES, SCOPE_TO_FALLBACK_NAMESPACES, resource_filter

if TYPE_CHECKING:
    from kapply.ui.output import Output


def inspect(args: Args, out: Output) -> None:
    run(_inspect(args, out))


async def _inspect(args: Args, out: Output) -> None:
    from kapply.app.record import inspect_resources
    from kapply.ui.resources import raw, raw_order, resources_table, status_table

    async with existing_app(args, out) as (api, found):
        resources = await inspect_resources(
            api.cluster,
            found,
            ignore_failing_api_services=args[IGNORE_FAILING_API_SERVICES],
            scope_to_fallback=args[SCOPE_TO_FALLBACK_NAMESPACES],
        )
        # after listing, as kapp: a bad value fails after the cluster was read
        found_filter = resource_filter(args.parsed.flags)
        if found_filter is not None:
            resources = found_filter.apply(resources)
        source = f"app '{found.name}'"
        if args["raw"]:
            for obj in raw_order(resources):
                out.block(raw(obj, managed_fields=args["managed-fields"]))
        elif args["status"]:
            out.table(status_table(source, resources))
        else:
            out.table(resources_table(source, resources, tree=args["tree"]))
        out.finish()
