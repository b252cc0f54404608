"""`kapply app-change list|gc`: an app's change history."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import confirm, existing_app, run
from kapply.errors import KapplyError

if TYPE_CHECKING:
    from kapply.app.history import AppChange
    from kapply.ui.output import Output


def list_changes(args: Args, out: Output) -> None:
    run(_list(args, out))


_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
_DATE = re.compile(r"\d{4}-\d\d-\d\d")


def parse_time(text: str) -> datetime:
    """A `--before`/`--after` value as kapp reads it: RFC 3339 (`2022-01-10T12:15:25Z`) or a date (`2022-01-10`,
    midnight UTC)."""
    try:
        if _RFC3339.fullmatch(text):
            return datetime.fromisoformat(text.replace("Z", "+00:00"))
        if _DATE.fullmatch(text):
            return datetime.fromisoformat(text).replace(tzinfo=UTC)
    except ValueError:
        pass  # a day or hour out of range
    raise KapplyError(f"unrecognized time format {text}, supported formats: [2006-01-02T15:04:05Z07:00 2006-01-02]")


async def _list(args: Args, out: Output) -> None:
    from kapply.app.history import list_changes
    from kapply.ui.apps import app_changes_table

    async with existing_app(args, out) as (api, found):
        changes = await list_changes(api.cluster, found)
        before = parse_time(args["before"]) if args["before"] else None
        after = parse_time(args["after"]) if args["after"] else None
        if before and after and before < after:
            raise KapplyError(f"After time {args['after']} should be less than before time {args['before']}")
        changes = [
            c for c in changes if (before is None or _started(c) < before) and (after is None or _started(c) > after)
        ]
        out.table(app_changes_table(found, changes))
        if args["diff"]:
            for change in sorted(changes, key=lambda c: c.meta.started_at, reverse=True):
                out.block(f"# {change.name}: {change.meta.description}\n{change.diff or '(no diff recorded)'}\n")
        out.finish()


def _started(change: AppChange) -> datetime:
    return datetime.fromisoformat(change.meta.started_at.replace("Z", "+00:00"))


def gc(args: Args, out: Output) -> None:
    run(_gc(args, out))


async def _gc(args: Args, out: Output) -> None:
    from kapply.app import history
    from kapply.ui.apps import app_changes_table

    async with existing_app(args, out) as (api, found):
        changes = await history.list_changes(api.cluster, found)
        doomed = history.to_collect(changes, args["max"])
        out.table(app_changes_table(found, doomed, title="App changes to delete"))
        confirm(args, out)
        deleted = await history.gc(api.cluster, found, args["max"])
        out.line(f"Kept {len(changes) - deleted}, deleted {deleted} app changes")
        out.finish()
