"""How the command tables of kctrl's commands (`kapply app`, `kapply package`: kapply.cli.app_commands,
kapply.cli.package.commands and .authoring_commands) build their leaves: each leaf's flags, then `--tty` and the
table's own last flags (`--api-groups` where the commands talk to the cluster), and its Examples in kctrl's layout,
with kapply's name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kapply.cli.command import Command, FlagSection
from kapply.flags import Flag
from kapply.flags import tty as tty_flag

# An example of a leaf: its comment, and the arguments after the command's words (`-a simple-app`)
Case = tuple[str, str]


def examples(words: str, cases: Sequence[Case]) -> str:
    """A leaf's Examples: each case's comment, then the command line (`kapply <words> <arguments>`)."""
    return "\n\n".join(f"# {comment}\nkapply {words} {arguments}".rstrip() for comment, arguments in cases) + "\n"


@dataclass(frozen=True, slots=True)
class Leaves:
    """The leaves of one table: `words`, the command's words before a leaf's path (`package`); `module`, where the
    handlers are; `last`, the flags after each leaf's own and `--tty`; `section`, where the parent's help lists the
    leaves ("": Command's default)."""

    words: str
    module: str
    last: tuple[Flag, ...] = ()
    section: str = ""

    def __call__(
        self,
        path: str,
        short: str,
        handler: str,
        *flags: Flag,
        tty: bool,
        cases: Sequence[Case],
        aliases: tuple[str, ...] = (),
    ) -> Command:
        """The leaf at `path` (`repository add`: its name is the last word), whose handler is `handler` in the
        table's module; `--tty` on by default where kctrl marks the command TTY by default."""
        command = Command(
            path.rpartition(" ")[2],
            short,
            f"{self.module}.{handler}",
            aliases=aliases,
            flag_sections=(FlagSection("Flags", (*flags, tty_flag(tty), *self.last)),),
            examples=examples(f"{self.words} {path}", cases),
        )
        return replace(command, section=self.section) if self.section else command
