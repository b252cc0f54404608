"""`kapply package installed history` and `rollback` (kapply's own, as `helm history` and `helm rollback`): the
revisions kapply's controller keeps of an install (kapply.packaging.revisions), and going back to one of them with
the user's own rights. What a rollback changes and how it runs are kapply.packaging.rollback's, which the dashboard's
"Roll back to this revision" runs too: here, what changes is shown and asked (`-y`), and the reconcile waited for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import confirm, run
from kapply.errors import KapplyError

if TYPE_CHECKING:
    from kapply.packaging.rollback import Summary
    from kapply.ui.output import Output
    from kapply.ui.table import Table

TO_REVISION = "to-revision"


def history(args: Args, out: Output) -> None:
    run(_history(args, out))


def rollback(args: Args, out: Output) -> None:
    run(_rollback(args, out))


def history_table(name: str, namespace: str, revisions: list[Summary]) -> Table:
    """`revisions`: newest first."""
    from kapply.ui.table import Column, Table

    columns = (Column("Revision"), Column("Version"), Column("Created"), Column("Values digest"))
    rows = tuple((str(r.number), r.version, r.created, r.digest) for r in revisions)
    return Table(f"Revisions of package install '{name}' in namespace '{namespace}'", columns, rows, kctrl=True)


async def _history(args: Args, out: Output) -> None:
    from kapply.cli.package.common import connected
    from kapply.cli.package.installed import _existing, _name
    from kapply.controller.vocabulary_choice import install as speaks
    from kapply.packaging.rollback import summaries

    name = _name(args)
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        install = await _existing(api, vocabulary, namespace, name)
        out.table(history_table(name, namespace, await summaries(api.cluster, install)))
        out.finish()


async def _rollback(args: Args, out: Output) -> None:
    from kapply.cli.package.common import connected, log, wait_flags
    from kapply.cli.package.installed import _existing, _name
    from kapply.cli.package.waiting import wait_for_app_paused, wait_for_install
    from kapply.controller.vocabulary_choice import install as speaks
    from kapply.packaging.revisions import listed
    from kapply.packaging.rollback import chosen, described, planned, roll_back

    name = _name(args)
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        install = await _existing(api, vocabulary, namespace, name)
        revisions = await listed(api.cluster, namespace, install)
        if not revisions:
            raise KapplyError(
                f"Package install '{name}' in namespace '{namespace}' has no revisions (kapply's controller keeps "
                "them, with the install's service account)"
            )
        plan = await planned(api.cluster, install, chosen(revisions, args[TO_REVISION]))
        out.line("\n".join(described(plan, name, namespace)))
        confirm(args, out)
        wait, cluster = wait_flags(args), api.cluster

        async def paused() -> None:
            if wait.enabled:
                await wait_for_app_paused(cluster, vocabulary, namespace, name, wait)

        await roll_back(cluster, vocabulary.install.rtype, install, plan, lambda said: log(out, said), paused)
        if wait.enabled:
            await wait_for_install(cluster, vocabulary, namespace, name, out, wait)
        out.finish()
