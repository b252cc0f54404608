"""`kapply tools diff` and `kapply deploy-config`: the commands that need no cluster."""

from __future__ import annotations

import click

from kapply.cli.common import AliasedGroup, bool_flag, handle_errors, make_output, output_options


@click.group(cls=AliasedGroup)
def tools() -> None:
    """Tools"""


@click.command()
@click.option("-f", "--file", "files", multiple=True, help="Set file (format: /tmp/foo, -) (can repeat)")
@click.option("--file2", "files2", multiple=True, help="Set second file (format: /tmp/foo, -) (can repeat)")
@bool_flag("-c", "--changes", help="Show changes")
@click.option("--context", default=2, help="Show number of lines around changed lines")
@bool_flag("--line-numbers", default=True, help="Show line numbers")
@bool_flag("--mask", default=True, help="Apply masking rules")
@bool_flag("--summary", default=True, help="Show diff summary")
@output_options
@handle_errors
def diff(
    files: tuple[str, ...],
    files2: tuple[str, ...],
    changes: bool,
    context: int,
    line_numbers: bool,
    mask: bool,
    summary: bool,
    tty: bool | None,
    as_json: bool,
) -> None:
    """Diff files against files2 (no cluster, no rebase rules)"""
    import sys

    from kapply.apply.loop import cluster_changes
    from kapply.config.config import Config
    from kapply.config.rules import MaskCounter
    from kapply.diff.local import local_changes
    from kapply.resources import manifests
    from kapply.ui.changes import all_line_diffs, changes_table

    out = make_output(tty, as_json)
    found = cluster_changes(
        local_changes(manifests.read(files, sys.stdin), manifests.read(files2, sys.stdin)), Config(), wait=False
    )
    if changes:
        from kapply.config.default import default_config

        config = Config(diff_mask_rules=default_config().diff_mask_rules)
        out.block(
            all_line_diffs(found, config, MaskCounter() if mask else None, context=context, line_numbers=line_numbers)
        )
    if summary:
        out.table(changes_table(found))
    out.finish()


@click.command(name="deploy-config")
def deploy_config() -> None:
    """Show default deploy config"""
    from kapply.config.default import default_config_yaml

    click.echo(default_config_yaml(), nl=False)


tools.add_command(diff)
