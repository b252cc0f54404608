"""kctrl's App tail (its AppTailer) for `kapply app status`, `kick` and `delete`: the App's changes as they come are
told by the package commands' tail (kapply.cli.package.app_tail, the same kctrl code); what is `app`'s own is here.

`status` first tells the App's current state (kctrl's `printTillCurrent`: its last reconcile from the first stage,
nothing while the App is being deleted), and stops there when that reconcile ended. `kick` and `delete` tell only the
changes after they begin. A failed reconcile ends the tail with kctrl's error (`Reconciling app: Deploy failed`,
`Reconciling app: ReconcileFailed: <usefulErrorMessage>`, exit 1). kctrl's tail has no time limit; `kick` and `delete`
give up after `--wait-timeout`, and an App already gone when `delete` begins to follow it is said deleted (kctrl's
informer, which never sees it go, would wait for ever)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from kapply.cli.package.app_tail import tail_app, tell
from kapply.cli.package.tailing import condition, progress, status_of
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.values import format_duration

if TYPE_CHECKING:
    from kapply.resources.cluster import Cluster, ResourceType
    from kapply.ui.output import Output


def current(out: Output, app: Obj) -> bool:
    """Tell the App's last reconcile from its first stage; True when it ended there (TailFailed when it failed)."""
    status = status_of(app)
    if condition(status) == "Deleting":
        return False
    return tell(out, progress({}, status, "", every_change=True), "app")


async def follow(
    cluster: Cluster,
    rtype: ResourceType,
    namespace: str,
    name: str,
    out: Output,
    timeout: float | None = None,
    *,
    until_created: bool = False,
) -> None:
    """Tell the App's changes from now until its reconcile ends or it is gone, within `timeout` seconds (None: no
    limit, as kctrl). An App that does not exist is gone, or with `until_created` (`status --ignore-not-exists`)
    followed from its creation on."""
    tailed = tail_app(cluster, rtype, namespace, name, out, absent_is_deleted=not until_created)
    try:
        await asyncio.wait_for(tailed, timeout)
    except TimeoutError:
        raise KapplyError(
            f"app/{name} ({rtype.api_version}) namespace: {namespace}: timed out waiting after "
            f"{format_duration(timeout or 0)}"
        ) from None
