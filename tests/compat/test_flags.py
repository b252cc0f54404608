"""Every command and flag of the real kapp, read from its own `--help`, exists in kapply with the same aliases,
shorthand, type and default: a script written for kapp parses the same way under kapply. kapply's own additions
(marked "(kapply)" in their help) are allowed; anything else kapply has and kapp has not is a mistake.

No cluster: only help text is compared."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache

import pytest

from tests.e2e.harness import external_tool

# "  -a, --app string      Set app name ... (default 2)"
_FLAG = re.compile(r"^\s+(?:-(?P<short>\w), )?--(?P<name>[a-z0-9-]+)(?: (?P<type>[\w.*]+))?\s{2,}(?P<help>.*)$")
_DEFAULT = re.compile(r"\(default (?P<value>[^)]*)\)\s*$")
_COMMAND = re.compile(r"^  (?P<name>[a-z][a-z-]*)\s+(?P<help>.*)$")


@dataclass(frozen=True)
class FlagHelp:
    short: str
    type: str
    default: str


@dataclass(frozen=True)
class CommandHelp:
    aliases: tuple[str, ...]
    subcommands: tuple[str, ...]
    flags: dict[str, FlagHelp]
    own: frozenset[str]  # flags and commands whose help says "(kapply)"


def _parse(text: str) -> CommandHelp:
    aliases: tuple[str, ...] = ()
    subcommands: list[str] = []
    flags: dict[str, FlagHelp] = {}
    own: set[str] = set()
    section = ""
    for line in text.splitlines():
        if line and not line.startswith(" "):
            section = line.rstrip(":")
            continue
        if section == "Aliases":
            aliases = tuple(a.strip() for a in line.split(",")[1:] if a.strip())
        elif section.endswith("Commands"):
            if match := _COMMAND.match(line):
                subcommands.append(match["name"])
                if "(kapply)" in match["help"]:
                    own.add(match["name"])
        elif section.endswith("Flags") and (match := _FLAG.match(line)):
            default = _DEFAULT.search(match["help"])
            kind = match["type"] or "bool"
            # pflag's help names a float32 as float32 and a registry by its Go type: the value's shape is what matters
            kind = {"float32": "float", "*preflight.Registry": "string"}.get(kind, kind)
            flags[match["name"]] = FlagHelp(match["short"] or "", kind, default["value"] if default else "")
            if "(kapply)" in match["help"]:
                own.add(match["name"])
    return CommandHelp(aliases, tuple(subcommands), flags, frozenset(own))


@cache
def _kapp_help(path: tuple[str, ...]) -> CommandHelp:
    kapp = external_tool("kapp", "KAPPLY_KAPP")
    out = subprocess.run([str(kapp), *path, "--help"], capture_output=True, text=True, timeout=30, check=True)
    return _parse(out.stdout)


@cache
def _kapply_help(path: tuple[str, ...]) -> CommandHelp:
    out = subprocess.run(
        [sys.executable, "-m", "kapply", *path, "--help"], capture_output=True, text=True, timeout=30, check=False
    )
    assert out.returncode == 0, f"kapply {' '.join(path)} --help: {out.stderr}"
    return _parse(out.stdout)


def _kapp_commands() -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    todo: list[tuple[str, ...]] = [()]
    while todo:
        path = todo.pop()
        found.append(path)
        todo += [(*path, sub) for sub in _kapp_help(path).subcommands if sub != "help"]
    return sorted(found)


def _ids() -> list[tuple[str, ...]]:
    try:
        return _kapp_commands()
    except (OSError, subprocess.CalledProcessError, pytest.fail.Exception, pytest.skip.Exception):
        # kapp missing: one case that fails with the reason, never a skip
        return [("<kapp unavailable>",)]


@pytest.mark.parametrize("path", _ids(), ids=lambda p: " ".join(p) or "kapp")
def test_the_command_and_its_flags_are_kapps(path: tuple[str, ...]) -> None:
    kapp = _kapp_help(path)
    kapply = _kapply_help(path)
    assert kapply.aliases == kapp.aliases
    assert sorted(set(kapply.subcommands) - kapply.own) == sorted(kapp.subcommands)
    missing = sorted(set(kapp.flags) - set(kapply.flags))
    assert not missing, f"kapp flags kapply does not know: {missing}"
    extra = sorted(set(kapply.flags) - set(kapp.flags) - kapply.own)
    assert not extra, f"kapply flags kapp does not have, not marked (kapply): {extra}"
    for name, flag in kapp.flags.items():
        if name == "help" or (not path and name == "version"):
            continue  # "help for kapp" names the program
        assert kapply.flags[name] == flag, f"--{name}"


def test_the_parser_fails_when_kapp_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Told where kapp is, the flag tests fail (not skip) when it is not there."""
    monkeypatch.setenv("KAPPLY_KAPP", str(tmp_path / "no-kapp"))
    _kapp_help.cache_clear()
    try:
        with pytest.raises(pytest.fail.Exception):
            _kapp_help(("version",))
    finally:
        _kapp_help.cache_clear()
