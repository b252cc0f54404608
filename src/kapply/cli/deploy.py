"""`kapply deploy`: flags in, the deploy pipeline's stages called, its results shown."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import click

from kapply.cli.common import (
    Duration,
    ExitStatus,
    app_options,
    bool_flag,
    confirm,
    connect,
    handle_errors,
    kube_options,
    make_output,
    make_wait_options,
    output_options,
    run,
    wait_options,
)

if TYPE_CHECKING:
    from kapply.apply.loop import WaitOptions
    from kapply.resources.kubeconfig import KubeconfigFlags


@click.command()
@app_options
@click.option("-f", "--file", "files", multiple=True, help="Set file (format: /tmp/foo, -) (can repeat)")
@click.option("--labels", multiple=True, help="Set app labels (format: key=val, key=val) (can repeat)")
@bool_flag("-y", "--yes", help="Assumes yes for any prompt")
@output_options
@bool_flag("-c", "--diff-changes", help="Show changes")
@click.option("--diff-context", default=2, help="Show number of lines around changed lines")
@bool_flag("--diff-line-numbers", default=True, help="Show line numbers")
@bool_flag("--diff-mask", default=True, help="Apply masking rules")
@bool_flag("--diff-summary", default=True, help="Show diff summary")
@bool_flag(
    "--diff-against-last-applied",
    default=True,
    help="Show changes against last applied copy when possible",
)
@bool_flag(
    "--diff-server-side",
    default=True,
    help="Confirm updates found against the live object with a server-side dry run (kapply)",
)
@bool_flag("--diff-run", help="Show diff and exit")
@bool_flag("--diff-exit-status", help="Return specific exit status based on number of changes")
@click.option("--apply-concurrency", default=5, help="Maximum number of concurrent apply operations")
@click.option("--apply-default-update-strategy", default="", help="Change default update strategy")
@click.option(
    "--apply-timeout",
    type=Duration(),
    default="15m",
    show_default=True,
    help="Maximum amount of time to wait for a resource marked kapp.k14s.io/exists to appear",
)
@bool_flag("--apply-exit-status", help="Return specific exit status based on number of changes")
@click.option("--app-changes-max-to-keep", default=200, help="Maximum number of app changes to keep")
@bool_flag("--dangerous-allow-empty-list-of-resources", help="Allow to apply empty set of resources")
@bool_flag(
    "--dangerous-override-ownership-of-existing-resources",
    help="Steal existing resources from another app",
)
@bool_flag(
    "--default-label-scoping-rules",
    default=True,
    help="Use default label scoping rules",
)
@click.option("--into-ns", default="", help="Place resources into namespace")
@click.option("--map-ns", multiple=True, help="Map resources from one namespace into another (can repeat)")
@wait_options
@kube_options
@handle_errors
def deploy(**flags: object) -> None:
    """Deploy app"""
    run(_deploy(wait=make_wait_options(flags), **flags))  # type: ignore[arg-type]


def _pairs(values: tuple[str, ...], what: str) -> dict[str, str]:
    out = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"Expected {what} in format 'key=value', got '{value}'")
        out[key] = val
    return out


async def _deploy(
    *,
    app: str,
    namespace: str,
    app_namespace: str,
    files: tuple[str, ...],
    labels: tuple[str, ...],
    yes: bool,
    tty: bool | None,
    as_json: bool,
    diff_changes: bool,
    diff_context: int,
    diff_line_numbers: bool,
    diff_mask: bool,
    diff_summary: bool,
    diff_against_last_applied: bool,
    diff_server_side: bool,
    diff_run: bool,
    diff_exit_status: bool,
    apply_concurrency: int,
    wait: WaitOptions,
    apply_default_update_strategy: str,
    apply_timeout: float,
    apply_exit_status: bool,
    app_changes_max_to_keep: int,
    dangerous_allow_empty_list_of_resources: bool,
    dangerous_override_ownership_of_existing_resources: bool,
    default_label_scoping_rules: bool,
    into_ns: str,
    map_ns: tuple[str, ...],
    kube: KubeconfigFlags,
) -> None:
    from kapply import deploy as pipeline
    from kapply.app.preparation import Placement
    from kapply.app.record import validate_name
    from kapply.apply.execute import ApplyOptions
    from kapply.cli.common import namespace_or_default
    from kapply.config.rules import MaskCounter
    from kapply.ui import changes as changes_view

    validate_name(app)
    out = make_output(tty, as_json, tty_by_default=True)
    async with connect(kube) as cluster:
        ns = namespace_or_default(namespace, cluster.namespace)
        options = pipeline.DeployOptions(
            app=app,
            files=files,
            app_namespace=app_namespace or ns,
            placement=Placement(ns, into_ns, tuple(_pairs(map_ns, "--map-ns").items())),
            app_labels=_pairs(labels, "--labels"),
            against_last_applied=diff_against_last_applied,
            server_side_check=diff_server_side,
            override_ownership=dangerous_override_ownership_of_existing_resources,
            allow_empty=dangerous_allow_empty_list_of_resources,
            default_label_scoping=default_label_scoping_rules,
            app_changes_max_to_keep=app_changes_max_to_keep,
            apply=ApplyOptions(
                concurrency=apply_concurrency,
                default_update_strategy=apply_default_update_strategy,
                timeout=apply_timeout,
            ),
            wait=wait,
        )
        plan, target = await asyncio.gather(pipeline.plan(cluster, options, sys.stdin), cluster.target())
        out.line(target)
        if diff_changes:
            counter = MaskCounter() if diff_mask else None
            out.block(
                changes_view.all_line_diffs(
                    plan.changes, plan.config, counter, context=diff_context, line_numbers=diff_line_numbers
                )
            )
        if diff_summary:
            out.table(changes_view.changes_table(plan.changes, apply_default_update_strategy))
        pending = bool(plan.changes)
        if diff_run:
            out.finish(succeeded=not diff_exit_status)
            if diff_exit_status:
                raise ExitStatus(
                    f"Exiting after diffing with {'' if pending else 'no '}pending changes "
                    f"(exit status {3 if pending else 2})",
                    3 if pending else 2,
                )
            return
        if pending and not yes:
            click.echo()
            confirm(yes)
        deleted = await pipeline.run(cluster, plan, options, out.progress())
        if deleted:
            out.line(f"Deleted {deleted} older app changes")
        out.finish(succeeded=not apply_exit_status)
        if apply_exit_status:
            raise ExitStatus(
                f"Exiting after applying with {'' if pending else 'no '}changes (exit status {3 if pending else 2})",
                3 if pending else 2,
            )
