"""Where command output goes, in kapp's three modes (go-cli-ui's ConfUI, NonTTYUI, JSONUI and PaddingUI).

- TTY (`--tty`, the default for deploy and delete, or stdout a terminal): lines, progress, diffs, tables with
  titles and notes, and `Succeeded`; a blank line before each call except between two "raw" ones (progress lines
  and blocks), so consecutive diffs and progress lines stay together.
- non-TTY: lines and progress dropped; tables without title, header or notes, tab-separated; blocks kept.
- JSON (`--json`): everything buffered and printed at exit as `{"Tables": ..., "Blocks": ..., "Lines": ...}`
  with a 4-space indent, empty lists as `null`, row keys sorted, and no newline after the closing brace; an error
  is the last line.

Outside JSON, control characters are shown as escapes (`kapply.ui.escape`), except in `raw` blocks (a container's
log lines, shown as it wrote them).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from kapply.ui.escape import escaped
from kapply.ui.table import Table, render


class Output:
    def __init__(
        self, *, tty: bool, as_json: bool = False, columns: Sequence[str] = (), out: TextIO | None = None
    ) -> None:
        self.tty = tty and not as_json
        self.as_json = as_json
        self.columns = tuple(columns)
        self.out = out or sys.stdout
        self._tables: list[dict[str, Any]] = []
        self._blocks: list[str] = []
        self._lines: list[str] = []
        self._last: str | None = None  # "raw" or "auto": the kind of the previous call, None before the first

    def _write(self, text: str, kind: str, *, raw: bool = False) -> None:
        if self._last is not None and not (kind == "raw" and self._last == "raw"):
            self.out.write("\n")
        self.out.write(text if raw else escaped(text))
        self.out.flush()
        self._last = kind

    def line(self, text: str) -> None:
        """A message (PrintLinef): TTY and JSON only."""
        if self.as_json:
            self._lines.append(text)
        elif self.tty:
            self._write(text + "\n", "auto")

    def begin_line(self, text: str) -> None:
        """A line that is part of a stream (BeginLinef: progress, a diff's `@@` header): TTY and JSON only."""
        if self.as_json:
            self._lines.append(text)
        elif self.tty:
            self._write(text, "raw")

    def notice(self, text: str) -> None:
        """A line kapp writes straight to stdout, past its UI (`Pod watching error: ...`): in every mode, with no
        blank line around it; in JSON, one of the lines. (kapp ends it with no newline, so that the next line is
        glued to it, and writes it before a JSON document; kapply ends the line and keeps the document whole.)"""
        if self.as_json:
            self._lines.append(text)
            return
        self.out.write(escaped(text) + "\n")
        self.out.flush()

    def block(self, text: str, *, raw: bool = False) -> None:
        """Raw text, such as a diff's lines (PrintBlock): in every mode. With `raw`, control characters are written
        as they are (a container's log lines)."""
        if self.as_json:
            self._blocks.append(text)
        elif text:
            self._write(text, "raw", raw=raw)

    def table(self, table: Table) -> None:
        if self.columns:
            table = table.only(self.columns)
        if self.as_json:
            table = table.shown()
            self._tables.append(
                {
                    "Content": table.content,
                    "Header": dict(sorted(zip(table.keys, (c.title for c in table.columns), strict=True))),
                    "Rows": [dict(sorted(zip(table.keys, row, strict=True))) for row in table.rows],
                    "Notes": list(table.notes) or None,
                }
            )
        else:
            self._write(render(table, tty=self.tty), "auto")

    def prompt(self, text: str) -> None:
        """The confirmation question; always shown (it waits for an answer)."""
        if self._last is not None:
            self.out.write("\n")
        self.out.write(escaped(text))
        self.out.flush()
        self._last = "auto"

    def finish(self, *, succeeded: bool = True) -> None:
        """`Succeeded` (TTY and JSON), then the buffered JSON document."""
        if succeeded:
            self.line("Succeeded")
        if self.as_json:
            self._flush_json()

    def error_line(self, text: str) -> None:
        """A message on stderr that does not end the command (ErrorLinef), in every mode: one of the lines in JSON;
        otherwise the blank line before it goes to stdout (PaddingUI), and the next output has one before it."""
        if self.as_json:
            self._lines.append(text)
            return
        if self._last is not None:
            self.out.write("\n")
            self.out.flush()
        print(escaped(text), file=sys.stderr, flush=True)
        self._last = "auto"

    def fail(self, message: str) -> None:
        """An error: the last of the JSON document's lines, or on stderr."""
        if self.as_json:
            self._lines.append(message)
            self._flush_json()
            return
        if self._last is not None:  # PaddingUI: the blank line before it goes to stdout
            self.out.write("\n")
            self.out.flush()
        print(escaped(message), file=sys.stderr, flush=True)

    def _flush_json(self) -> None:
        doc = {"Tables": self._tables or None, "Blocks": self._blocks or None, "Lines": self._lines or None}
        self.out.write(_go_escaped(json.dumps(doc, indent=4, ensure_ascii=False)))
        self.out.flush()
        self._tables, self._blocks, self._lines = [], [], []


_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _go_escaped(text: str) -> str:
    """JSON as Go's encoding/json writes it: `<`, `>`, `&` (HTML-safe) and U+2028/U+2029 escaped. Only strings can
    hold these characters, so escaping the whole document escapes exactly them."""
    return text.translate(_GO_ESCAPES)
