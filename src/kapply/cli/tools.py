"""`kapply tools diff` and `kapply deploy-config`: the commands that need no cluster."""

from __future__ import annotations

import click

from kapply.cli.common import AliasedGroup, DiffFlags, OutputFlags, diff_options, handle_errors, output_options


@click.group(cls=AliasedGroup)
def tools() -> None:
    """Tools"""


@click.command()
@click.option("-f", "--file", "files", multiple=True, help="Set file (format: /tmp/foo, -) (can repeat)")
@click.option("--file2", "files2", multiple=True, help="Set second file (format: /tmp/foo, -) (can repeat)")
@diff_options(prefix="")
@output_options
@handle_errors
def diff(files: tuple[str, ...], files2: tuple[str, ...], diff: DiffFlags, out: OutputFlags) -> None:
    """Diff files against files2 (no cluster, no rebase rules)"""
    import sys

    from kapply.apply.planning import cluster_changes
    from kapply.config.config import Config
    from kapply.config.default import default_config
    from kapply.diff.local import local_changes
    from kapply.diff.render import line_diffs
    from kapply.resources import manifests
    from kapply.ui.changes import changes_table

    output = out.output()
    changes = local_changes(manifests.read(files, sys.stdin), manifests.read(files2, sys.stdin))
    found = cluster_changes(changes, Config(), wait=False)
    if diff.changes:
        config = Config(diff_mask_rules=default_config().diff_mask_rules)
        output.block(line_diffs((c.change for c in found), config, diff.format()))
    if diff.summary:
        output.table(changes_table(found))
    output.finish()


@click.command(name="deploy-config")
def deploy_config() -> None:
    """Show default deploy config"""
    from kapply.config.default import default_config_yaml

    click.echo(default_config_yaml(), nl=False)


tools.add_command(diff)
