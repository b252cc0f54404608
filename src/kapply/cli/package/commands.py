"""kctrl's `package` command tree, as data: the same command names, aliases, flags, shorthands, types and defaults as
kctrl's (shared/reference/kapp-controller-packages.md, section 6), checked by tests/unit/test_package_commands.py.
Flags kapply adds say `(kapply)` in their help. The namespace and kubeconfig flags are kapply's own (`$KAPP_*`), as
on every kapply command (docs/packages.md, "The CLI")."""

from __future__ import annotations

from dataclasses import replace

from kapply.cli.command import Command
from kapply.cli.kctrl_leaves import Leaves
from kapply.cli.package.authoring_commands import init_command, release_command, repository_release_command
from kapply.flags import NAMESPACE, Flag, Kind

BOOL, STR, STRS, DUR = Kind.BOOL, Kind.STRING, Kind.STRINGS, Kind.DURATION
LIST_ALIASES = ("l", "ls")
DEFAULT_VERSION = ">= 0.0.0"  # kctrl's version constraint when `install` is given none
MODULE = "kapply.cli.package"

SHARED_NAMESPACE = Flag("dangerous-allow-use-of-shared-namespace", BOOL, False, "Allow use of shared namespaces")
DRY_RUN = Flag(
    "dry-run", BOOL, False, "Print YAML for resources being applied to the cluster without applying them, optional"
)
WIDE = Flag("wide", BOOL, False, "Show additional info")
# On every command that reads or writes the cluster: whose API groups to speak (kapply.controller.vocabulary_choice)
API_GROUPS = Flag(
    "api-groups",
    STR,
    "",
    "API groups to speak: kapply (packaging.kapply.dev, ...) or carvel (kapp-controller's packaging.carvel.dev, ...); "
    "default: kapply's if the cluster serves them, else kapp-controller's (kapply)",
)

# package repository
REPOSITORY = Flag("repository", STR, "", "Set package repository name (required)", short="r")
URL = Flag(
    "url",
    STR,
    "",
    "OCI registry url for package repository bundle, or a git repository or an http(s) archive (required)",
)
SEMVER_TAG_CONSTRAINTS = Flag(
    "semver-tag-constraints", STR, "", "Set constraints for semver based tag selection (when the url has no tag)"
)
SECRET_REF = Flag("secret-ref", STR, "", "Name of the secret holding the credentials to fetch the repository")
CREATE_NAMESPACE = Flag("create-namespace", BOOL, False, "Create the namespace if it does not exist, optional")

# package available
SUMMARY = Flag("summary", BOOL, True, "Show summarized list of packages")
LISTED_PACKAGE = Flag("package", STR, "", "List all available versions of package", short="p")
PACKAGE = Flag("package", STR, "", "Set package name (required)", short="p")
VALUES_SCHEMA = Flag("values-schema", BOOL, False, "Values schema of the package (optional)")
DEFAULT_VALUES_FILE_OUTPUT = Flag("default-values-file-output", STR, "", "File path to save default values (optional)")

# package installed
PACKAGE_INSTALL = Flag("package-install", STR, "", "Set installed package name (required)", short="i")
VERSION = Flag("version", STR, DEFAULT_VERSION, "Set package version", short="v")
UPDATED_VERSION = Flag("version", STR, "", "Set package version", short="v")
UPDATED_PACKAGE = Flag("package", STR, "", "Name of package install to be updated", short="p")
SERVICE_ACCOUNT_NAME = Flag(
    "service-account-name",
    STR,
    "",
    "Name of an existing service account used to install underlying package contents, optional",
)
VALUES_FILE = Flag("values-file", STR, "", "The path to the configuration values file, optional")
VALUES = Flag("values", BOOL, True, "Add or keep values supplied to package install, optional")
YTT_OVERLAY_FILE = Flag("ytt-overlay-file", STRS, [], "Path to ytt overlay file (can also be a directory)")
YTT_OVERLAYS = Flag("ytt-overlays", BOOL, True, "Add or keep ytt overlays")
SHOW_VALUES = Flag("values", BOOL, False, "Show values supplied to the package install")
VALUES_FILE_OUTPUT = Flag("values-file-output", STR, "", "File path for exporting configuration values file")
GHOST_DIFFS_OVERLAY_OUTPUT = Flag(
    "ghost-diffs-overlay-output",
    STR,
    "",
    "File path to save the ytt overlay suggested to end the ghost diffs, for --ytt-overlay-file (kapply)",
)
NOOP = Flag("noop", BOOL, False, "Delete the package install but leave the resources it deployed (noopDelete)")
TO_REVISION = Flag(
    "to-revision",
    Kind.INT,
    0,
    "Revision to roll back to, as `installed history` lists it; default: the previous (kapply)",
)


# kctrl's WaitFlags: its own, named as kapp's (kapply.flags); each command sets the defaults of the last two
WAIT = Flag("wait", BOOL, True, "Wait for reconciliation to complete")
WAIT_CHECK_INTERVAL = Flag("wait-check-interval", DUR, 1.0, "Amount of time to sleep between checks while waiting")
WAIT_TIMEOUT = Flag("wait-timeout", DUR, 300.0, "Maximum amount of time to wait in wait phase")


def wait(interval: float, timeout: float, *, can_disable: bool = True) -> tuple[Flag, ...]:
    """kctrl's WaitFlags, with the command's defaults; `--wait` only where waiting can be turned off."""
    flags = (replace(WAIT_CHECK_INTERVAL, default=interval), replace(WAIT_TIMEOUT, default=timeout))
    return (WAIT, *flags) if can_disable else flags


def all_namespaces(what: str) -> Flag:
    return Flag("all-namespaces", BOOL, False, f"List {what} in all namespaces", short="A")


_command = Leaves("package", MODULE, (API_GROUPS,))
_INSTALL = "-i sample-pkg-install -p package.corp.com --version 1.0.0"
INSTALL_CASES = (  # `install`'s and `installed create`'s
    ("Install a package", _INSTALL),
    ("Install package with values file", f"{_INSTALL} --values-file values.yml"),
    ("Install package and ask it to use an existing service account", f"{_INSTALL} --service-account-name existing-sa"),
)


def _install_flags() -> tuple[Flag, ...]:
    return (
        NAMESPACE,
        PACKAGE_INSTALL,
        PACKAGE,
        VERSION,
        SERVICE_ACCOUNT_NAME,
        VALUES_FILE,
        VALUES,
        DRY_RUN,
        YTT_OVERLAY_FILE,
        YTT_OVERLAYS,
        SHARED_NAMESPACE,
        *wait(1.0, 1800.0),
    )


def repository_command() -> Command:
    repository_flags = (NAMESPACE, REPOSITORY, URL, SEMVER_TAG_CONSTRAINTS, SECRET_REF)
    return Command(
        "repository",
        "Package repositories",
        aliases=("repo", "r"),
        children=(
            _command(
                "repository add",
                "Add a package repository",
                "repository:add",
                *repository_flags,
                CREATE_NAMESPACE,
                DRY_RUN,
                SHARED_NAMESPACE,
                *wait(1.0, 300.0),
                tty=True,
                cases=(("Add a package repository", "-r sample-repo --url projects.repo.com/example:1.0.0"),),
            ),
            _command(
                "repository update",
                "Update a package repository",
                "repository:update",
                *repository_flags,
                SHARED_NAMESPACE,
                *wait(1.0, 300.0),
                tty=True,
                cases=(
                    (
                        "Update a package repository with a new URL",
                        "-r sample-repo --url projects.repo.com/example:1.0.0",
                    ),
                ),
            ),
            _command(
                "repository list",
                "List package repositories in a namespace",
                "repository:list_repositories",
                NAMESPACE,
                all_namespaces("repositories"),
                tty=False,
                cases=(
                    ("List package repositories", ""),
                    ("List package repositories in all namespaces", "-A"),
                ),
                aliases=LIST_ALIASES,
            ),
            _command(
                "repository get",
                "Get details for a package repository",
                "repository:get",
                NAMESPACE,
                REPOSITORY,
                tty=False,
                cases=(("Get details for a package repository", "-r sample-repo"),),
                aliases=("g",),
            ),
            _command(
                "repository delete",
                "Delete a package repository",
                "repository:delete",
                NAMESPACE,
                REPOSITORY,
                *wait(1.0, 300.0),
                tty=True,
                cases=(("Delete a package repository", "-r sample-repo"),),
            ),
            _command(
                "repository kick",
                "Trigger reconciliation for repository",
                "repository:kick",
                NAMESPACE,
                REPOSITORY,
                *wait(1.0, 300.0),
                tty=True,
                cases=(("Trigger reconciliation for repository", "-r sample-repo"),),
            ),
            repository_release_command(),
        ),
    )


def available_command() -> Command:
    return Command(
        "available",
        "Manage available packages",
        aliases=("a",),
        children=(
            _command(
                "available list",
                "List available packages in a namespace",
                "available:list_available",
                NAMESPACE,
                all_namespaces("available packages"),
                SUMMARY,
                LISTED_PACKAGE,
                WIDE,
                tty=False,
                cases=(
                    ("List packages available on the cluster", ""),
                    ("List packages available on the cluster with their short descriptions", "--wide"),
                    ("List all available package versions with release dates", "--summary=false"),
                    ("List packages available in all namespaces", "-A"),
                    ("List all available versions of a package", "-p package.corp.com"),
                ),
                aliases=LIST_ALIASES,
            ),
            _command(
                "available get",
                "Get details for an available package or the openAPI schema of a package with a specific version",
                "available:get",
                NAMESPACE,
                PACKAGE,
                VALUES_SCHEMA,
                DEFAULT_VALUES_FILE_OUTPUT,
                tty=False,
                cases=(
                    ("Get details about an available package", "-p package.corp.com"),
                    (
                        "Get the values schema for a particular version of the package",
                        "-p package.corp.com/1.0.0 --values-schema",
                    ),
                ),
                aliases=("g",),
            ),
        ),
    )


def installed_command() -> Command:
    return Command(
        "installed",
        "Installed packages",
        aliases=("i",),
        children=(
            _command(
                "installed create",
                "Install package",
                "install:create",
                *_install_flags(),
                tty=True,
                cases=INSTALL_CASES,
            ),
            _command(
                "installed update",
                "Update package",
                "install:update",
                NAMESPACE,
                PACKAGE_INSTALL,
                UPDATED_PACKAGE,
                UPDATED_VERSION,
                VALUES_FILE,
                VALUES,
                YTT_OVERLAY_FILE,
                YTT_OVERLAYS,
                SHARED_NAMESPACE,
                *wait(1.0, 1800.0),
                tty=True,
                cases=(
                    ("Upgrade package install to a newer version", "-i sample-pkg-install --version 1.0.0"),
                    ("Update package install with new values file", "-i sample-pkg-install --values-file values.yml"),
                    (
                        "Update package install to stop consuming supplied values",
                        "-i sample-pkg-install --values=false",
                    ),
                ),
            ),
            _command(
                "installed list",
                "List installed packages in a namespace",
                "installed:list_installed",
                NAMESPACE,
                all_namespaces("installed packages"),
                WIDE,
                tty=False,
                cases=(
                    ("List installed packages", ""),
                    ("List installed packages in all namespaces", "-A"),
                ),
                aliases=LIST_ALIASES,
            ),
            _command(
                "installed get",
                "Get details for installed package",
                "installed:get",
                NAMESPACE,
                PACKAGE_INSTALL,
                SHOW_VALUES,
                VALUES_FILE_OUTPUT,
                GHOST_DIFFS_OVERLAY_OUTPUT,
                tty=False,
                cases=(
                    ("Get details for a package install", "-i sample-pkg-install"),
                    ("View values being used by package install", "-i sample-pkg-install --values"),
                    (
                        "Download values being used by package install",
                        "-i sample-pkg-install --values-file-output values.yml",
                    ),
                ),
                aliases=("g",),
            ),
            _command(
                "installed delete",
                "Uninstall installed package",
                "installed:delete",
                NAMESPACE,
                PACKAGE_INSTALL,
                NOOP,
                *wait(1.0, 300.0, can_disable=False),
                tty=True,
                cases=(("Delete package install", "-i sample-pkg-install"),),
            ),
            _command(
                "installed pause",
                "Pause reconciliation of package install",
                "installed:pause",
                NAMESPACE,
                PACKAGE_INSTALL,
                tty=True,
                cases=(("Pause reconciliation of package install", "-i sample-pkg-install"),),
            ),
            _command(
                "installed kick",
                "Trigger reconciliation of package install",
                "installed:kick",
                NAMESPACE,
                PACKAGE_INSTALL,
                *wait(2.0, 300.0),
                tty=True,
                cases=(("Trigger reconciliation of package install", "-i sample-pkg-install"),),
            ),
            _command(
                "installed status",
                "View status of app created by package install",
                "installed:status",
                NAMESPACE,
                PACKAGE_INSTALL,
                tty=True,
                cases=(("Check status of package install", "-i sample-pkg-install"),),
                aliases=("s",),
            ),
            _command(
                "installed history",
                "List the revisions of a package install: version, values digest (kapply)",
                "rollback:history",
                NAMESPACE,
                PACKAGE_INSTALL,
                tty=False,
                cases=(("List the revisions of a package install", "-i sample-pkg-install"),),
            ),
            _command(
                "installed rollback",
                "Roll a package install back to an earlier revision: its version and values (kapply)",
                "rollback:rollback",
                NAMESPACE,
                PACKAGE_INSTALL,
                TO_REVISION,
                *wait(1.0, 1800.0),
                tty=True,
                cases=(
                    ("Roll back to the previous revision", "-i sample-pkg-install"),
                    ("Roll back to revision 3", "-i sample-pkg-install --to-revision 3"),
                ),
            ),
        ),
    )


def package_command(section: str) -> Command:
    """`kapply package` (`pkg`, `p`), listed in the root's help under `section`."""
    return Command(
        "package",
        "Packages: repositories, available packages and installs, as kctrl's package commands (kapply)",
        aliases=("pkg", "p"),
        section=section,
        children=(
            available_command(),
            _command(
                "install",
                "Install package",
                "install:create",
                *_install_flags(),
                tty=True,
                cases=INSTALL_CASES,
            ),
            installed_command(),
            repository_command(),
            init_command(),
            release_command(),
        ),
    )
