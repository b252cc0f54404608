"""`kapply tools diff` and `kapply deploy-config`: the commands that need no cluster."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.tree import FILE2
from kapply.flags import FILE, TOOLS_DIFF_FLAGS, diff_view

if TYPE_CHECKING:
    from kapply.ui.output import Output


def diff(args: Args, out: Output) -> None:
    """Diff files against files2 (no cluster, no rebase rules)."""
    from kapply.apply.planning import offline_changes
    from kapply.apply.view import change_set_text
    from kapply.config.config import Config
    from kapply.config.default import default_config
    from kapply.diff.local import local_changes
    from kapply.resources import manifests
    from kapply.ui.changes import changes_table, show_changes

    flags = diff_view(args.parsed.flags, TOOLS_DIFF_FLAGS)
    changes = local_changes(manifests.read(args[FILE], sys.stdin), manifests.read(args[FILE2], sys.stdin))
    found = offline_changes(changes)
    # kapply masks Secret values by default here, in the YAML too (kapp's tools diff has no mask rules)
    config = Config(diff_mask_rules=default_config().diff_mask_rules) if flags.mask else Config()
    text = change_set_text(
        found, config, flags.format(), yaml=flags.changes_yaml, diffs=flags.changes, known_strategies=False
    )
    show_changes(out, text)
    if flags.summary:
        out.table(changes_table(found, offline=True))
    out.finish()


def deploy_config(args: Args, out: Output) -> None:
    from kapply.config.default import default_config_yaml

    out.block(default_config_yaml())
    out.finish()
