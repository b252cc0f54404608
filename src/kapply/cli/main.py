"""The `kapply` command group. Subcommands import their stage lazily so that
start-up stays fast (`kapply version` imports no Kubernetes client)."""

from __future__ import annotations

import click

from kapply import __version__


def print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"kapply version {__version__}")
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--version", is_flag=True, expose_value=False, is_eager=True,
              callback=print_version, help="Print the version.")
def kapply() -> None:
    """kapply helps to manage applications on your Kubernetes cluster."""


@kapply.command()
def version() -> None:
    """Print the client version."""
    click.echo(f"kapply version {__version__}")


def main() -> None:
    kapply(prog_name="kapply")
