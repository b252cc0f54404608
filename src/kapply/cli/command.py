"""kapply's command tree, found and parsed as cobra does it for kapp.

A command is found by its name or an alias, skipping flags (and the values of flags that take one) on the way, so
that global flags work anywhere: `kapply -y --kubeconfig x delete -a app` and `kapply delete -a app -y` are the same.
The command then parses every argument but the command names with its own flags plus the global ones. Handlers
are named as `module:function` and imported only when their command runs, so that start-up stays fast.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kapply.cli.pflag import Parsed, UsageError, parse, takes_value
from kapply.flags import Flag, Kind
from kapply.values import format_duration


@dataclass(frozen=True, slots=True)
class FlagSection:
    title: str  # `Diff Flags`, `Common Flags`, ...
    flags: tuple[Flag, ...]


@dataclass(frozen=True)
class Command:
    name: str
    short: str
    handler: str = ""  # `module:function`, called with the Args; "" for a group
    aliases: tuple[str, ...] = ()
    section: str = "Available/Other Commands"  # where the parent's help lists it
    flag_sections: tuple[FlagSection, ...] = ()
    children: tuple[Command, ...] = ()
    examples: str = ""
    accepts_args: int = 0  # positional arguments allowed (kapp's commands take none, but completion)
    hidden: bool = False

    @property
    def flags(self) -> tuple[Flag, ...]:
        return tuple(f for section in self.flag_sections for f in section.flags)

    def child(self, name: str) -> Command | None:
        return next((c for c in self.children if name == c.name or name in c.aliases), None)


@dataclass(frozen=True)
class Args:
    """What a handler receives: the command path, the flag values, and the positional arguments."""

    path: tuple[str, ...]
    parsed: Parsed
    command: Command

    def __getitem__(self, flag: Flag | str) -> Any:
        """A flag's value: a flag declared in kapply.flags by its declaration, a command's own flag by its name."""
        return self.parsed.flags[flag if isinstance(flag, str) else flag.name]

    def given(self, name: str) -> bool:
        return name in self.parsed.given

    @property
    def positional(self) -> list[str]:
        return self.parsed.args


def _find(root: Command, argv: Sequence[str], global_flags: Sequence[Flag]) -> tuple[list[Command], list[str]]:
    """The command path and the arguments left for the command to parse (all but the command names)."""
    path = [root]
    rest: list[str] = []
    tokens = list(argv)
    while tokens:
        token = tokens.pop(0)
        if token == "--":
            rest += [token, *tokens]
            break
        if token.startswith("-") and len(token) > 1:
            rest.append(token)
            if takes_value([*global_flags, *path[-1].flags], token) and tokens:
                rest.append(tokens.pop(0))
            continue
        child = path[-1].child(token) if path[-1].children else None
        if child is None:
            rest.append(token)
            rest += tokens
            break
        path.append(child)
    return path, rest


def resolve(root: Command, argv: Sequence[str], global_flags: Sequence[Flag], program: str) -> Args | None:
    """Find the command and parse its flags; None when help was asked for (and printed). Raises UsageError for a
    wrong command line."""
    path, rest = _find(root, argv, global_flags)
    command = path[-1]
    names = tuple(c.name for c in path[1:])
    parsed = parse(rest, [*global_flags, *command.flags])
    if parsed.help or (not command.handler and not command.children):
        print(help_text(command, path, global_flags, program))
        if parsed.help:
            print("\nSucceeded")  # as kapp's `--help`
        return None
    if command is root and parsed.flags.get("version"):
        return Args(names, parsed, command)
    # A command with children runs its own handler when it has one and is given no arguments (`kapply controller`,
    # beside `kapply controller manifests`); kapp's command groups only print their help.
    if command.children and not (command.handler and command is not root and not parsed.args):
        if parsed.args and parsed.args[0] == "help" and command is root:
            target, _ = _find(root, parsed.args[1:], global_flags)
            print(help_text(target[-1], target, global_flags, program))
            return None
        if parsed.args or command is root:
            print(help_text(command, path, global_flags, program), file=sys.stderr if parsed.args else sys.stdout)
            raise UsageError("Invalid command - see available commands/subcommands above")
        available = ", ".join(c.name for c in command.children if not c.hidden)
        raise UsageError(f"Use one of available subcommands: {available}")
    unsupported = sorted(
        f.label
        for f in command.flags + tuple(global_flags)
        if not f.supported and f.name in parsed.given and parsed.flags[f.name] != f.default
    )
    if unsupported:
        raise UsageError(f"{', '.join(unsupported)}: not supported by kapply yet (see docs/compatibility.md)")
    if len(parsed.args) > command.accepts_args:
        extra = parsed.args[command.accepts_args :]
        raise UsageError(f"command '{' '.join((program, *names))}' does not accept extra arguments '{' '.join(extra)}'")
    return Args(names, parsed, command)


def handler(command: Command) -> Callable[..., Any]:
    """The command's handler, imported now."""
    module, function = command.handler.split(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), function)
    return found


def _default_text(flag: Flag) -> str:
    if flag.kind is Kind.BOOL:
        return " (default true)" if flag.default else ""
    if flag.kind is Kind.DURATION:
        return f" (default {format_duration(flag.default)})" if flag.default else ""
    if flag.kind is Kind.STRINGS:
        return f" (default [{','.join(flag.default)}])" if flag.default else ""
    if flag.kind is Kind.STRING:
        return f' (default "{flag.default}")' if flag.default else ""
    if not flag.default:
        return ""
    return f" (default {flag.default:g})" if isinstance(flag.default, float) else f" (default {flag.default})"


def _flag_lines(flags: Sequence[Flag]) -> list[str]:
    rows = []
    for flag in flags:
        if flag.hidden:
            continue
        name = f"-{flag.short}, --{flag.name}" if flag.short else f"    --{flag.name}"
        rows.append((f"  {name} {flag.kind.value}".rstrip(), flag.help + _default_text(flag)))
    width = max((len(left) for left, _ in rows), default=0)
    return [f"{left.ljust(width)}   {right}" for left, right in rows]


def _with_help(sections: Sequence[FlagSection], help_flag: Flag) -> list[FlagSection]:
    """cobra lists `-h, --help` with a command's ungrouped flags: in `Flags`, or `Available/Other Flags` when the
    command groups its flags, or in a `Flags` section of its own."""
    found = [s for s in sections if s.title in ("Flags", "Available/Other Flags")]
    if not found:
        return [*sections, FlagSection("Available/Other Flags" if sections else "Flags", (help_flag,))]
    own = found[-1]
    merged = FlagSection(own.title, tuple(sorted((*own.flags, help_flag), key=lambda f: f.name)))
    return [merged if s is own else s for s in sections]


def help_text(command: Command, path: Sequence[Command], global_flags: Sequence[Flag], program: str) -> str:
    """Help in cobra's layout: description, usage, aliases, examples, commands by section, flags by section."""
    full = " ".join([program, *(c.name for c in path[1:])])
    lines = [command.short, "", "Usage:"]
    lines.append(f"  {full} [flags]")  # kapp's command groups run too (they print their help)
    if command.children:
        lines.append(f"  {full} [command]")
    if command.aliases:
        lines += ["", "Aliases:", f"  {', '.join((command.name, *command.aliases))}"]
    if command.examples:
        lines += ["", "Examples:", command.examples.rstrip()]
    sections: dict[str, list[Command]] = {}
    for child in command.children:
        if not child.hidden:
            sections.setdefault(child.section, []).append(child)
    rows = {title: [(c.name, c.short) for c in children] for title, children in sections.items()}
    if not path[1:] and command.children:  # cobra's own `help` command
        other = rows.setdefault("Available/Other Commands", [])
        other[:] = sorted([*other, ("help", "Help about any command")])
    width = max((len(name) for listed in rows.values() for name, _ in listed), default=0)
    width = max(width, 11)  # cobra's minimum name padding
    for title, listed in rows.items():
        lines += ["", f"{title}:"] + [f"  {name.ljust(width)} {short}" for name, short in listed]
    help_flag = Flag("help", Kind.BOOL, False, f"help for {command.name if path[1:] else program}", short="h")
    if path[1:]:
        for section in _with_help(command.flag_sections, help_flag):
            lines += ["", f"{section.title}:", *_flag_lines(section.flags)]
        lines += ["", "Global Flags:", *_flag_lines(global_flags)]
    else:
        flags = sorted((*command.flags, *global_flags, help_flag), key=lambda f: f.name)
        lines += ["", "Flags:", *_flag_lines(flags)]
    if command.children:
        lines += ["", f'Use "{full} [command] --help" for more information about a command.']
    return "\n".join(lines)
