"""kapp's text tables: a title, a header, rows padded to column width with a two-space
border after every cell, `-` for empty cells and `^` for a first cell repeated from the
row above; then notes, one per line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Table:
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()
    content: str = ""  # `N <content>` footer, e.g. "apps"
    json_keys: tuple[str, ...] = field(default=())

    def keys(self) -> tuple[str, ...]:
        """JSON keys: the lowercase alphanumeric words of each header, joined by `_` (kapp's --json)."""
        if self.json_keys:
            return self.json_keys
        out = []
        for title in self.header:
            words = "".join(c if c.isalnum() else " " for c in title.lower()).split()
            out.append("_".join(words))
        return tuple(out)


def render(table: Table, *, tty: bool = True) -> str:
    """The table as kapp prints it; without a TTY, tab-separated rows with no title, notes or `^`."""
    if not tty:
        lines = ["\t".join(table.header)] + ["\t".join(row) for row in table.rows]
        return "\n".join(lines) + "\n"
    cells: list[Sequence[str]] = [table.header]
    previous_first = None
    for row in table.rows:
        first = row[0] if row else ""
        cells.append(["^" if i == 0 and first and first == previous_first else (c or "-") for i, c in enumerate(row)])
        previous_first = first
    widths = [max(len(r[i]) for r in cells) for i in range(len(table.header))]
    lines = [f"{table.title}", ""] if table.title else []
    for cell_row in cells:
        lines.append("".join(c.ljust(w) + "  " for c, w in zip(cell_row, widths, strict=True)))
    if table.notes:
        lines.append("")
        lines += table.notes
    if table.content:
        lines += ["", f"{len(table.rows)} {table.content}"]
    return "\n".join(lines) + "\n"
