"""The `kapply` command group. Subcommands import their stage lazily so that
start-up stays fast (`kapply version` imports no Kubernetes client)."""

from __future__ import annotations

import click

from kapply import __version__
from kapply.cli.common import AliasedGroup


def print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"kapply version {__version__}")
        ctx.exit()


@click.group(cls=AliasedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-v",
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=print_version,
    help="Print the version.",
)
def kapply() -> None:
    """kapply helps to manage applications on your Kubernetes cluster."""


@kapply.command()
def version() -> None:
    """Print the client version."""
    click.echo(f"kapply version {__version__}")


def _register() -> None:
    from kapply.cli.app_change import app_change
    from kapply.cli.delete import delete
    from kapply.cli.deploy import deploy
    from kapply.cli.inspect import inspect
    from kapply.cli.list_apps import list_apps
    from kapply.cli.tools import deploy_config, tools

    kapply.add_command(deploy, aliases=("d", "dep"))
    kapply.add_command(delete)
    kapply.add_command(inspect, aliases=("i", "is", "insp"))
    kapply.add_command(list_apps, "list", aliases=("l", "ls"))
    kapply.add_command(app_change, aliases=("ac", "app-changes", "appchange", "appchanges"))
    kapply.add_command(tools, aliases=("t",))
    kapply.add_command(deploy_config)


def main() -> None:
    _register()
    kapply(prog_name="kapply")
