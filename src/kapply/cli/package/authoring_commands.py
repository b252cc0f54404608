"""kctrl's package authoring commands, as data: `package init`, `package release` and `package repository release`,
with kctrl 0.53's flags (names, shorthands, types, defaults and help). They work on local files and a registry only,
so they take none of the cluster's flags."""

from __future__ import annotations

from kapply.cli.command import Command, FlagSection
from kapply.flags import Flag, Kind
from kapply.flags import tty as tty_flag

BOOL, STR = Kind.BOOL, Kind.STRING
MODULE = "kapply.cli.package"

CHDIR = Flag("chdir", STR, "", "Location of the working directory")
VERSION = Flag("version", STR, "", "Version to be released", short="v")


def _leaf(name: str, short: str, handler: str, example: str, *flags: Flag) -> Command:
    """A command with its flags, then `--tty`; `example`: its Examples (kapply's: kctrl's show none)."""
    section = FlagSection("Flags", (*flags, tty_flag(False)))
    return Command(name, short, f"{MODULE}.{handler}", flag_sections=(section,), examples=example)


def init_command() -> Command:
    from kapply.cli.package.commands import examples  # which registers these commands

    example = examples(
        "init",
        ("Initialize a package in the current directory, answering kctrl's questions", ""),
        ("Initialize the package whose files are in another directory", "--chdir my-package"),
    )
    return _leaf("init", "Initialize Package (experimental)", "init:init", example, CHDIR)


def release_command() -> Command:
    from kapply.cli.package.commands import examples

    return _leaf(
        "release",
        "Release package (experimental)",
        "release:release",
        examples(
            "release",
            ("Release version 1.0.0 of the package", "--version 1.0.0"),
            ("Release it and add it to a package repository's directory", "--version 1.0.0 --repo-output repo"),
        ),
        Flag("build-values", STR, "", "Path to values file to be used while releasing package"),
        Flag("build-ytt-validations", BOOL, True, "Ignore ytt validation errors while releasing packages"),
        CHDIR,
        Flag("copy-to", STR, "carvel-artifacts", "Output location for artifacts"),
        Flag(
            "openapi-schema",
            BOOL,
            True,
            "Generates openapi schema for ytt and helm templated files and adds it to generated package",
        ),
        Flag("repo-output", STR, "", "Output location for artifacts in repository bundle format"),
        Flag("tag", STR, "", "Tag pushed with imgpkg bundle (default build-<TIMESTAMP>)", short="t"),
        VERSION,
    )


def repository_release_command() -> Command:
    from kapply.cli.package.commands import examples

    return _leaf(
        "release",
        "Build and create a package repository (experimental)",
        "repository_release:release",
        examples(
            "repository release",
            ("Release version 1.0.0 of the repository of the packages in ./packages", "--version 1.0.0"),
        ),
        CHDIR,
        Flag("copy-to", STR, "", "Output location for pkgrepo-build.yml"),
        VERSION,
    )
