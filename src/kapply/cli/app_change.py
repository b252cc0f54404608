"""`kapply app-change list|gc`: an app's change history."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kapply.cli.common import (
    AliasedGroup,
    AppFlags,
    OutputFlags,
    app_options,
    bool_flag,
    confirm,
    existing_app,
    handle_errors,
    kube_options,
    output_options,
    run,
)

if TYPE_CHECKING:
    from kapply.resources.kubeconfig import KubeconfigFlags


@click.group(cls=AliasedGroup, name="app-change")
def app_change() -> None:
    """App changes"""


@click.command(name="list")
@app_options
@bool_flag("--diff", help="Show the diff each change applied (kapply)")
@output_options
@kube_options
@handle_errors
def list_changes(**flags: object) -> None:
    """List app changes"""
    run(_list(**flags))  # type: ignore[arg-type]


async def _list(*, app: AppFlags, diff: bool, out: OutputFlags, kube: KubeconfigFlags) -> None:
    from kapply.app.history import list_changes
    from kapply.ui.apps import app_changes_table

    output = out.output()
    async with existing_app(kube, app) as (api, found):
        changes = await list_changes(api.cluster, found)
        output.table(app_changes_table(found, changes))
        if diff:
            for change in sorted(changes, key=lambda c: c.meta.started_at, reverse=True):
                output.block(f"# {change.name}: {change.meta.description}\n{change.diff or '(no diff recorded)'}\n")
        output.finish()


@click.command(name="garbage-collect")
@app_options
@click.option("--max", "max_to_keep", default=200, help="Maximum number of app changes to keep")
@bool_flag("-y", "--yes", help="Assumes yes for any prompt")
@kube_options
@handle_errors
def gc(**flags: object) -> None:
    """Garbage collect app changes"""
    run(_gc(**flags))  # type: ignore[arg-type]


async def _gc(*, app: AppFlags, max_to_keep: int, yes: bool, kube: KubeconfigFlags) -> None:
    from kapply.app import history

    async with existing_app(kube, app) as (api, found):
        total = len(await history.list_changes(api.cluster, found))
        confirm(yes)
        deleted = await history.gc(api.cluster, found, max_to_keep)
        click.echo(f"Kept {total - deleted}, deleted {deleted} app changes")


app_change.add_command(list_changes, aliases=("l", "ls"))
app_change.add_command(gc, aliases=("gc",))
