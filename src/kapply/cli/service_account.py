"""`kapply service-account list`: an app's ServiceAccounts and the Roles they are bound to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import existing_app, run

if TYPE_CHECKING:
    from kapply.ui.output import Output

# What the table is made of; listing only these types finds the same rows as listing every type, as kapp does.
KINDS = (
    ("", "ServiceAccount"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
)


def list_service_accounts(args: Args, out: Output) -> None:
    run(_list(args, out))


async def _list(args: Args, out: Output) -> None:
    from kapply.app.record import fallback_namespaces
    from kapply.resources.labeled import list_labeled, types_in_scope
    from kapply.ui.service_accounts import service_accounts_table

    async with existing_app(args, out) as (api, found):
        types = types_in_scope(await api.cluster.discovery(), KINDS)
        resources = await list_labeled(api.cluster, types, found.label_selector, fallback_namespaces(found))
        out.table(service_accounts_table(resources))
        out.finish()
