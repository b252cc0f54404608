"""`kapply package`, `kapply app` and `kapply controller` (and each of their subcommands that runs) show
Examples in `--help`, as kctrl's package commands do (the package commands' are kctrl's own, with kapply's name);
and every example's command line is one kapply accepts: its command path resolves and its flags parse."""

from __future__ import annotations

import shlex
from collections.abc import Iterator

import pytest

from kapply.cli.command import Command, help_text, resolve
from kapply.cli.tree import PROGRAM, global_flags, tree

COVERED = (("package",), ("app",), ("controller",))


def runnable(command: Command, path: tuple[Command, ...]) -> Iterator[tuple[Command, ...]]:
    """The commands under `command` (itself included) that run a handler, each with its path from the root."""
    here = (*path, command)
    if command.handler:
        yield here
    for child in command.children:
        yield from runnable(child, here)


def covered() -> list[tuple[Command, ...]]:
    root = tree()
    found = []
    for names in COVERED:
        path: tuple[Command, ...] = (root,)
        for name in names:
            child = path[-1].child(name)
            assert child is not None, names
            path = (*path, child)
        found += list(runnable(path[-1], path[:-1]))
    return found


def name(path: tuple[Command, ...]) -> str:
    return " ".join(c.name for c in path[1:])


def test_the_covered_commands_are_found() -> None:
    names = {name(p) for p in covered()}
    assert {"package install", "package installed create", "package repository add", "app status"} <= names
    assert {"controller", "controller manifests", "package available list", "package installed status"} <= names
    assert len(names) >= 20  # 17 package commands, app status, controller and controller manifests


@pytest.mark.parametrize("path", covered(), ids=name)
def test_the_command_shows_examples_in_its_help(path: tuple[Command, ...]) -> None:
    command = path[-1]
    text = help_text(command, path, global_flags(), PROGRAM)
    assert command.examples.strip(), name(path)
    assert "\nExamples:\n" in text and command.examples.rstrip() in text


@pytest.mark.parametrize("path", covered(), ids=name)
def test_each_example_is_a_command_line_kapply_accepts(path: tuple[Command, ...]) -> None:
    command = path[-1]
    lines = [line.strip() for line in command.examples.replace("\\\n", " ").splitlines()]
    commands = [line for line in lines if line.startswith(f"{PROGRAM} {name(path)}")]
    assert commands, command.examples
    # every line is a comment, a command line, or the rest of a piped one (`| kapply deploy ...`)
    assert all(not line or line.startswith(("#", PROGRAM)) for line in lines), command.examples
    for line in commands:
        argv = shlex.split(line.split("|")[0])[1:]
        args = resolve(tree(), argv, global_flags(), PROGRAM)
        assert args is not None and args.path == tuple(c.name for c in path[1:]), line
