"""`kapply deploy`: flags in, the deploy planned and run through the public API, its results shown."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import click

from kapply.cli.common import (
    AppFlags,
    DiffFlags,
    ExitStatus,
    OutputFlags,
    app_options,
    apply_options,
    bool_flag,
    client,
    confirm,
    diff_options,
    handle_errors,
    kube_options,
    output_options,
    run,
    wait_options,
)

if TYPE_CHECKING:
    from kapply.apply.options import ApplyOptions, WaitOptions
    from kapply.resources.kubeconfig import KubeconfigFlags


@click.command()
@app_options
@click.option("-f", "--file", "files", multiple=True, help="Set file (format: /tmp/foo, -) (can repeat)")
@click.option("--labels", multiple=True, help="Set app labels (format: key=val, key=val) (can repeat)")
@bool_flag("-y", "--yes", help="Assumes yes for any prompt")
@output_options
@diff_options()
@bool_flag(
    "--diff-server-side",
    default=True,
    help="Confirm updates found against the live object with a server-side dry run (kapply)",
)
@apply_options()
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
    run(_deploy(**flags))  # type: ignore[arg-type]


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
    app: AppFlags,
    files: tuple[str, ...],
    labels: tuple[str, ...],
    yes: bool,
    out: OutputFlags,
    diff: DiffFlags,
    diff_server_side: bool,
    apply: ApplyOptions,
    apply_exit_status: bool,
    app_changes_max_to_keep: int,
    dangerous_allow_empty_list_of_resources: bool,
    dangerous_override_ownership_of_existing_resources: bool,
    default_label_scoping_rules: bool,
    into_ns: str,
    map_ns: tuple[str, ...],
    wait: WaitOptions,
    kube: KubeconfigFlags,
) -> None:
    from kapply import deploy as pipeline
    from kapply.ui.changes import changes_table

    options = pipeline.DeployOptions(
        into_namespace=into_ns,
        namespace_map=_pairs(map_ns, "--map-ns"),
        app_labels=_pairs(labels, "--labels"),
        diff=pipeline.DiffOptions(diff.against_last_applied, diff_server_side),
        override_ownership=dangerous_override_ownership_of_existing_resources,
        allow_empty=dangerous_allow_empty_list_of_resources,
        default_label_scoping=default_label_scoping_rules,
        app_changes_max_to_keep=app_changes_max_to_keep,
        apply=apply,
        wait=wait,
    )
    output = out.output(tty_by_default=True)
    async with client(kube, app.namespace) as api:
        planning = api.plan_deploy(
            app.name, files=files, app_namespace=app.app_namespace or None, options=options, stdin=sys.stdin
        )
        plan, target = await asyncio.gather(planning, api.target())
        output.line(target)
        if diff.changes:
            output.block(plan.line_diffs(diff.format()))
        if diff.summary:
            output.table(changes_table(plan.changes, apply.default_update_strategy))
        pending = plan.pending
        if diff.run:
            output.finish(succeeded=not diff.exit_status)
            if diff.exit_status:
                raise ExitStatus(
                    f"Exiting after diffing with {'' if pending else 'no '}pending changes "
                    f"(exit status {3 if pending else 2})",
                    3 if pending else 2,
                )
            return
        if pending and not yes:
            click.echo()
            confirm(yes)
        result = await api.run_deploy(plan, progress=output.progress())
        if result.deleted_app_changes:
            output.line(f"Deleted {result.deleted_app_changes} older app changes")
        output.finish(succeeded=not apply_exit_status)
        if apply_exit_status:
            raise ExitStatus(
                f"Exiting after applying with {'' if pending else 'no '}changes (exit status {3 if pending else 2})",
                3 if pending else 2,
            )
