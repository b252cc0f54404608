"""The page of `--diff-ui-alpha`: a plan as one self-contained HTML document (inline CSS, no script, no external
asset), and the decision it asks for.

Everything shown comes from the cluster or the manifests, so every string goes through `inert`: HTML is escaped, and
characters that could change how text looks without being seen (terminal escapes, other control characters, bidi
overrides, line separators) are shown as visible `\\x1b`-style marks instead. Diffs are the terminal's, masked as the
terminal masks them (the caller passes masked hunks: see `kapply.cli.diff_ui`).
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from kapply.apply.planning import ClusterChange
from kapply.config.config import Config
from kapply.diff.attribution import OutsideField
from kapply.diff.drift import DriftPolicy
from kapply.diff.ghost import describe_field
from kapply.diff.render import Hunk
from kapply.graph import ChangeGraph
from kapply.objects import ResourceKey
from kapply.ui.changes import changes_table
from kapply.ui.table import Table


class Stage(StrEnum):
    """Where the decision stands; the page shows each differently."""

    ASKING = "asking"  # Apply and Cancel (or only Close, when nothing is asked)
    APPLYING = "applying"  # Apply was chosen; the command runs (the page refreshes itself)
    APPLIED = "applied"
    FAILED = "failed"
    CANCELLED = "cancelled"
    CLOSED = "closed"


FINAL = frozenset({Stage.APPLIED, Stage.FAILED, Stage.CANCELLED, Stage.CLOSED})

# What the page's buttons post to (`/<token>/<action>`), by whether the page asks for a decision.
ASKING_ACTIONS = {"apply": Stage.APPLYING, "cancel": Stage.CANCELLED}
SHOWING_ACTIONS = {"close": Stage.CLOSED}


@dataclass(frozen=True, slots=True)
class ChangeView:
    """One change on the page: its `@@ op resource @@` header, its (masked) line diff, the changes it waits for, and
    the fields someone other than kapply or kapp wrote, each with who wrote it."""

    header: str
    diff: str
    waits_for: tuple[str, ...] = ()
    outside: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Review:
    """What the page shows about one plan."""

    command: str  # "deploy" or "delete"
    title: str  # `Deploy app 'web' (namespace: prod)`
    target: str  # `Target cluster '...' (nodes: ...)`
    table: Table  # the terminal's Changes table
    changes: tuple[ChangeView, ...]  # in the order they are applied
    asks: bool  # Apply and Cancel; otherwise (--diff-run, nothing to apply) only Close
    outside_outcome: str = ""  # what the command does with fields others wrote
    outside_elsewhere: tuple[str, ...] = ()  # such fields of resources without a change on the page

    @property
    def actions(self) -> dict[str, Stage]:
        return ASKING_ACTIONS if self.asks else SHOWING_ACTIONS


_OUTCOME = {
    DriftPolicy.ENFORCE: "this deploy sets them back to the desired value",
    DriftPolicy.PRESERVE: "kept as the cluster has them (drift policy preserve)",
    DriftPolicy.WARN: "left as the cluster has them (drift policy warn)",
}


def review(
    command: str,
    title: str,
    target: str,
    changes: Sequence[ClusterChange],
    hunks: Sequence[Hunk],
    graph: ChangeGraph,
    *,
    asks: bool,
    config: Config,
    outside: Sequence[OutsideField] = (),
    policy: DriftPolicy = DriftPolicy.ENFORCE,
    default_update_strategy: str = "",
) -> Review:
    """The page's content for a plan: `hunks` and `graph` are the plan's (one hunk and one graph node per change, in
    plan order); changes are listed in the graph's order, each with what it waits for and the fields of `outside`
    that belong to it (values shown as the terminal's field-owner note shows them: never those of a resource that
    `config`'s diffMaskRules cover)."""
    found: dict[ResourceKey, list[str]] = {}
    for item in outside:
        line = describe_field(item.change.resource, item.field, config, item.written_by)
        found.setdefault(item.change.key, []).append(line)
    views = []
    for node in graph.order:
        cc = changes[node]
        views.append(
            ChangeView(
                hunks[node].header.strip(),
                hunks[node].body,
                tuple(graph.descriptions[d] for d in graph.waiting_for[node]),
                tuple(found.pop(cc.change.key, ())),
            )
        )
    elsewhere = tuple(line for lines in found.values() for line in lines)
    return Review(
        command,
        title,
        target,
        changes_table(changes, default_update_strategy),
        tuple(views),
        asks,
        _OUTCOME[policy] if outside else "",
        elsewhere,
    )


_SHOWN_AS_IS = frozenset("\n\t")


def _visible(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _is_hidden(char: str) -> bool:
    """Control (C0, DEL, C1), format (bidi overrides, zero-width) and line/paragraph separator characters."""
    return char not in _SHOWN_AS_IS and unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


def inert(text: str) -> str:
    """`text` as HTML that shows exactly its characters: markup escaped (quotes too, so it is safe in attributes),
    and hidden characters (see `_is_hidden`) as visible `\\x1b` / `\\u202e` marks."""
    out = []
    for char in text:
        if _is_hidden(char):
            out.append(f'<span class="ctl">{_visible(char)}</span>')
        else:
            out.append(html.escape(char, quote=True))
    return "".join(out)


_ADDED = re.compile(r"(\s*\d+ )?\+ ")  # `    12 + x` or, without line numbers, `+ x`
_REMOVED = re.compile(r"(\s*\d+\s+)?- ")  # ` 11     - x` or `- x`


def line_class(line: str) -> str:
    """How a line of the terminal's diff is marked: `add`, `del` or `same` (context lines and `...`)."""
    if _ADDED.match(line):
        return "add"
    if _REMOVED.match(line):
        return "del"
    return "same"


CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 2em 3em; color: #1d1d1f; background: #fff; }
h1 { font-size: 1.4em; margin: 1em 0 0.2em; }
h2 { font-size: 1.15em; margin: 1.6em 0 0.5em; }
h3 { font: 600 13px/1.4 ui-monospace, monospace; margin: 0 0 0.4em; }
.target { color: #555; margin: 0; }
.decision { margin: 1em 0; padding: 0.8em 1em; border-radius: 6px; background: #eef3fb; border: 1px solid #b9cbe8; }
.decision.applied { background: #e8f6ec; border-color: #9fd3ad; }
.decision.failed, .decision.cancelled { background: #fbeeee; border-color: #e2a9a9; }
.decision form { display: inline; margin-right: 0.6em; }
.decision p { margin: 0 0 0.6em; }
button { font: inherit; padding: 0.35em 1.4em; border-radius: 4px; border: 1px solid #888; cursor: pointer; }
button.apply { background: #1f6f3f; border-color: #1f6f3f; color: #fff; }
button.cancel { background: #fff; color: #8a1c1c; border-color: #8a1c1c; }
table { border-collapse: collapse; font: 13px/1.4 ui-monospace, monospace; }
th, td { text-align: left; padding: 0.2em 0.9em 0.2em 0; border-bottom: 1px solid #e3e3e3; vertical-align: top; }
th { border-bottom: 1px solid #999; }
.notes { font: 13px/1.4 ui-monospace, monospace; white-space: pre; color: #444; }
.change { margin: 1em 0 1.4em; padding: 0.6em 0.8em; border: 1px solid #ddd; border-radius: 6px; }
.change p, .change ul { margin: 0.2em 0; }
.owners { background: #fff7e0; border-left: 3px solid #e0b44a; padding: 0.3em 0.6em; margin: 0.4em 0; }
.owners ul, .waits ul { padding-left: 1.4em; font: 12px/1.4 ui-monospace, monospace; }
pre.diff { margin: 0.4em 0 0; padding: 0.4em; background: #fafafa; overflow-x: auto; font-size: 12px; }
pre.diff > span { display: block; }
.add { background: #e6ffed; color: #14532d; }
.del { background: #ffeef0; color: #7f1d1d; }
.ctl { color: #b00; background: #fde8e8; border-radius: 2px; }
""".strip()

# The Content-Security-Policy of every answer: nothing may load or run but the one stylesheet above (named by its hash,
# so an injected <style> would not apply either), and forms post only to the page's own server.
CSP = (
    "default-src 'none'; "
    f"style-src 'sha256-{base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()}'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

_BUTTONS = {"apply": ("Apply", "apply"), "cancel": ("Cancel", "cancel"), "close": ("Close", "close")}


def _decision(review: Review, token: str, stage: Stage, failure: str) -> str:
    command = review.command
    if stage is Stage.ASKING:
        if review.asks:
            text = (
                f"kapply waits for your decision. <b>Apply</b> runs the {command} as answering <code>y</code> to "
                f"<code>Continue? [yN]:</code> does; <b>Cancel</b> stops it as <code>n</code> does."
            )
        else:
            text = f"Nothing is applied from this page. <b>Close</b> ends the {command}'s wait for it."
        forms = "".join(
            f'<form method="post" action="/{inert(token)}/{action}">'
            f'<button type="submit" class="{_BUTTONS[action][1]}">{_BUTTONS[action][0]}</button></form>'
            for action in review.actions
        )
        return f'<section class="decision asking"><p>{text}</p>{forms}</section>'
    messages = {
        Stage.APPLYING: f"Applying: the {command} runs; its progress is in the terminal. This page follows it.",
        Stage.APPLIED: f"Applied: the {command} finished.",
        Stage.FAILED: f"Failed: the {command} stopped with an error: {inert(failure)}",
        Stage.CANCELLED: "Cancelled: nothing was applied.",
        Stage.CLOSED: "Closed.",
    }
    return f'<section class="decision {stage.value}"><p>{messages[stage]}</p></section>'


def _table(table: Table) -> str:
    head = "".join(f"<th>{inert(c.title)}</th>" for c in table.columns)
    rows = "".join("<tr>" + "".join(f"<td>{inert(cell or '-')}</td>" for cell in row) + "</tr>" for row in table.rows)
    notes = f'<p class="notes">{inert(chr(10).join(table.notes))}</p>' if table.notes else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{notes}"


def _list(items: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{inert(item)}</li>" for item in items) + "</ul>"


def _change(index: int, view: ChangeView, outcome: str) -> str:
    parts = [f'<section class="change" id="change-{index}"><h3>{inert(view.header)}</h3>']
    if view.waits_for:
        parts.append(f'<div class="waits"><p>Waits for:</p>{_list(view.waits_for)}</div>')
    if view.outside:
        parts.append(
            f'<div class="owners"><p>Fields last written by others: {inert(outcome)}</p>{_list(view.outside)}</div>'
        )
    lines = view.diff.rstrip("\n").split("\n") if view.diff.strip() else []
    if lines:
        body = "".join(f'<span class="{line_class(line)}">{inert(line) or " "}</span>' for line in lines)
        parts.append(f'<pre class="diff">{body}</pre>')
    else:
        parts.append("<p>No lines change.</p>")
    parts.append("</section>")
    return "".join(parts)


def page(review: Review, token: str, stage: Stage = Stage.ASKING, failure: str = "") -> str:
    """The whole page for `stage`; `failure` is the error of a failed run. While the run goes on, the page reloads
    itself every second (a `refresh` meta tag: no script)."""
    refresh = f'<meta http-equiv="refresh" content="1; url=/{inert(token)}/">' if stage is Stage.APPLYING else ""
    elsewhere = ""
    if review.outside_elsewhere:
        elsewhere = (
            f'<div class="owners"><p>Fields last written by others, of resources this {review.command} leaves as they '
            f"are: {inert(review.outside_outcome)}</p>{_list(review.outside_elsewhere)}</div>"
        )
    changes = "".join(_change(i, view, review.outside_outcome) for i, view in enumerate(review.changes))
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>kapply: {inert(review.title)}</title>{refresh}"
        f"<style>{CSS}</style></head><body>"
        f'<h1>{inert(review.title)}</h1><p class="target">{inert(review.target)}</p>'
        f"{_decision(review, token, stage, failure)}"
        f"<h2>Changes</h2>{_table(review.table)}{elsewhere}"
        "<h2>Diffs</h2><p>In apply order: a change starts once the changes it waits for are done.</p>"
        f"{changes or '<p>No changes.</p>'}"
        "</body></html>\n"
    )
