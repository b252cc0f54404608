"""kctrl's `app` command tree (`kapply app`, alias `a`), as data: `list`, `get`, `status`, `pause`, `kick` and
`delete` with kctrl 0.53's names, aliases, flags, shorthands, types and defaults (checked by
tests/unit/test_app_commands.py), for App resources: kapply's (`kapply.dev`), or kapp-controller's
(`kappctrl.k14s.io`) on a cluster that serves only those (kapply.controller.vocabulary_choice). The namespace and
kubeconfig flags are kapply's own (`$KAPP_*`), as on every kapply command."""

from __future__ import annotations

from dataclasses import replace

from kapply import flags
from kapply.cli.command import Command
from kapply.cli.kctrl_leaves import Leaves
from kapply.cli.package.commands import LIST_ALIASES, all_namespaces, wait
from kapply.flags import NAMESPACE, Flag, Kind

MODULE = "kapply.cli"
SECTION = "App Management Commands"  # kctrl's help section of the app commands
# kapp's `-a`, with kctrl's help (an App's name, never a label selector)
APP = replace(flags.APP, help="Set app name (required)")
IGNORE_NOT_EXISTS = Flag("ignore-not-exists", Kind.BOOL, False, "Keep following app if it does not exist")
# Whose API groups to speak (kapply.controller.vocabulary_choice), on every app command
API_GROUPS = Flag(
    "api-groups",
    Kind.STRING,
    "",
    "API groups to speak: kapply (kapply.dev Apps) or carvel (kapp-controller's kappctrl.k14s.io Apps); default: "
    "kapply's if the cluster serves them, else kapp-controller's (kapply)",
)
# `version --controller`: kctrl's flag, reading kapply's controller (app_version.py)
CONTROLLER = Flag("controller", Kind.BOOL, False, "Get the version of the controller deployed on the cluster (kapply)")
CHDIR = Flag("chdir", Kind.STRING, "", "Working directory with app-build and other config")  # app init
NOOP = Flag("noop", Kind.BOOL, False, "Ignore resources created by the app and delete the custom resource itself")
_command = Leaves("app", MODULE, (API_GROUPS,), SECTION)
_local = Leaves("app", MODULE)  # `init`, which works on local files: no --api-groups, listed with the other commands


def app_command(section: str) -> Command:
    """`kapply app` (`a`), listed in the root's help under `section`."""
    return Command(
        "app",
        "App resources, as kctrl's app commands: list, get, status, pause, kick, delete, init (kapply)",
        aliases=("a",),
        section=section,
        children=(
            _command(
                "delete",
                "Delete app",
                "app_kctrl:delete",
                NAMESPACE,
                APP,
                NOOP,
                *wait(1.0, 300.0),
                tty=True,
                cases=(
                    ("Delete an App and what it deployed", "-a simple-app"),
                    ("Delete the App resource only, leaving what it deployed", "-a simple-app --noop"),
                ),
            ),
            _command(
                "get",
                "Get details for app",
                "app_kctrl:get",
                NAMESPACE,
                APP,
                tty=False,
                aliases=("g",),
                cases=(("Get details for an App", "-a simple-app"),),
            ),
            _local(
                "init",
                "Initialize App (experimental)",
                "app_init:init",
                CHDIR,
                tty=False,
                cases=(
                    ("Initialize an App in the current directory, answering kctrl's questions", ""),
                    ("Initialize the App whose files are in another directory", "--chdir my-app"),
                ),
            ),
            _command(
                "kick",
                "Trigger reconciliation for app",
                "app_kctrl:kick",
                NAMESPACE,
                APP,
                *wait(1.0, 300.0),
                tty=True,
                cases=(
                    ("Reconcile an App now and follow its stages", "-a simple-app"),
                    ("Reconcile an App now, without waiting", "-a simple-app --wait=false"),
                ),
            ),
            _command(
                "list",
                "List Apps",
                "app_kctrl:list_apps",
                NAMESPACE,
                all_namespaces("apps"),
                tty=False,
                aliases=LIST_ALIASES,
                cases=(("List the Apps of a namespace", "-n default"), ("In every namespace", "-A")),
            ),
            _command(
                "pause",
                "Pause reconciliation for app",
                "app_kctrl:pause",
                NAMESPACE,
                APP,
                tty=True,
                aliases=("p",),
                cases=(("Pause an App's reconciliation", "-a simple-app"),),
            ),
            _command(
                "status",
                "View status of app, and kapply's reports on it: ghost diffs, drift and owned fields",
                "app_status:status",
                NAMESPACE,
                APP,
                IGNORE_NOT_EXISTS,
                tty=True,
                aliases=("s",),
                cases=(
                    ("Show an App's last reconcile (following it until it ends) and its ghost diffs", "-a app1"),
                    ("The same, as JSON", "-a app1 -n default --json"),
                ),
            ),
        ),
    )
