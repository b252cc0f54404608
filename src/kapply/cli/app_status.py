"""`kapply app status`: kctrl's `app status` first (the App's Name, Namespace, Status and Metrics, then its last
reconcile's stages, followed until it ends: app_tail.py), then what kapply reports beyond kctrl, when the App has any:
its ghost diffs with the rebase rules that end them, its drift, and the fields a controller on the cluster owns
(kapply.ui.app_status). Those are shown even when the reconcile failed, before kctrl's error."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapply.cli.app_commands import IGNORE_NOT_EXISTS
from kapply.cli.command import Args
from kapply.cli.common import run
from kapply.errors import KapplyError
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.ui.output import Output


def status(args: Args, out: Output) -> None:
    run(_status(args, out))


def kapply_reports(status: Obj) -> bool:
    """Whether the App's status has something of kapply's to show: ghost diffs, drifted fields, owned fields."""
    owned = status.get("fieldOwners") or {}
    return bool(
        (status.get("ghostDiffs") or {}).get("diffs")
        or (status.get("drift") or {}).get("fields")
        or owned.get("knownOwners")
        or owned.get("held")
    )


async def _status(args: Args, out: Output) -> None:
    from kapply.cli.app_kctrl import app_name, connected_apps, not_found
    from kapply.cli.app_tail import current, follow
    from kapply.cli.package.tailing import status_of
    from kapply.ui.app_status import show_app_status
    from kapply.ui.packages import app_table

    name = app_name(args)
    async with connected_apps(args, out) as on:
        cluster = on.api.cluster
        app = await cluster.get(on.rtype, on.namespace, name)
        if app is None and not args[IGNORE_NOT_EXISTS]:
            raise not_found(on, name)
        out.table(app_table(app or {}))
        failure: KapplyError | None = None
        try:
            if app is None or not current(out, app):
                await follow(cluster, on.rtype, on.namespace, name, out, until_created=app is None)
        except KapplyError as e:
            failure = e
        latest = await cluster.get(on.rtype, on.namespace, name)
        if latest is not None and kapply_reports(status_of(latest)):
            show_app_status(out, latest)
        if failure is not None:
            raise failure
        out.finish()
