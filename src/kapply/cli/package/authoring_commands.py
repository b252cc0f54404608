"""kctrl's package authoring commands, as data: `package init`, `package release` and `package repository release`,
with kctrl 0.53's flags (names, shorthands, types, defaults and help). They work on local files and a registry only,
so they take none of the cluster's flags."""

from __future__ import annotations

from kapply.cli.command import Command
from kapply.cli.kctrl_leaves import Leaves
from kapply.flags import Flag, Kind

BOOL, STR = Kind.BOOL, Kind.STRING
MODULE = "kapply.cli.package"

CHDIR = Flag("chdir", STR, "", "Location of the working directory")
VERSION = Flag("version", STR, "", "Version to be released", short="v")
_leaf = Leaves("package", MODULE)  # kapply's Examples: kctrl's show none


def init_command() -> Command:
    return _leaf(
        "init",
        "Initialize Package (experimental)",
        "init:init",
        CHDIR,
        tty=False,
        cases=(
            ("Initialize a package in the current directory, answering kctrl's questions", ""),
            ("Initialize the package whose files are in another directory", "--chdir my-package"),
        ),
    )


def release_command() -> Command:
    return _leaf(
        "release",
        "Release package (experimental)",
        "release:release",
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
        tty=False,
        cases=(
            ("Release version 1.0.0 of the package", "--version 1.0.0"),
            ("Release it and add it to a package repository's directory", "--version 1.0.0 --repo-output repo"),
        ),
    )


def repository_release_command() -> Command:
    return _leaf(
        "repository release",
        "Build and create a package repository (experimental)",
        "repository_release:release",
        CHDIR,
        Flag("copy-to", STR, "", "Output location for pkgrepo-build.yml"),
        VERSION,
        tty=False,
        cases=(("Release version 1.0.0 of the repository of the packages in ./packages", "--version 1.0.0"),),
    )
