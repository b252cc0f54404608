"""kapp's tables (go-cli-ui), byte for byte.

TTY: a title and a blank line, a header row, then rows; every cell but the last is padded to its column's width,
and every cell (the last too) is followed by a two-space border; an empty cell shows `-`, and a first cell equal to
the one above shows `^`. Then a blank line and the notes, and a blank line and `N <content>` when there is content.
Without a TTY: no title, header, notes or footer; cells padded as above but each followed by a tab, and no `^`.
JSON keys are the header names (`last_change_successful`), which may differ from the titles (`Lcs`).
A hidden column (go-cli-ui's hidden header: kctrl's Namespace without `-A`) is left out, in JSON too, unless
`--column` names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kapply.errors import KapplyError
from kapply.ui.escape import escaped


@dataclass(frozen=True, slots=True)
class Column:
    title: str  # what the TTY header shows (`Lcs`)
    key: str = ""  # the JSON key and the name `--column` takes; by default the title in lowercase words joined by _
    hidden: bool = False  # shown only when `--column` names it

    @property
    def name(self) -> str:
        return self.key or column_key(self.title)


def column_key(title: str) -> str:
    """kapp's key of a header: its lowercase alphanumeric words joined by `_` (`Op st.` -> `op_st`)."""
    return "_".join("".join(c if c.isalnum() else " " for c in title.lower()).split())


@dataclass(frozen=True, slots=True)
class Table:
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()
    content: str = ""  # `N <content>` footer, e.g. "apps"
    transpose: bool = False  # one block per row, a line per column (kapp's `inspect --status`)
    kctrl: bool = False  # `--column` checked as kctrl checks it (`only`)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def only(self, names: Sequence[str]) -> Table:
        """The table with only the columns `--column` names (by key, or by title made into a key), in table order,
        hidden ones included. An unknown name: kapp's `Failed to find header: <name>`; kctrl's check (cmdcore's
        PrintTable) names every unknown one, in the order given: `invalid column names: a,b`."""
        wanted = {column_key(n) for n in names}
        if self.kctrl:
            unknown = [n for n in names if not any(column_key(n) == c.name or n == c.title for c in self.columns)]
            if unknown:
                raise KapplyError(f"invalid column names: {','.join(unknown)}")
            wanted = {c.name for c in self.columns if any(column_key(n) == c.name or n == c.title for n in names)}
        missing = sorted(wanted - set(self.keys))
        if missing:
            raise KapplyError(f"Failed to find header: {missing[0]} (columns: {', '.join(self.keys)})")
        columns = tuple(replace(c, hidden=c.name not in wanted) for c in self.columns)
        return replace(self, columns=columns)

    def shown(self) -> Table:
        """The table without its hidden columns."""
        keep = [i for i, c in enumerate(self.columns) if not c.hidden]
        if len(keep) == len(self.columns):
            return self
        rows = tuple(tuple(row[i] for i in keep) for row in self.rows)
        return replace(self, columns=tuple(self.columns[i] for i in keep), rows=rows)


def _lines(cells: Sequence[Sequence[str]], border: str) -> list[str]:
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))] if cells else []
    last = len(widths) - 1
    return ["".join((c if i == last else c.ljust(widths[i])) + border for i, c in enumerate(row)) for row in cells]


def _transposed(table: Table, tty: bool) -> str:
    """Each row as a block of `Title  value` lines; a value of several lines continues under the first."""
    width = max(len(c.title) for c in table.columns)
    blocks = []
    for row in table.rows:
        lines = []
        for column, value in zip(table.columns, row, strict=True):
            for i, part in enumerate((value or "-").split("\n")):
                if tty:
                    lines.append(f"{(column.title if i == 0 else '').ljust(width)}  {part}  ")
                else:
                    lines.append(f"{part}\t")
        blocks.append("\n".join(lines) + "\n")
    text = "\n".join(blocks)
    if not tty:
        return text
    out = f"{table.title}\n\n" if table.title else ""
    out += text
    if table.content:
        out += f"\n{len(table.rows)} {table.content}\n"
    return out


def render(table: Table, *, tty: bool = True) -> str:
    """The table as kapp prints it (see the module docs), control characters shown as escapes (`kapply.ui.escape`:
    before the columns are measured, so that they stay aligned). A hidden first column takes the `^` (go-cli-ui
    compares the first cells, hidden or not): none is shown."""
    repeats = not (table.columns and table.columns[0].hidden)
    table = table.shown()
    table = Table(
        escaped(table.title),
        tuple(Column(escaped(c.title), c.key) for c in table.columns),
        tuple(tuple(escaped(cell) for cell in row) for row in table.rows),
        tuple(escaped(note) for note in table.notes),
        escaped(table.content),
        table.transpose,
    )
    if table.transpose:
        return _transposed(table, tty)
    if not tty:
        rows = [[c or "-" for c in row] for row in table.rows]
        return "".join(line + "\n" for line in _lines(rows, "\t"))
    cells: list[list[str]] = [[c.title for c in table.columns]]
    previous_first = None
    for row in table.rows:
        first = row[0] if row else ""
        repeated = repeats and first and first == previous_first
        cells.append(["^" if i == 0 and repeated else (c or "-") for i, c in enumerate(row)])
        previous_first = first
    lines = [table.title, ""] if table.title else []
    lines += _lines(cells, "  ")
    if table.notes:
        lines += ["", *table.notes]
    if table.content:
        lines += ["", f"{len(table.rows)} {table.content}"]
    return "\n".join(lines) + "\n"
