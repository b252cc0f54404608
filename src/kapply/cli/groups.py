"""kapp's flags, declared once per group as kapp's cmd packages declare them (UIFlags, KubeconfigFlags, AppFlags,
DiffFlags, ApplyFlags, WaitFlags, ResourceFilterFlags, ...), and the values the commands build from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kapply.cli.command import Args, FlagSection
from kapply.cli.flags import Flag, Kind

if TYPE_CHECKING:
    from kapply.apply.options import ApplyOptions, WaitOptions
    from kapply.diff.render import DiffFormat
    from kapply.resources.kubeconfig import KubeconfigFlags

BOOL, STR, STRS, INT, FLT, DUR = Kind.BOOL, Kind.STRING, Kind.STRINGS, Kind.INT, Kind.FLOAT, Kind.DURATION

GLOBAL = (
    Flag("color", BOOL, True, "Set color output"),
    Flag("column", STRS, [], "Filter to show only given columns"),
    Flag("debug", BOOL, False, "Include debug output"),
    Flag("json", BOOL, False, "Output as JSON"),
    Flag("kube-api-burst", INT, 1000, "Set Kubernetes API client burst limit"),
    Flag("kube-api-qps", FLT, 1000.0, "Set Kubernetes API client QPS limit"),
    Flag("kubeconfig", STR, "", "Path to the kubeconfig file ($KAPP_KUBECONFIG)"),
    Flag("kubeconfig-context", STR, "", "Kubeconfig context override ($KAPP_KUBECONFIG_CONTEXT)"),
    Flag("kubeconfig-yaml", STR, "", "Kubeconfig contents as YAML ($KAPP_KUBECONFIG_YAML)"),
    Flag(
        "profile",
        STR,
        "none",
        "Name of profile to capture. One of (none|cpu|heap|goroutine|threadcreate|block|mutex)",
    ),
    Flag("profile-output", STR, "profile.pprof", "Name of the file to write the profile to"),
    Flag("warnings", BOOL, True, "Show warnings"),
    Flag("yes", BOOL, False, "Assume yes for any prompt", short="y"),
)


def tty(default: bool = False) -> Flag:
    return Flag("tty", BOOL, default, "Force TTY-like output")


APP = (
    Flag("app", STR, "", "Set app name (or label selector) (format: name, label:key=val, !key)", short="a"),
    Flag("namespace", STR, "", "Specified namespace ($KAPP_NAMESPACE or default from kubeconfig)", short="n"),
    Flag("app-namespace", STR, "", "Set app namespace (to store app state)"),
)
NAMESPACE = APP[1]
FILES = Flag("file", STRS, [], "Set file (format: /tmp/foo, https://..., -) (can repeat)", short="f")
SORT = Flag("sort", BOOL, True, "Sort by namespace, name, etc.")


def diff(prefix: str = "diff-", short: bool = True) -> tuple[Flag, ...]:
    """kapp's DiffFlags; `tools diff` has them without the `diff-` prefix."""
    return (
        Flag(f"{prefix}against-last-applied", BOOL, True, "Show changes against last applied copy when possible"),
        Flag(f"{prefix}anchored", BOOL, False, "Allow using anchored diff for large resources"),
        Flag(f"{prefix}changes", BOOL, False, "Show changes", short="c" if short else ""),
        Flag(f"{prefix}changes-yaml", BOOL, False, "Print YAML to be applied"),
        Flag(f"{prefix}context", INT, 2, "Show number of lines around changed lines"),
        Flag(f"{prefix}exit-status", BOOL, False, "Return specific exit status based on number of changes"),
        Flag(
            f"{prefix}filter",
            STR,
            "",
            'Set changes filter (example: {"and":[{"ops":["update"]},{"existingResource":{"kinds":["Deployment"]}]})',
        ),
        Flag(f"{prefix}line-numbers", BOOL, True, "Show line numbers"),
        Flag(f"{prefix}mask", BOOL, True, "Apply masking rules"),
        Flag(f"{prefix}run", BOOL, False, "Show diff and exit successfully without any further action"),
        Flag(f"{prefix}summary", BOOL, True, "Show diff summary"),
        Flag(f"{prefix}ui-alpha", BOOL, False, "Start UI server to inspect changes (alpha feature)"),
    )


def apply(delete: bool = False) -> tuple[Flag, ...]:
    flags = (
        Flag("apply-check-interval", DUR, 1.0, "Amount of time to sleep between applies"),
        Flag("apply-concurrency", INT, 5, "Maximum number of concurrent apply operations"),
        Flag("apply-default-update-strategy", STR, "", "Change default update strategy"),
        Flag("apply-exit-status", BOOL, False, "Return specific exit status based on number of changes"),
        Flag("apply-ignored", BOOL, False, "Set to apply ignored changes"),
        Flag("apply-timeout", DUR, 900.0, "Maximum amount of time to wait in apply phase"),
        Flag("exit-early-on-apply-error", BOOL, True, "Exit quickly on apply failure"),
    )
    if delete:
        return flags
    return (
        *flags,
        Flag(
            "dangerous-allow-empty-list-of-resources",
            BOOL,
            False,
            "Allow to apply empty set of resources (same as running kapp delete)",
        ),
        Flag(
            "dangerous-override-ownership-of-existing-resources",
            BOOL,
            False,
            "Steal existing resources from another app",
        ),
    )


def wait(delete: bool = False) -> tuple[Flag, ...]:
    return (
        Flag("wait", BOOL, True, "Set to wait for changes to be applied"),
        Flag("wait-check-interval", DUR, 3.0, "Amount of time to sleep between checks while waiting"),
        Flag("wait-concurrency", INT, 5, "Maximum number of concurrent wait operations"),
        Flag("wait-ignored", BOOL, delete, "Set to wait for ignored changes to be applied"),
        Flag(
            "wait-resource-timeout",
            DUR,
            0.0,
            "Maximum amount of time to wait for a resource in wait phase (0s means no timeout)",
        ),
        Flag("wait-timeout", DUR, 900.0, "Maximum amount of time to wait in wait phase"),
        Flag("exit-early-on-wait-error", BOOL, True, "Exit quickly on wait failure"),
    )


RESOURCE_FILTER = (
    Flag(
        "filter",
        STR,
        "",
        'Set filter (example: {"and":[{"not":{"resource":{"kinds":["foo%"]}}},{"resource":{"kinds":["!foo"]}}]})',
    ),
    Flag("filter-age", STR, "", "Set age filter (example: 5m-, 500h+, 10m-)"),
    Flag("filter-kind", STRS, [], "Set kinds filter (example: Pod) (can repeat)"),
    Flag("filter-kind-name", STRS, [], "Set kind-name filter (example: Pod/controller) (can repeat)"),
    Flag("filter-kind-ns", STRS, [], "Set kind-namespace filter (example: Pod/, Pod/knative-serving) (can repeat)"),
    Flag(
        "filter-kind-ns-name",
        STRS,
        [],
        "Set kind-namespace-name filter (example: Deployment/knative-serving/controller) (can repeat)",
    ),
    Flag("filter-labels", STRS, [], "Set label filter (example: x=y)"),
    Flag("filter-name", STRS, [], "Set name filter (example: controller) (can repeat)"),
    Flag("filter-ns", STRS, [], "Set namespace filter (example: knative-serving) (can repeat)"),
)

RESOURCE_VALIDATION = (
    Flag("allow-all-ns", BOOL, False, "Set to allow all namespaces for resources (does not apply to the app itself)"),
    Flag("allow-check", BOOL, False, "Enable client-side allowing"),
    Flag("allow-cluster", BOOL, False, "Set to allow cluster level for resources (does not apply to the app itself)"),
    Flag("allow-ns", STRS, [], "Set allowed namespace for resources (does not apply to the app itself)"),
)

RESOURCE_MANGLING = (
    Flag("into-ns", STR, "", "Place resources into namespace"),
    Flag("map-ns", STRS, [], "Map resources from one namespace into another (could be specified multiple times)"),
)

LOGS = (
    Flag("logs", BOOL, True, "Show logs from Pods annotated as 'kapp.k14s.io/deploy-logs'"),
    Flag("logs-all", BOOL, False, "Show logs from all Pods"),
)

DANGEROUS_SCOPE = (
    Flag("dangerous-ignore-failing-api-services", BOOL, False, "Allow to ignore failing APIServices"),
    Flag(
        "dangerous-scope-to-fallback-allowed-namespaces",
        BOOL,
        False,
        "Scope resource searching to fallback allowed namespaces",
    ),
)

PREV_APP = Flag("prev-app", STR, "", "Set previous app name")


def sections(*pairs: tuple[str, tuple[Flag, ...]]) -> tuple[FlagSection, ...]:
    return tuple(FlagSection(title, flags) for title, flags in pairs)


def kubeconfig(args: Args) -> KubeconfigFlags:
    from kapply.resources.kubeconfig import KubeconfigFlags

    return KubeconfigFlags(
        args["kubeconfig"] or None, args["kubeconfig-context"] or None, args["kubeconfig-yaml"] or None
    )


@dataclass(frozen=True, slots=True)
class AppFlags:
    name: str
    namespace: str  # "" when not given
    app_namespace: str  # "" when not given


def app(args: Args) -> AppFlags:
    return AppFlags(args["app"], args["namespace"], args["app-namespace"])


@dataclass(frozen=True, slots=True)
class DiffFlags:
    """kapp's DiffFlags, as values."""

    summary: bool
    changes: bool
    context: int
    line_numbers: bool
    mask: bool
    against_last_applied: bool
    run: bool
    exit_status: bool
    changes_yaml: bool = False
    anchored: bool = False

    def format(self) -> DiffFormat:
        from kapply.diff.render import DiffFormat

        return DiffFormat(context=self.context, line_numbers=self.line_numbers, mask=self.mask, anchored=self.anchored)


def diff_flags(args: Args, prefix: str = "diff-") -> DiffFlags:
    return DiffFlags(
        summary=args[f"{prefix}summary"],
        changes=args[f"{prefix}changes"],
        context=args[f"{prefix}context"],
        line_numbers=args[f"{prefix}line-numbers"],
        mask=args[f"{prefix}mask"],
        against_last_applied=args[f"{prefix}against-last-applied"],
        run=args[f"{prefix}run"],
        exit_status=args[f"{prefix}exit-status"],
        changes_yaml=args[f"{prefix}changes-yaml"],
        anchored=args[f"{prefix}anchored"],
    )


def apply_options(args: Args, prefix: str = "") -> ApplyOptions:
    """kapp's ApplyFlags; `prefix` "delete-" reads `app-group deploy`'s copies used for the apps it deletes."""
    from kapply.apply.options import ApplyOptions

    return ApplyOptions(
        concurrency=args[f"{prefix}apply-concurrency"],
        default_update_strategy=args[f"{prefix}apply-default-update-strategy"],
        timeout=args[f"{prefix}apply-timeout"],
        ignored=args[f"{prefix}apply-ignored"],
        exit_early=args[f"{prefix}exit-early-on-apply-error"],
    )


def wait_options(args: Args, prefix: str = "") -> WaitOptions:
    from kapply.apply.options import WaitOptions

    return WaitOptions(
        wait=args[f"{prefix}wait"],
        timeout=args[f"{prefix}wait-timeout"],
        resource_timeout=args[f"{prefix}wait-resource-timeout"],
        check_interval=args[f"{prefix}wait-check-interval"],
        concurrency=args[f"{prefix}wait-concurrency"],
        ignored=args[f"{prefix}wait-ignored"],
        exit_early=args[f"{prefix}exit-early-on-wait-error"],
        ignore_failing_api_services=args.parsed.flags.get("dangerous-ignore-failing-api-services", False),
    )
