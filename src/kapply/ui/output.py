"""Where command output goes, in kapp's three modes.

- TTY (the default for deploy and delete, or when stdout is a terminal): titles,
  blank lines between sections, progress lines and `Succeeded`.
- non-TTY: tables tab-separated with no title or notes; lines and progress dropped.
- JSON (`--json`): everything buffered and printed at exit as
  `{"Tables": [...], "Blocks": [...], "Lines": [...]}` with a 4-space indent.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from kapply.ui.messages import Progress
from kapply.ui.table import Table, render


class Output:
    def __init__(self, *, tty: bool, as_json: bool = False, out: TextIO | None = None) -> None:
        self.tty = tty and not as_json
        self.as_json = as_json
        self.out = out or sys.stdout
        self._tables: list[dict[str, Any]] = []
        self._blocks: list[str] = []
        self._lines: list[str] = []
        self._printed = False

    def _print(self, text: str, *, spaced: bool) -> None:
        if spaced and self._printed:
            self.out.write("\n")
        self.out.write(text)
        self.out.flush()
        self._printed = True

    def line(self, text: str) -> None:
        """A message line (PrintLinef): shown in TTY mode only."""
        if self.as_json:
            self._lines.append(text)
        elif self.tty:
            self._print(text + "\n", spaced=True)

    def block(self, text: str) -> None:
        """Raw text, such as diffs: always shown."""
        if self.as_json:
            self._blocks.append(text)
        elif text:
            self._print(text, spaced=True)

    def table(self, table: Table) -> None:
        if self.as_json:
            keys = table.keys()
            self._tables.append(
                {
                    "Content": table.content,
                    "Header": dict(zip(keys, table.header, strict=True)),
                    "Rows": [dict(zip(keys, row, strict=True)) for row in table.rows],
                    "Notes": list(table.notes),
                }
            )
        else:
            self._print(render(table, tty=self.tty), spaced=True)

    def progress(self) -> Progress:
        if self.tty and self._printed:
            self.out.write("\n")
        return Progress(self.out, enabled=self.tty)

    def finish(self, *, succeeded: bool = True) -> None:
        """Print the buffered JSON, or `Succeeded` in TTY mode (unless the command ends with an exit status)."""
        if self.as_json:
            doc = {"Tables": self._tables, "Blocks": self._blocks, "Lines": self._lines}
            self.out.write(json.dumps(doc, indent=4) + "\n")
        elif self.tty and succeeded:
            self._print("Succeeded\n", spaced=True)
