"""kapp's commands and flags, as kapply offers them: the same names, aliases, flags, types and defaults (checked
against the real kapp's help by tests/compat/test_flags.py). kapp's flag groups are declared, each flag once, in
kapply.flags; the commands here lay them out in the sections kapp's help shows, beside the flags of their own. A flag
kapply does not implement yet is accepted by the parser and refused, with a clear message, when it is set
(`supported=False`); docs/compatibility.md lists them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from kapply import flags as f
from kapply.cli.app_commands import CONTROLLER, app_command
from kapply.cli.command import Command
from kapply.cli.controller_flags import API_GROUPS, DRIFT_FLAGS
from kapply.cli.controller_manifests import manifests_command
from kapply.cli.dashboard import dashboard_command
from kapply.cli.dev import dev_command
from kapply.cli.groups import sections
from kapply.cli.package.commands import package_command
from kapply.flags import Completes, Flag, Kind

PROGRAM = "kapply"
APP_SECTION, SUPPORT_SECTION, MISC_SECTION = "App Commands", "App Support Commands", "Misc Commands"
LIST_ALIASES = ("l", "ls")

DEPLOY_EXAMPLES = """
  # Deploy app 'app1' based on config files in config/
  kapply deploy -a app1 -f config/

  # Deploy app 'app1' while showing full text diff
  kapply deploy -a app1 -f config/ --diff-changes

  # Deploy app 'app1' based on remote file
  kapply deploy -a app1 \\
    -f https://github.com/...download/v0.6.0/crds.yaml \\
    -f https://github.com/...download/v0.6.0/release.yaml
"""

LOGS_EXAMPLES = """
  # Follow all pod logs in app 'app1'
  kapply logs -a app1 -f

  # Show logs from pods that start with 'web'
  kapply logs -a app1 -f -m web%
"""

APP_GROUP_EXAMPLES = """$ ls my-repo
.    ..    app1/    app2/    app3/

$ kapply app-group deploy -g my-env --directory my-repo
"""

COMPLETION_EXAMPLES = """  # bash >= 4.0
  source <(kapply completion bash)

  # zsh
  kapply completion zsh > "${fpath[1]}/_kapply"
"""

CONTROLLER_EXAMPLES = """
  # Reconcile the Apps of every namespace with the kubeconfig's identity (out of cluster)
  kapply controller

  # Reconcile the Apps of namespace 'team-a' only, without a leader Lease
  kapply controller -n team-a --leader-elect=false

  # In a pod, as config/controller/deployment.yml runs it (see `kapply controller manifests --help`)
  kapply controller --in-cluster --shards=4 --metrics-bind-address=:8080 --log-format=json
"""

FILE2 = Flag(
    "file2",
    Kind.STRINGS,
    [],
    "Set second file (format: /tmp/foo, https://..., -) (can repeat)",
    completes=Completes.FILE,
)


# `kapply controller -n`: its own, not kapp's `-n`
CONTROLLER_NAMESPACE = Flag("namespace", Kind.STRING, "", "Reconcile Apps of this namespace only", short="n")


def global_flags() -> tuple[Flag, ...]:
    """kapp's global flags."""
    return f.GLOBAL_FLAGS


# kapp's `app-group deploy` takes deploy's other flags but these
APP_GROUP_DEPLOY_EXCLUDED = (
    f.PREV_APP,
    f.SORT,
    f.APP_NAMESPACE,
    *f.DANGEROUS_SCOPE_FLAGS,
)


def _app_command(name: str, short: str, handler: str, *extra: Flag, **kwargs: object) -> Command:
    """A command that works on one app: -a, -n, --app-namespace, its own flags and --tty."""
    return Command(name, short, handler, flag_sections=sections(("Flags", (*f.APP_FLAGS, *extra, f.TTY))), **kwargs)  # type: ignore[arg-type]


def _prefixed(flags: Iterable[Flag], prefix: str) -> tuple[Flag, ...]:
    return tuple(replace(flag, name=prefix + flag.name, short="") for flag in flags)


def tree() -> Command:
    deploy = Command(
        "deploy",
        "Deploy app",
        "kapply.cli.deploy:deploy",
        aliases=("d", "dep"),
        section=APP_SECTION,
        examples=DEPLOY_EXAMPLES,
        flag_sections=sections(
            ("Common Flags", (f.APP, f.FILE, f.NAMESPACE)),
            ("Diff Flags", f.DIFF_FLAGS),
            ("Apply Flags", f.APPLY_FLAGS),
            ("Wait Flags", f.WAIT_FLAGS),
            ("Resource Filter Flags", f.RESOURCE_FILTER_FLAGS),
            ("Resource Validation Flags", f.RESOURCE_VALIDATION_FLAGS),
            ("Resource Mangling Flags", f.RESOURCE_MANGLING_FLAGS),
            ("Logs Flags", f.LOGS_FLAGS),
            ("Available/Other Flags", (*f.DEPLOY_OTHER_FLAGS, f.tty(True))),
        ),
    )
    delete = Command(
        "delete",
        "Delete app",
        "kapply.cli.delete:delete",
        section=APP_SECTION,
        flag_sections=sections(
            (
                "Flags",
                (*f.APP_FLAGS, *f.DELETE_FLAGS, f.tty(True)),
            ),
        ),
    )
    inspect = _app_command(
        "inspect",
        "Inspect app",
        "kapply.cli.inspect:inspect",
        *f.RESOURCE_FILTER_FLAGS,
        *f.DANGEROUS_SCOPE_FLAGS,
        Flag("managed-fields", Kind.BOOL, False, "Keep the metadata.managedFields when printing objects"),
        Flag("raw", Kind.BOOL, False, "Output raw YAML resource content"),
        Flag("status", Kind.BOOL, False, "Output status content"),
        Flag("tree", Kind.BOOL, False, "Tree view", short="t"),
        aliases=("i", "is", "insp"),
        section=APP_SECTION,
    )
    list_apps = Command(
        "list",
        "List all apps in a namespace",
        "kapply.cli.list_apps:list_apps",
        aliases=LIST_ALIASES,
        section=APP_SECTION,
        flag_sections=sections(
            (
                "Flags",
                (
                    Flag("all-namespaces", Kind.BOOL, False, "List apps in all namespaces", short="A"),
                    f.FILTER_AGE,
                    f.FILTER_LABELS,
                    f.NAMESPACE,
                    f.TTY,
                ),
            ),
        ),
    )
    logs = _app_command(
        "logs",
        "Print app's Pod logs",
        "kapply.cli.logs:logs",
        Flag(
            "container-name",
            Kind.STRINGS,
            [],
            "Set container name to filter logs (% acts as wildcard, e.g. 'app%') (can repeat)",
            short="c",
        ),
        Flag("container-tag", Kind.BOOL, True, "Include container tag"),
        Flag("follow", Kind.BOOL, False, "As new pods are added, new pod logs will be printed", short="f"),
        Flag("lines", Kind.INT, 10, "Limit to number of lines (use -1 to remove limit)"),
        Flag("pod-name", Kind.STRING, "", "Set pod name to filter logs (% acts as wildcard, e.g. 'app%')", short="m"),
        aliases=("l",),
        section=APP_SECTION,
        examples=LOGS_EXAMPLES,
    )
    app_change = Command(
        "app-change",
        "App change (garbage-collect, list, rollback)",
        aliases=("ac", "app-changes", "appchange", "appchanges"),
        section=SUPPORT_SECTION,
        children=(
            _app_command(
                "garbage-collect",
                "Garbage collect app changes",
                "kapply.cli.app_change:gc",
                Flag("max", Kind.INT, 200, "Maximum number of app changes to keep"),
                aliases=("gc",),
            ),
            _app_command(
                "list",
                "List app changes",
                "kapply.cli.app_change:list_changes",
                Flag(
                    "after",
                    Kind.STRING,
                    "",
                    "List app changes after given time (formats: 2022-01-10T12:15:25Z, 2022-01-10)",
                ),
                Flag(
                    "before",
                    Kind.STRING,
                    "",
                    "List app changes before given time (formats: 2022-01-10T12:15:25Z, 2022-01-10)",
                ),
                Flag("diff", Kind.BOOL, False, "Show the diff each change applied (kapply)"),
                aliases=LIST_ALIASES,
            ),
            Command(
                "rollback",
                "Deploy again what an app change applied (kapply)",
                "kapply.cli.app_change:rollback",
                flag_sections=sections(
                    (
                        "Flags",
                        (
                            *f.APP_FLAGS,
                            Flag("to", Kind.STRING, "", "Set app change to roll back to (format: web-change-x1y2z)"),
                            f.TTY,
                        ),
                    ),
                    ("Diff Flags", f.DIFF_FLAGS),
                    ("Apply Flags", f.APPLY_FLAGS),
                    ("Wait Flags", f.WAIT_FLAGS),
                ),
            ),
        ),
    )
    group_flags = (
        Flag(
            "directory", Kind.STRING, "", "Set directory (format: /tmp/foo)", short="d", completes=Completes.DIRECTORY
        ),
        Flag("group", Kind.STRING, "", "Set app group name", short="g"),
        f.NAMESPACE,
        f.APP_NAMESPACE,
    )
    app_group = Command(
        "app-group",
        "app-group will deploy/delete an application for each subdirectory within a directory (delete, deploy)",
        examples=APP_GROUP_EXAMPLES,
        aliases=("ag", "appgroup"),
        section=SUPPORT_SECTION,
        children=(
            Command(
                "delete",
                "Delete app group",
                "kapply.cli.app_group:delete",
                flag_sections=sections(
                    (
                        "Flags",
                        (
                            group_flags[1],
                            *group_flags[2:],
                            *f.DIFF_FLAGS,
                            *f.DELETE_APPLY_FLAGS,
                            *f.DELETE_WAIT_FLAGS,
                            f.tty(True),
                        ),
                    ),
                ),
            ),
            Command(
                "deploy",
                "Deploy app group",
                "kapply.cli.app_group:deploy",
                aliases=("d", "dep"),
                flag_sections=sections(
                    (
                        "Flags",
                        (
                            *group_flags,
                            *f.DIFF_FLAGS,
                            *f.APPLY_FLAGS,
                            *f.WAIT_FLAGS,
                            *f.RESOURCE_FILTER_FLAGS,
                            *f.RESOURCE_VALIDATION_FLAGS,
                            *f.RESOURCE_MANGLING_FLAGS,
                            *f.LOGS_FLAGS,
                            *(flag for flag in f.DEPLOY_OTHER_FLAGS if flag not in APP_GROUP_DEPLOY_EXCLUDED),
                            *_prefixed((*f.DELETE_APPLY_FLAGS, *f.DELETE_WAIT_FLAGS), "delete-"),
                            f.tty(True),
                        ),
                    ),
                ),
            ),
        ),
    )
    config_map = Command(
        "config-map",
        "Config map (list)",
        aliases=("cm", "cfg", "config-maps", "configmap", "configmaps"),
        section=SUPPORT_SECTION,
        children=(
            _app_command(
                "list",
                "List config maps",
                "kapply.cli.config_map:list_config_maps",
                Flag("values", Kind.BOOL, False, "Show config map values"),
                aliases=LIST_ALIASES,
            ),
        ),
    )
    service_account = Command(
        "service-account",
        "Service account (list)",
        aliases=("sa", "service-accounts", "serviceccounts", "serviceaccount"),
        section=SUPPORT_SECTION,
        children=(
            _app_command(
                "list",
                "List service accounts",
                "kapply.cli.service_account:list_service_accounts",
                aliases=LIST_ALIASES,
            ),
        ),
    )
    tools = Command(
        "tools",
        "Tools (diff, inspect, list-labels)",
        aliases=("t",),
        section=MISC_SECTION,
        children=(
            Command(
                "diff",
                "Diff files against files2",
                "kapply.cli.tools:diff",
                flag_sections=sections(("Flags", (*f.TOOLS_DIFF_FLAGS, f.FILE, FILE2, f.SORT, f.TTY))),
            ),
            Command(
                "inspect",
                "Inspect resources",
                "kapply.cli.tools_inspect:inspect",
                aliases=("i",),
                flag_sections=sections(
                    (
                        "Flags",
                        (
                            f.FILE,
                            *f.RESOURCE_FILTER_FLAGS,
                            Flag("raw", Kind.BOOL, False, "Output raw YAML resource content"),
                            f.SORT,
                            f.TTY,
                        ),
                    ),
                ),
            ),
            Command(
                "list-labels",
                "List labels",
                "kapply.cli.list_labels:list_labels",
                aliases=("ls-labels",),
                flag_sections=sections(
                    (
                        "Flags",
                        (
                            Flag("accessor", Kind.STRING, "labels", "Extracted field (labels, annotations, ownerrefs)"),
                            f.FILE,
                            f.SORT,
                            f.TTY,
                            Flag("values", Kind.BOOL, False, "Show values"),
                        ),
                    ),
                ),
            ),
        ),
    )
    plain_tty = sections(("Flags", (f.TTY,)))
    root = Command(
        PROGRAM,
        "kapply helps to manage applications on your Kubernetes cluster",
        handler="kapply.cli.main:version",  # for --version
        flag_sections=sections(("Flags", (Flag("version", Kind.BOOL, False, "version for kapply", short="v"),))),
        children=(
            delete,
            deploy,
            inspect,
            list_apps,
            logs,
            app_change,
            app_group,
            config_map,
            _app_command("label", "Print specified app label", "kapply.cli.label:label", section=SUPPORT_SECTION),
            _app_command(
                "rename",
                "Rename app",
                "kapply.cli.rename:rename",
                Flag("new-name", Kind.STRING, "", "Set new name (format: new-name)"),
                Flag("new-namespace", Kind.STRING, "", "Set new namespace (format: new-namespace)"),
                section=SUPPORT_SECTION,
            ),
            service_account,
            Command(
                "deploy-config",
                "Show default deploy config",
                "kapply.cli.tools:deploy_config",
                section=MISC_SECTION,
                flag_sections=plain_tty,
            ),
            tools,
            Command(
                "completion",
                "Output shell completion code for the specified shell (bash, zsh or fish)",
                "kapply.cli.completion:completion",
                examples=COMPLETION_EXAMPLES,
                accepts_args=1,
                flag_sections=plain_tty,
            ),
            app_command(MISC_SECTION),
            Command(
                "controller",
                "Run the App controller: reconcile kapply.dev Apps on their sync period and on drift (kapply)",
                "kapply.cli.controller:controller",
                section=MISC_SECTION,
                children=(manifests_command(),),
                examples=CONTROLLER_EXAMPLES,
                flag_sections=sections(
                    (
                        "Flags",
                        (
                            Flag("in-cluster", Kind.BOOL, False, "Use the pod's service account (in cluster)"),
                            CONTROLLER_NAMESPACE,
                            Flag(
                                "concurrency",
                                Kind.INT,
                                8,
                                "Number of Apps reconciled at once (and as many PackageRepositories, PackageInstalls)",
                            ),
                            Flag(
                                "namespace-concurrency",
                                Kind.INT,
                                0,
                                "Objects of one namespace reconciled at once, per kind (0: half of --concurrency, "
                                "at least 1)",
                            ),
                            Flag("default-sync-period", Kind.DURATION, 30.0, "Sync period of Apps that set none"),
                            Flag("min-sync-period", Kind.DURATION, 30.0, "Shortest sync period an App may set"),
                            Flag("leader-elect", Kind.BOOL, True, "Reconcile only while holding the leader Lease"),
                            Flag(
                                "lease-namespace",
                                Kind.STRING,
                                "",
                                "Namespace of the leader Lease (default: the pod's in cluster, else kapply-system)",
                            ),
                            Flag("lease-name", Kind.STRING, "kapply-controller", "Name of the leader Lease"),
                            Flag(
                                "leader-elect-lease-duration",
                                Kind.DURATION,
                                15.0,
                                "Time a candidate waits before taking a Lease it has not seen renewed (leader or "
                                "--shards Leases)",
                            ),
                            Flag(
                                "leader-elect-renew-deadline",
                                Kind.DURATION,
                                10.0,
                                "Time the holder of a Lease keeps working without a successful renewal (shorter than "
                                "--leader-elect-lease-duration)",
                            ),
                            Flag(
                                "leader-elect-retry-period",
                                Kind.DURATION,
                                5.0,
                                "Time between attempts to take or renew a Lease (shorter than "
                                "--leader-elect-renew-deadline)",
                            ),
                            Flag(
                                "shards",
                                Kind.INT,
                                1,
                                "Shards the objects are divided into, one Lease each, shared by the replicas "
                                "(1: one leader reconciles everything)",
                            ),
                            Flag(
                                "metrics-bind-address",
                                Kind.STRING,
                                ":8080",
                                "Address of /metrics, /healthz and /readyz ([HOST]:PORT; 0: not served)",
                            ),
                            Flag("log-format", Kind.STRING, "text", "Log lines as text or json (one object per line)"),
                            *DRIFT_FLAGS,
                            API_GROUPS,
                            Flag(
                                "ghost-diff-quiet-syncs",
                                Kind.INT,
                                10,
                                "Syncs in a row without a ghost diff before it leaves the App's status",
                            ),
                            Flag(
                                "progress-interval", Kind.DURATION, 10.0, "Seconds between status updates of a deploy"
                            ),
                            Flag(
                                "dangerous-allow-file-urls",
                                Kind.BOOL,
                                False,
                                "Let Apps fetch file:// git URLs (repositories on the controller's own disk)",
                            ),
                            Flag(
                                "dangerous-allow-local-sources",
                                Kind.BOOL,
                                False,
                                "Let Apps fetch from loopback and link-local addresses and from the API server's",
                            ),
                            Flag(
                                "dangerous-allow-plain-http-registries",
                                Kind.BOOL,
                                False,
                                "Let Apps pull images over plain http from registries on localhost, 127.0.0.1 or [::1]",
                            ),
                            Flag(
                                "fetch-timeout",
                                Kind.DURATION,
                                120.0,
                                "Longest an http download or an image or bundle pull of an App's source may take",
                            ),
                            Flag(
                                "fetch-min-rate",
                                Kind.INT,
                                1024,
                                "Slowest a download of an App's source may go, in bytes per second (0: no minimum)",
                            ),
                            Flag(
                                "fetch-min-rate-window",
                                Kind.DURATION,
                                30.0,
                                "Seconds over which --fetch-min-rate is measured",
                            ),
                            Flag(
                                "sandbox-memory-mib",
                                Kind.INT,
                                1024,
                                "MiB of heap each process of an App's fetch and template stage may use (its sandbox)",
                            ),
                            Flag(
                                "sandbox-cpu",
                                Kind.DURATION,
                                120.0,
                                "CPU time each process of an App's fetch and template stage may use (its sandbox)",
                            ),
                            Flag(
                                "sandbox-timeout",
                                Kind.DURATION,
                                300.0,
                                "Longest an App's fetch and template stage may take, all of it (its sandbox)",
                            ),
                            Flag(
                                "packaging",
                                Kind.BOOL,
                                True,
                                "Also reconcile PackageRepositories and PackageInstalls (packaging.kapply.dev, or with "
                                "--api-groups carvel packaging.carvel.dev)",
                            ),
                            Flag(
                                "package-install-default-sync-period",
                                Kind.DURATION,
                                600.0,
                                "Sync period of the Apps of PackageInstalls that set none (at least 30s)",
                            ),
                            Flag(
                                "packaging-global-namespace",
                                Kind.STRING,
                                "",
                                "Namespace whose Packages and PackageMetadatas every namespace sees (default: "
                                "kapply-packaging-global; kapp-controller-packaging-global with --api-groups carvel)",
                            ),
                            f.TTY,
                        ),
                    ),
                ),
            ),
            package_command(MISC_SECTION),
            dev_command(MISC_SECTION),
            dashboard_command(MISC_SECTION),
            Command(
                "version",
                "Print client version",
                "kapply.cli.app_version:version",
                flag_sections=sections(("Flags", (CONTROLLER, f.TTY))),
            ),
        ),
    )
    # cobra's root description ends with the sorted command names
    names = ", ".join(sorted(c.name for c in root.children if not c.hidden))
    return replace(root, short=f"{root.short} ({names})")
