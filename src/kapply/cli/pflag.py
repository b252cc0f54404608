"""Flags as kapp's (cobra and pflag) take them, so that every script written for kapp works unchanged.

pflag's rules, which Python's argument parsers do not follow: a boolean flag never takes the next argument as its
value (`-c true` is `-c` and an extra argument `true`; `-c=true` and `--x=false` set values); shorthands combine
(`-yc`) and take values attached (`-ffile`, `-f=file`) or next; a flag that takes a value accepts `--f v` and
`--f=v`; string lists split on commas and repeat; flags may come anywhere among the arguments; `--` ends them.
Values parse as Go parses them (`strconv.ParseBool`, `ParseInt` with base prefixes, `time.ParseDuration`) and
errors read as pflag's (`invalid argument "10" for "--wait-timeout" flag: time: missing unit in duration "10"`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kapply.errors import KapplyError
from kapply.flags import Flag, Kind, convert


class UsageError(KapplyError):
    """The command line itself is wrong (exit 1, as kapp)."""


def _convert(flag: Flag, text: str) -> Any:
    try:
        return convert(flag, text)
    except ValueError as e:
        raise UsageError(f'invalid argument "{text}" for "{flag.label}" flag: {e}') from None


@dataclass
class Parsed:
    """The flags a command line set (and their defaults), and its positional arguments."""

    flags: dict[str, Any]
    given: set[str] = field(default_factory=set)  # flags the command line set explicitly
    args: list[str] = field(default_factory=list)
    help: bool = False


def parse(argv: Sequence[str], flags: Iterable[Flag]) -> Parsed:
    """Parse argv against the flags, as pflag does (flags interspersed with arguments)."""
    by_name = {f.name: f for f in flags}
    by_short = {f.short: f for f in by_name.values() if f.short}
    parsed = Parsed({name: (list(f.default) if f.kind is Kind.STRINGS else f.default) for name, f in by_name.items()})

    def set_value(flag: Flag, text: str) -> None:
        value = _convert(flag, text)
        if flag.kind is Kind.STRINGS:
            parsed.flags[flag.name] = (parsed.flags[flag.name] if flag.name in parsed.given else []) + value
        else:
            parsed.flags[flag.name] = value
        parsed.given.add(flag.name)

    args = list(argv)
    while args:
        token = args.pop(0)
        if len(token) < 2 or not token.startswith("-"):
            parsed.args.append(token)
            continue
        if token == "--":
            parsed.args += args
            break
        if token.startswith("--"):
            name, has_value, value = token[2:].partition("=")
            if not name or name.startswith("-") or name.startswith("="):
                raise UsageError(f"bad flag syntax: {token}")
            flag = by_name.get(name)
            if flag is None:
                if name == "help":
                    parsed.help = True
                    continue
                raise UsageError(f"unknown flag: --{name}")
            if has_value:
                set_value(flag, value)
            elif flag.kind is Kind.BOOL:
                set_value(flag, "true")
            elif args:
                set_value(flag, args.pop(0))
            else:
                raise UsageError(f"flag needs an argument: {token}")
            continue
        shorthands = token[1:]
        while shorthands:
            letter = shorthands[0]
            flag = by_short.get(letter)
            if flag is None:
                if letter == "h":
                    parsed.help = True
                    shorthands = shorthands[1:]
                    continue
                raise UsageError(f"unknown shorthand flag: '{letter}' in -{token[1:]}")
            if len(shorthands) > 2 and shorthands[1] == "=":
                set_value(flag, shorthands[2:])
                shorthands = ""
            elif flag.kind is Kind.BOOL:
                set_value(flag, "true")
                shorthands = shorthands[1:]
            elif len(shorthands) > 1:
                set_value(flag, shorthands[1:])
                shorthands = ""
            elif args:
                set_value(flag, args.pop(0))
                shorthands = ""
            else:
                raise UsageError(f"flag needs an argument: '{letter}' in -{token[1:]}")
    return parsed


def takes_value(flags: Iterable[Flag], token: str) -> bool:
    """Whether `token` (a flag without `=value`) consumes the next argument: cobra's rule for finding the command
    among flags (`kapp --kubeconfig x deploy`)."""
    by_name = {f.name: f for f in flags}
    by_short = {f.short: f for f in by_name.values() if f.short}
    if token.startswith("--"):
        if "=" in token:
            return False
        flag = by_name.get(token[2:])
    else:
        if len(token) != 2:
            return False
        flag = by_short.get(token[1:])
    return flag is not None and flag.kind is not Kind.BOOL
