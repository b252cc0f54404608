"""`kapply tools list-labels`: the labels (or annotations, or owners) of every resource on the cluster that has no
`kapp` label (kapp's selector `!kapp`: in practice, all of them), counted. `-f` is accepted and ignored, as in kapp."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import client, run

if TYPE_CHECKING:
    from kapply.ui.output import Output

SELECTOR = "!kapp"


def list_labels(args: Args, out: Output) -> None:
    run(_list(args, out))


async def _list(args: Args, out: Output) -> None:
    from kapply.resources.labeled import list_labeled
    from kapply.ui.labels import labels_table

    async with client(args) as api:
        out.line(await api.target())
        # kapp lists every type but core/v1 Events and ComponentStatuses (events.k8s.io Events are counted)
        types = [t for t in (await api.cluster.discovery()).listable() if (t.group, t.kind) not in SKIPPED]
        resources = await list_labeled(api.cluster, types, SELECTOR)
        out.table(labels_table(resources, args["accessor"], values=args["values"]))
        out.finish()


SKIPPED = {("", "Event"), ("", "ComponentStatus")}
