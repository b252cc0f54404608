"""kctrl's authoring UI (its `AuthoringUI` over go-cli-ui and go-interact), as `package init`, `package release` and
`package repository release` talk to their user, on kapply's Output:

- informational text and headers: TTY only (`--tty`, or stdout a terminal), as progress lines;
- a command's output (`$ ytt ...`, what it printed): in every mode, each non-empty line indented as `\\t    | `;
- a question for text: `> <label> (<default>): `, the answer read from stdin (an empty one takes the default), and,
  when stdin is not a terminal, the line read written after the question as a terminal would echo it. An answer the
  question's check refuses says `Failed validation: <why>` on stderr and the question is asked again. Two questions
  for text in a row have no blank line between them (go-cli-ui's padding); anything else does;
- a choice: the options numbered from 1, then `> <label> (<default>): `; an answer that is no option's number says
  `invalid selection (...)` and the question (without the options) is asked again.

A question that reaches the end of stdin fails the command (`Asking for text: EOF`), as kctrl does. With `-y`
(`assume_yes`) no question is asked: each takes its default, as kctrl's non-interactive UI does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kapply.errors import KapplyError
from kapply.ui.escape import escaped

if TYPE_CHECKING:
    from kapply.ui.output import Output

INDENT = "\t    | "
Check = Callable[[str], str | None]  # an answer's problem, or None


class AuthoringUI:
    def __init__(self, out: Output, *, assume_yes: bool = False) -> None:
        self.out = out
        self.assume_yes = assume_yes
        self._asked_text = False  # the last thing shown was a question for text

    def informational(self, text: str) -> None:
        """kctrl's PrintInformationalText: `text` already wrapped at 80 columns as kctrl wraps it."""
        self._shown(tty_only=True)
        self.out.begin_line(text)

    def header(self, text: str) -> None:
        self._shown(tty_only=True)
        self.out.begin_line(f"{text}\n")

    def header_with_context(self, text: str, context: str) -> None:
        self._shown(tty_only=True)
        self.out.begin_line(f"{text}: {context}\n")

    def command_output(self, text: str) -> None:
        """kctrl's PrintCmdExecutionOutput: a command line (`$ ...`) or what a command printed."""
        lines = [f"{INDENT}{line}" if line else line for line in text.split("\n")]
        block = "\n".join(lines)
        if not block.endswith("\n"):
            block += "\n"
        self._shown(tty_only=False)
        self.out.block(block)

    def command_text(self, text: str) -> None:
        """kctrl's PrintCmdExecutionText: a command line (`$ ...`) shown in a TTY only."""
        self._shown(tty_only=True)
        self.out.begin_line(f"{INDENT}$ {text}\n")

    def ask_text(self, label: str, default: str, check: Check | None = None) -> str:
        if self.assume_yes:
            return default
        question = f"> {label} ({default}): "
        if self._asked_text:
            self._write(question)
        else:
            self.out.prompt(question)
        self._asked_text = True
        while True:
            answer = self._read("text").strip() or default
            problem = check(answer) if check is not None else None
            if problem is None:
                return answer
            print(f"Failed validation: {problem}", file=sys.stderr, flush=True)
            self._write(question)

    def ask_choice(self, label: str, choices: Sequence[str], default: int) -> int:
        """The index (from 0) of the option chosen; `default` is an index too."""
        if self.assume_yes:
            return default
        question = f"> {label} ({default + 1}): "
        self.out.prompt("".join(f"{i}: {choice}\n" for i, choice in enumerate(choices, 1)) + question)
        self._asked_text = False
        while True:
            answer = self._read("choice").strip()
            if not answer:
                return default
            if not answer.isdecimal():
                self._write("invalid selection (not a number)\n" + question)
            elif not 1 <= int(answer) <= len(choices):
                self._write(f"invalid selection (must be 1-{len(choices)})\n" + question)
            else:
                return int(answer) - 1

    def _shown(self, *, tty_only: bool) -> None:
        if self.out.tty or not tty_only:
            self._asked_text = False

    def _write(self, text: str) -> None:
        self.out.out.write(text)
        self.out.out.flush()

    def _read(self, what: str) -> str:
        line = sys.stdin.readline()
        if not line:
            raise KapplyError(f"Asking for {what}: EOF")
        if not sys.stdin.isatty():  # a terminal has echoed it already
            self._write(escaped(line if line.endswith("\n") else line + "\n"))
        return line
