"""`kapply tools diff` and `kapply deploy-config`: the commands that need no cluster."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from kapply.cli import groups
from kapply.cli.command import Args

if TYPE_CHECKING:
    from kapply.ui.output import Output


def diff(args: Args, out: Output) -> None:
    """Diff files against files2 (no cluster, no rebase rules)."""
    from kapply.apply.planning import cluster_changes
    from kapply.config.config import Config
    from kapply.config.default import default_config
    from kapply.diff.local import local_changes
    from kapply.diff.render import hunks
    from kapply.resources import manifests
    from kapply.ui.changes import changes_table, show_hunks

    flags = groups.diff_flags(args, prefix="")
    changes = local_changes(manifests.read(args["file"], sys.stdin), manifests.read(args["file2"], sys.stdin))
    found = cluster_changes(changes, Config(), wait=False)
    if flags.changes:
        config = Config(diff_mask_rules=default_config().diff_mask_rules)
        show_hunks(out, hunks((c.change for c in found), config, flags.format()))
    if flags.summary:
        out.table(changes_table(found))
    out.finish()


def deploy_config(args: Args, out: Output) -> None:
    from kapply.config.default import default_config_yaml

    out.block(default_config_yaml())
    out.finish()
