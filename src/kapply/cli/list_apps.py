"""`kapply ls`: the apps in a namespace, or in all namespaces, optionally only those of an age or with labels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import client, run
from kapply.errors import KapplyError
from kapply.flags import FILTER_AGE, FILTER_LABELS, NAMESPACE

if TYPE_CHECKING:
    from kapply.ui.output import Output


def list_apps(args: Args, out: Output) -> None:
    run(_list(args, out))


def label_map(labels: Sequence[str]) -> dict[str, str]:
    """`--filter-labels` values (`key=val`) as kapp's LabelFlags reads them: a later value of a key wins."""
    found = {}
    for label in labels:
        key, equals, value = label.partition("=")
        if not equals:
            raise KapplyError("Expected label to be in 'key=val' format")
        if not key:
            raise KapplyError("Expected label key to be non-empty")
        found[key] = value
    return found


async def _list(args: Args, out: Output) -> None:
    from datetime import UTC, datetime

    from kapply import objects
    from kapply.app.record import CONFIGMAPS
    from kapply.resources.filters import ResourceFilter, parse_age
    from kapply.ui.apps import apps_table

    all_namespaces = args["all-namespaces"]
    async with client(args, args[NAMESPACE]) as api:
        out.line(await api.target())
        before, after = parse_age(args[FILTER_AGE], datetime.now(UTC))
        labels = label_map(args[FILTER_LABELS])
        apps = await api.list_apps(all_namespaces=all_namespaces)
        if before or after or labels:
            # kapp lists app records by label (its own and these) and keeps those created in the age range
            selector = ",".join(f"{k}={v}" for k, v in sorted({objects.IS_APP_LABEL: "", **labels}.items()))
            namespace = None if all_namespaces else api.namespace()
            records = await api.cluster.list(CONFIGMAPS, label_selector=selector, namespace=namespace)
            age = ResourceFilter(created_before=before, created_after=after)
            kept = {(objects.namespace(cm), objects.name(cm)) for cm in records if age.matches(cm)}
            apps = [app for app in apps if (app.namespace, app.configmap_name) in kept]
        title = "Apps in all namespaces" if all_namespaces else f"Apps in namespace '{api.namespace()}'"
        out.table(apps_table(apps, title, show_namespace=all_namespaces))
        out.finish()
