"""`kapply label`: the label selector of an app's resources (`kapp.k14s.io/app=<value>`), for kubectl and scripts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import existing_app, run

if TYPE_CHECKING:
    from kapply.ui.output import Output


def label(args: Args, out: Output) -> None:
    run(_label(args, out))


async def _label(args: Args, out: Output) -> None:
    async with existing_app(args, out) as (_, found):
        out.block(found.label_selector)  # no newline, as kapp: `kubectl get all -l "$(kapply label -a x)"`
        out.finish()
