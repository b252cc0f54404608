"""`kapply package` has kctrl's command tree, as shared/reference/kapp-controller-packages.md (section 6) documents
it: every command, under every alias, with exactly kctrl's flags, shorthands, types and defaults (the kubeconfig and
output flags are the global ones, as on every kapply command), one test per command. kapply's own additions say
`(kapply)` in their help and are listed here apart."""

from __future__ import annotations

from itertools import product
from typing import Any

import pytest

from kapply.cli.command import Command
from kapply.cli.tree import global_flags, tree
from kapply.flags import Kind

BOOL, STR, STRS, DUR = Kind.BOOL, Kind.STRING, Kind.STRINGS, Kind.DURATION
FlagSpec = tuple[str, Kind, Any]  # shorthand, type, default

NAMESPACE: dict[str, FlagSpec] = {"namespace": ("n", STR, "")}
SHARED = {"dangerous-allow-use-of-shared-namespace": ("", BOOL, False)}


def tty(default: bool) -> dict[str, FlagSpec]:
    return {"tty": ("", BOOL, default)}


def wait(interval: float, timeout: float, can_disable: bool = True) -> dict[str, FlagSpec]:
    flags = {"wait-check-interval": ("", DUR, interval), "wait-timeout": ("", DUR, timeout)}
    return {"wait": ("", BOOL, True), **flags} if can_disable else flags


# kapply's on every command: the groups to speak (kapply's or kapp-controller's), by default those the cluster serves
API_GROUPS: dict[str, FlagSpec] = {"api-groups": ("", STR, "")}
REPOSITORY = {"repository": ("r", STR, "")}
SOURCE = {"url": ("", STR, ""), "semver-tag-constraints": ("", STR, ""), "secret-ref": ("", STR, "")}
INSTALL = {"package-install": ("i", STR, "")}
VALUES = {"values-file": ("", STR, ""), "values": ("", BOOL, True)}
OVERLAYS = {"ytt-overlay-file": ("", STRS, []), "ytt-overlays": ("", BOOL, True)}
CREATE = {
    **NAMESPACE,
    **INSTALL,
    "package": ("p", STR, ""),
    "version": ("v", STR, ">= 0.0.0"),
    "service-account-name": ("", STR, ""),
    **VALUES,
    "dry-run": ("", BOOL, False),
    **OVERLAYS,
    **SHARED,
    **wait(1, 1800),
    **tty(True),
}

# command path -> (aliases, kctrl's flags, kapply's own flags)
COMMANDS: dict[tuple[str, ...], tuple[tuple[str, ...], dict[str, FlagSpec], set[str]]] = {
    ("repository", "add"): (
        (),
        {
            **NAMESPACE,
            **REPOSITORY,
            **SOURCE,
            "create-namespace": ("", BOOL, False),
            "dry-run": ("", BOOL, False),
            **SHARED,
            **wait(1, 300),
            **tty(True),
        },
        set(),
    ),
    ("repository", "update"): ((), {**NAMESPACE, **REPOSITORY, **SOURCE, **SHARED, **wait(1, 300), **tty(True)}, set()),
    ("repository", "list"): (("l", "ls"), {**NAMESPACE, "all-namespaces": ("A", BOOL, False), **tty(False)}, set()),
    ("repository", "get"): (("g",), {**NAMESPACE, **REPOSITORY, **tty(False)}, set()),
    ("repository", "delete"): ((), {**NAMESPACE, **REPOSITORY, **wait(1, 300), **tty(True)}, set()),
    ("repository", "kick"): ((), {**NAMESPACE, **REPOSITORY, **wait(1, 300), **tty(True)}, set()),
    ("available", "list"): (
        ("l", "ls"),
        {
            **NAMESPACE,
            "all-namespaces": ("A", BOOL, False),
            "summary": ("", BOOL, True),
            "package": ("p", STR, ""),
            "wide": ("", BOOL, False),
            **tty(False),
        },
        set(),
    ),
    ("available", "get"): (
        ("g",),
        {
            **NAMESPACE,
            "package": ("p", STR, ""),
            "values-schema": ("", BOOL, False),
            "default-values-file-output": ("", STR, ""),
            **tty(False),
        },
        set(),
    ),
    ("install",): ((), CREATE, set()),
    ("installed", "create"): ((), CREATE, set()),
    ("installed", "update"): (
        (),
        {
            **NAMESPACE,
            **INSTALL,
            "package": ("p", STR, ""),
            "version": ("v", STR, ""),
            **VALUES,
            **OVERLAYS,
            **SHARED,
            **wait(1, 1800),
            **tty(True),
        },
        set(),
    ),
    ("installed", "list"): (
        ("l", "ls"),
        {**NAMESPACE, "all-namespaces": ("A", BOOL, False), "wide": ("", BOOL, False), **tty(False)},
        set(),
    ),
    ("installed", "get"): (
        ("g",),
        {
            **NAMESPACE,
            **INSTALL,
            "values": ("", BOOL, False),
            "values-file-output": ("", STR, ""),
            "ghost-diffs-overlay-output": ("", STR, ""),
            **tty(False),
        },
        {"ghost-diffs-overlay-output"},
    ),
    ("installed", "delete"): (
        (),
        {**NAMESPACE, **INSTALL, "noop": ("", BOOL, False), **wait(1, 300, can_disable=False), **tty(True)},
        set(),
    ),
    ("installed", "pause"): ((), {**NAMESPACE, **INSTALL, **tty(True)}, set()),
    ("installed", "kick"): ((), {**NAMESPACE, **INSTALL, **wait(2, 300), **tty(True)}, set()),
    ("installed", "status"): (("s",), {**NAMESPACE, **INSTALL, **tty(True)}, set()),
    # kapply's own commands (docs/packages.md, "History and rollback")
    ("installed", "history"): ((), {**NAMESPACE, **INSTALL, **tty(False)}, set()),
    ("installed", "rollback"): (
        (),
        {**NAMESPACE, **INSTALL, "to-revision": ("", Kind.INT, 0), **wait(1, 1800), **tty(True)},
        {"to-revision"},
    ),
}
GROUPS = {
    ("package",): ("pkg", "p"),
    ("package", "repository"): ("repo", "r"),
    ("package", "installed"): ("i",),
    ("package", "available"): ("a",),
}


def _command(path: tuple[str, ...]) -> Command:
    command = tree()
    for name in path:
        found = command.child(name)
        assert found is not None, f"no command {' '.join(path)}"
        command = found
    return command


def _aliases(path: tuple[str, ...]) -> tuple[str, ...]:
    return GROUPS.get(path) or COMMANDS.get(path[1:], ((),))[0]


def test_package_has_kctrls_groups_with_their_aliases() -> None:
    for path, aliases in GROUPS.items():
        assert _command(path).aliases == aliases, path
    assert sorted(c.name for c in _command(("package",)).children) == [
        "available",
        "init",  # the authoring commands: tests/unit/test_package_authoring.py
        "install",
        "installed",
        "release",
        "repository",
    ]
    assert sorted(c.name for c in _command(("package", "repository")).children) == sorted(
        [*(p[1] for p in COMMANDS if p[0] == "repository"), "release"]
    )
    assert sorted(c.name for c in _command(("package", "installed")).children) == sorted(
        p[1] for p in COMMANDS if p[0] == "installed"
    )
    assert sorted(c.name for c in _command(("package", "available")).children) == ["get", "list"]


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
def test_the_command_has_kctrls_aliases_and_exactly_its_flags(path: tuple[str, ...]) -> None:
    aliases, expected, own = COMMANDS[path]
    full = ("package", *path)
    command = _command(full)
    assert command.aliases == aliases
    assert command.handler, "a command that runs"
    # the same command under every alias of every level
    words = [(name, *_aliases(full[: i + 1])) for i, name in enumerate(full)]
    for spelled in product(*words):
        assert _command(spelled) == command, spelled
    found = {f.name: (f.short, f.kind, f.default) for f in command.flags}
    assert found == {**expected, **API_GROUPS}
    assert {f.name for f in command.flags if "(kapply)" in f.help} == own | set(API_GROUPS)
    assert all(f.supported for f in command.flags)
    assert not {f.name for f in command.flags} & {f.name for f in global_flags()}, "global flags stay global"
