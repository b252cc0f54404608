"""kapp's flags, each declared once, on the option it sets, as kapp's cmd packages declare them (`DeployFlags.Set`:
`BoolVar(&s.Patch, "patch", false, ...)`): its name, type, default, help and shorthand, and the fields it sets
(`Sets`). Everything else is derived from these declarations: the CLI's flag sections (kapply.cli.tree), the options
`kapply.api.deploy_options` and `delete_options` build from flag values by name (`setting`), the types of the
controller's rawOptions allow-list (kapply.controller.options), and how a plan is shown (`DiffView`).

A flag that sets no option steers the command itself (`--json`, `--apply-exit-status`, `--logs-all`): a command reads
it through its declaration (`args[APPLY_EXIT_STATUS]`), never by its name; tests/unit/test_flags_declared.py fails
when another module names a declared flag. Converting a value (`--map-ns` strings into a map, `--diff-filter`
JSON into a ChangeFilter) imports what it needs when it runs, so that the CLI's start-up stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum, StrEnum
from typing import TYPE_CHECKING, Any

from kapply.errors import KapplyError
from kapply.values import parse_bool, parse_duration, parse_float, parse_int

if TYPE_CHECKING:
    from kapply.diff.drift import DriftPolicy
    from kapply.diff.filter import ChangeFilter
    from kapply.diff.render import DiffFormat
    from kapply.resources.allow import AllowRules
    from kapply.resources.filters import ResourceFilter


class Kind(StrEnum):
    """A flag's type, named as cobra's help names it."""

    BOOL = ""
    STRING = "string"
    STRINGS = "strings"
    INT = "int"
    FLOAT = "float32"
    DURATION = "duration"


class Completes(StrEnum):
    """What a flag's value is, for shell completion."""

    VALUE = "value"
    FILE = "file"
    DIRECTORY = "dir"


class Target(Enum):
    """The options a flag sets a field of (kapp's flag structs)."""

    DEPLOY = "kapply.deploy.DeployOptions"
    DELETE = "kapply.delete.DeleteOptions"
    DIFF = "kapply.deploy.DiffOptions"
    APPLY = "kapply.apply.options.ApplyOptions"
    WAIT = "kapply.apply.options.WaitOptions"
    RESOURCE_FILTER = "kapply.resources.filters.from_flags"  # its keyword arguments
    ALLOW = "kapply.flags.allow_rules"  # kapply.resources.allow.AllowRules, and whether it is checked at all
    DIFF_VIEW = "kapply.flags.DiffView"

    def __call__(self, field: str, convert: Convert | None = None) -> Sets:
        """`Target.DIFF("run")`: the `run` field of DiffOptions, as a flag declares it sets."""
        return Sets(self, field, convert)


Convert = Callable[[Any, "Flag"], Any]


@dataclass(frozen=True, slots=True)
class Sets:
    """A field a flag sets: `target`'s `field`, to the flag's value, or to what `convert(value, flag)` makes of it."""

    target: Target
    field: str
    convert: Convert | None = None


@dataclass(frozen=True, slots=True)
class Flag:
    name: str  # the long name, without dashes
    kind: Kind
    default: Any
    help: str
    short: str = ""
    sets: tuple[Sets, ...] = ()
    hidden: bool = False
    supported: bool = True  # False: accepted by the parser, refused when set (not implemented yet)
    completes: Completes = Completes.VALUE

    @property
    def label(self) -> str:
        """`-c, --diff-changes` or `--diff-run`, as pflag names a flag in errors."""
        return f"-{self.short}, --{self.name}" if self.short else f"--{self.name}"


def _split_strings(text: str) -> list[str]:
    """pflag's StringSlice: one value is a CSV line (`a,b` is two values; quotes protect commas). Without quotes or
    line breaks, as most values are (`-f app.yml`), that is a split at the commas, done without importing csv."""
    if text == "":
        return []
    if not any(c in text for c in '"\r\n'):
        return text.split(",")
    import csv
    import io

    try:
        return next(csv.reader(io.StringIO(text)))
    except csv.Error as e:
        raise ValueError(str(e)) from e


def convert(flag: Flag, text: str) -> Any:
    """A flag's value from its text, as Go parses it (`strconv.ParseBool`, `ParseInt` with base prefixes,
    `time.ParseDuration`, pflag's StringSlice); ValueError, with Go's message, for a text of the wrong type."""
    match flag.kind:
        case Kind.BOOL:
            return parse_bool(text)
        case Kind.INT:
            return parse_int(text)
        case Kind.FLOAT:
            return parse_float(text)
        case Kind.DURATION:
            return parse_duration(text)
        case Kind.STRINGS:
            return _split_strings(text)
        case _:
            return text


def setting(flags: Iterable[Flag], target: Target, values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The fields of `target` that `flags` set, by field name: each flag's value in `values` (by its name, after
    `prefix`), else its declared default, converted as its declaration says."""
    fields = {}
    for flag in flags:
        for sets in flag.sets:
            if sets.target is target:
                value = values.get(prefix + flag.name, flag.default)
                fields[sets.field] = value if sets.convert is None else sets.convert(value, flag)
    return fields


def _pairs(values: Sequence[str], flag: Flag) -> dict[str, str]:
    out = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise KapplyError(f"Expected --{flag.name} in format 'key=value', got '{value}'")
        out[key] = val
    return out


def _drift_policy(value: str, flag: Flag) -> DriftPolicy:
    from kapply.diff.drift import DriftPolicy

    try:
        return DriftPolicy(value)
    except ValueError:
        choices = ", ".join(p.value for p in DriftPolicy)
        raise KapplyError(f"Expected --{flag.name} to be one of {choices}, got '{value}'") from None


def _change_filter(value: str, _flag: Flag) -> ChangeFilter | None:
    from kapply.diff.filter import parse_change_filter

    return parse_change_filter(value)


def _preflight(value: str, _flag: Flag) -> tuple[str, ...] | None:
    from kapply.apply.preflight import parse

    return parse(value)


def _strings(values: Sequence[str], _flag: Flag) -> tuple[str, ...]:
    return tuple(values)


BOOL, STR, STRS, INT, FLT, DUR = Kind.BOOL, Kind.STRING, Kind.STRINGS, Kind.INT, Kind.FLOAT, Kind.DURATION
T = Target

# kapp's global flags (UIFlags, KubeconfigFlags, LoggerFlags, ...); those without a field are read by the CLI itself
COLUMN = Flag("column", STRS, (), "Filter to show only given columns")
DEBUG = Flag("debug", BOOL, False, "Include debug output")
JSON = Flag("json", BOOL, False, "Output as JSON")
KUBECONFIG = Flag("kubeconfig", STR, "", "Path to the kubeconfig file ($KAPP_KUBECONFIG)", completes=Completes.FILE)
KUBECONFIG_CONTEXT = Flag("kubeconfig-context", STR, "", "Kubeconfig context override ($KAPP_KUBECONFIG_CONTEXT)")
KUBECONFIG_YAML = Flag("kubeconfig-yaml", STR, "", "Kubeconfig contents as YAML ($KAPP_KUBECONFIG_YAML)")
WARNINGS = Flag("warnings", BOOL, True, "Show warnings")
YES = Flag("yes", BOOL, False, "Assume yes for any prompt", short="y")
GLOBAL_FLAGS = (
    Flag("color", BOOL, True, "Set color output"),
    COLUMN,
    DEBUG,
    JSON,
    Flag("kube-api-burst", INT, 1000, "Set Kubernetes API client burst limit"),
    Flag("kube-api-qps", FLT, 1000.0, "Set Kubernetes API client QPS limit"),
    KUBECONFIG,
    KUBECONFIG_CONTEXT,
    KUBECONFIG_YAML,
    # cannot work without Go (see docs/compatibility.md)
    Flag(
        "profile",
        STR,
        "none",
        "Name of profile to capture. One of (none|cpu|heap|goroutine|threadcreate|block|mutex)",
        supported=False,
    ),
    Flag("profile-output", STR, "profile.pprof", "Name of the file to write the profile to", supported=False),
    WARNINGS,
    YES,
)
TTY = Flag("tty", BOOL, False, "Force TTY-like output")


def tty(default: bool) -> Flag:
    """`--tty` with the command's default (kapp's commands that show changes are TTY-like by default)."""
    return replace(TTY, default=default)


APP = Flag("app", STR, "", "Set app name (or label selector) (format: name, label:key=val, !key)", short="a")
NAMESPACE = Flag("namespace", STR, "", "Specified namespace ($KAPP_NAMESPACE or default from kubeconfig)", short="n")
APP_NAMESPACE = Flag("app-namespace", STR, "", "Set app namespace (to store app state)")
APP_FLAGS = (APP, NAMESPACE, APP_NAMESPACE)
FILE = Flag(
    "file", STRS, (), "Set file (format: /tmp/foo, https://..., -) (can repeat)", short="f", completes=Completes.FILE
)
SORT = Flag("sort", BOOL, True, "Sort by namespace, name, etc.")
PREV_APP = Flag("prev-app", STR, "", "Set previous app name", sets=(T.DEPLOY("prev_app"), T.DELETE("prev_app")))

# kapp's DiffFlags
DIFF_UI_ALPHA = Flag("diff-ui-alpha", BOOL, False, "Start UI server to inspect changes (alpha feature)")
DIFF_FLAGS = (
    Flag(
        "diff-against-last-applied",
        BOOL,
        True,
        "Show changes against last applied copy when possible",
        sets=(T.DIFF("against_last_applied"),),
    ),
    Flag(
        "diff-anchored",
        BOOL,
        False,
        "Allow using anchored diff for large resources",
        sets=(T.DIFF("anchored"), T.DIFF_VIEW("anchored")),
    ),
    Flag("diff-changes", BOOL, False, "Show changes", short="c", sets=(T.DIFF_VIEW("changes"),)),
    Flag("diff-changes-yaml", BOOL, False, "Print YAML to be applied", sets=(T.DIFF_VIEW("changes_yaml"),)),
    Flag("diff-context", INT, 2, "Show number of lines around changed lines", sets=(T.DIFF_VIEW("context"),)),
    Flag(
        "diff-exit-status",
        BOOL,
        False,
        "Return specific exit status based on number of changes",
        sets=(T.DIFF_VIEW("exit_status"),),
    ),
    Flag(
        "diff-filter",
        STR,
        "",
        'Set changes filter (example: {"and":[{"ops":["update"]},{"existingResource":{"kinds":["Deployment"]}]})',
        sets=(T.DEPLOY("change_filter", _change_filter), T.DELETE("change_filter", _change_filter)),
    ),
    Flag("diff-line-numbers", BOOL, True, "Show line numbers", sets=(T.DIFF_VIEW("line_numbers"),)),
    Flag("diff-mask", BOOL, True, "Apply masking rules", sets=(T.DIFF_VIEW("mask"),)),
    Flag(
        "diff-run",
        BOOL,
        False,
        "Show diff and exit successfully without any further action",
        sets=(T.DIFF("run"), T.DIFF_VIEW("run")),
    ),
    Flag("diff-summary", BOOL, True, "Show diff summary", sets=(T.DIFF_VIEW("summary"),)),
    DIFF_UI_ALPHA,
)
# `tools diff` has kapp's DiffFlags without their prefix (DiffFlags.SetWithPrefix(""))
TOOLS_DIFF_FLAGS = tuple(replace(f, name=f.name.removeprefix("diff-")) for f in DIFF_FLAGS)

# kapp's ApplyFlags
APPLY_EXIT_STATUS = Flag("apply-exit-status", BOOL, False, "Return specific exit status based on number of changes")
APPLY_TIMEOUT = Flag(
    "apply-timeout", DUR, 900.0, "Maximum amount of time to wait in apply phase", sets=(T.APPLY("timeout"),)
)
DELETE_APPLY_FLAGS = (
    Flag("apply-check-interval", DUR, 1.0, "Amount of time to sleep between applies"),
    Flag(
        "apply-concurrency",
        INT,
        5,
        "Maximum number of concurrent apply operations",
        sets=(T.APPLY("concurrency"),),
    ),
    Flag(
        "apply-default-update-strategy",
        STR,
        "",
        "Change default update strategy",
        sets=(T.APPLY("default_update_strategy"),),
    ),
    APPLY_EXIT_STATUS,
    Flag("apply-ignored", BOOL, False, "Set to apply ignored changes", sets=(T.APPLY("ignored"),)),
    APPLY_TIMEOUT,
    Flag("exit-early-on-apply-error", BOOL, True, "Exit quickly on apply failure", sets=(T.APPLY("exit_early"),)),
)
APPLY_FLAGS = (
    *DELETE_APPLY_FLAGS,
    Flag(
        "dangerous-allow-empty-list-of-resources",
        BOOL,
        False,
        "Allow to apply empty set of resources (same as running kapp delete)",
        sets=(T.DEPLOY("allow_empty"),),
    ),
    Flag(
        "dangerous-override-ownership-of-existing-resources",
        BOOL,
        False,
        "Steal existing resources from another app",
        sets=(T.DEPLOY("override_ownership"),),
    ),
)

# kapp's WaitFlags
WAIT_IGNORED = Flag(
    "wait-ignored", BOOL, False, "Set to wait for ignored changes to be applied", sets=(T.WAIT("ignored"),)
)
WAIT_FLAGS = (
    Flag("wait", BOOL, True, "Set to wait for changes to be applied", sets=(T.WAIT("wait"),)),
    Flag(
        "wait-check-interval",
        DUR,
        3.0,
        "Amount of time to sleep between checks while waiting",
        sets=(T.WAIT("check_interval"),),
    ),
    Flag(
        "wait-concurrency",
        INT,
        5,
        "Maximum number of concurrent wait operations",
        sets=(T.WAIT("concurrency"),),
    ),
    WAIT_IGNORED,
    Flag(
        "wait-resource-timeout",
        DUR,
        0.0,
        "Maximum amount of time to wait for a resource in wait phase (0s means no timeout)",
        sets=(T.WAIT("resource_timeout"),),
    ),
    Flag("wait-timeout", DUR, 900.0, "Maximum amount of time to wait in wait phase", sets=(T.WAIT("timeout"),)),
    Flag("exit-early-on-wait-error", BOOL, True, "Exit quickly on wait failure", sets=(T.WAIT("exit_early"),)),
)
# kapp's delete waits for ignored changes by default
DELETE_WAIT_FLAGS = tuple(replace(f, default=True) if f is WAIT_IGNORED else f for f in WAIT_FLAGS)

# kapp's ResourceFilterFlags
FILTER_AGE = Flag("filter-age", STR, "", "Set age filter (example: 5m-, 500h+, 10m-)", sets=(T.RESOURCE_FILTER("age"),))
FILTER_LABELS = Flag("filter-labels", STRS, (), "Set label filter (example: x=y)", sets=(T.RESOURCE_FILTER("labels"),))
RESOURCE_FILTER_FLAGS = (
    Flag(
        "filter",
        STR,
        "",
        'Set filter (example: {"and":[{"not":{"resource":{"kinds":["foo%"]}}},{"resource":{"kinds":["!foo"]}}]})',
        sets=(T.RESOURCE_FILTER("filter_json"),),
    ),
    FILTER_AGE,
    Flag(
        "filter-kind",
        STRS,
        (),
        "Set kinds filter (example: Pod) (can repeat)",
        sets=(T.RESOURCE_FILTER("kinds"),),
    ),
    Flag(
        "filter-kind-name",
        STRS,
        (),
        "Set kind-name filter (example: Pod/controller) (can repeat)",
        sets=(T.RESOURCE_FILTER("kind_names"),),
    ),
    Flag(
        "filter-kind-ns",
        STRS,
        (),
        "Set kind-namespace filter (example: Pod/, Pod/knative-serving) (can repeat)",
        sets=(T.RESOURCE_FILTER("kind_namespaces"),),
    ),
    Flag(
        "filter-kind-ns-name",
        STRS,
        (),
        "Set kind-namespace-name filter (example: Deployment/knative-serving/controller) (can repeat)",
        sets=(T.RESOURCE_FILTER("kind_ns_names"),),
    ),
    FILTER_LABELS,
    Flag(
        "filter-name",
        STRS,
        (),
        "Set name filter (example: controller) (can repeat)",
        sets=(T.RESOURCE_FILTER("names"),),
    ),
    Flag(
        "filter-ns",
        STRS,
        (),
        "Set namespace filter (example: knative-serving) (can repeat)",
        sets=(T.RESOURCE_FILTER("namespaces"),),
    ),
)

# kapp's client-side allowing (DeployFlags' PrepareResourcesOpts)
RESOURCE_VALIDATION_FLAGS = (
    Flag(
        "allow-all-ns",
        BOOL,
        False,
        "Set to allow all namespaces for resources (does not apply to the app itself)",
        sets=(T.ALLOW("all_namespaces"),),
    ),
    Flag("allow-check", BOOL, False, "Enable client-side allowing", sets=(T.ALLOW("check"),)),
    Flag(
        "allow-cluster",
        BOOL,
        False,
        "Set to allow cluster level for resources (does not apply to the app itself)",
        sets=(T.ALLOW("cluster"),),
    ),
    Flag(
        "allow-ns",
        STRS,
        (),
        "Set allowed namespace for resources (does not apply to the app itself)",
        sets=(T.ALLOW("namespaces", _strings),),
    ),
)

LABELS = Flag(
    "labels",
    STRS,
    (),
    "Set app label (format: key=val, key=) (can repeat)",
    sets=(T.DEPLOY("app_labels", _pairs),),
)
INTO_NS = Flag("into-ns", STR, "", "Place resources into namespace", sets=(T.DEPLOY("into_namespace"),))
MAP_NS = Flag(
    "map-ns",
    STRS,
    (),
    "Map resources from one namespace into another (could be specified multiple times)",
    sets=(T.DEPLOY("namespace_map", _pairs),),
)
RESOURCE_MANGLING_FLAGS = (INTO_NS, MAP_NS)

LOGS_ALL = Flag("logs-all", BOOL, False, "Show logs from all Pods")
LOGS_FLAGS = (
    Flag("logs", BOOL, True, "Show logs from Pods annotated as 'kapp.k14s.io/deploy-logs'", sets=(T.DEPLOY("logs"),)),
    LOGS_ALL,
)

IGNORE_FAILING_API_SERVICES = Flag(
    "dangerous-ignore-failing-api-services",
    BOOL,
    False,
    "Allow to ignore failing APIServices",
    sets=(
        T.DEPLOY("ignore_failing_api_services"),
        T.DELETE("ignore_failing_api_services"),
        T.WAIT("ignore_failing_api_services"),
    ),
)
SCOPE_TO_FALLBACK_NAMESPACES = Flag(
    "dangerous-scope-to-fallback-allowed-namespaces",
    BOOL,
    False,
    "Scope resource searching to fallback allowed namespaces",
    sets=(T.DEPLOY("scope_to_fallback_namespaces"), T.DELETE("scope_to_fallback_namespaces")),
)
DANGEROUS_SCOPE_FLAGS = (IGNORE_FAILING_API_SERVICES, SCOPE_TO_FALLBACK_NAMESPACES)

# deploy's other flags (kapp's DeployFlags, and kapply's own, which say so in their help)
APP_CHANGES_MAX_TO_KEEP = Flag(
    "app-changes-max-to-keep",
    INT,
    200,
    "Maximum number of app changes to keep",
    sets=(T.DEPLOY("app_changes_max_to_keep"),),
)
PREFLIGHT = Flag(
    "preflight",
    STR,
    "",
    "preflight checks to run. Available preflight checks are [PermissionValidation,CRDUpgradeSafety]",
    sets=(T.DEPLOY("preflight", _preflight),),
)
DIFF_FIELD_OWNERS = Flag(
    "diff-field-owners",
    BOOL,
    True,
    "Show which field manager wrote the fields others changed on the cluster (kapply)",
)
DEPLOY_OTHER_FLAGS = (
    APP_NAMESPACE,
    APP_CHANGES_MAX_TO_KEEP,
    Flag(
        "app-metadata-file-output",
        STR,
        "",
        "Set filename to write app metadata",
        sets=(T.DEPLOY("app_metadata_file"),),
    ),
    Flag(
        "dangerous-disable-gk-scoping",
        BOOL,
        False,
        "Disable scoping of resource searching to used GroupKinds",
        sets=(T.DEPLOY("disable_gk_scoping"),),
    ),
    *DANGEROUS_SCOPE_FLAGS,
    Flag(
        "default-label-scoping-rules",
        BOOL,
        True,
        "Use default label scoping rules",
        sets=(T.DEPLOY("default_label_scoping"),),
    ),
    Flag(
        "existing-non-labeled-resources-check",
        BOOL,
        True,
        "Find and consider existing non-labeled resources in diff",
    ),
    Flag(
        "existing-non-labeled-resources-check-concurrency",
        INT,
        100,
        "Concurrency to check for existing non-labeled resources",
    ),
    LABELS,
    Flag(
        "patch",
        BOOL,
        False,
        "Add or update existing resources only, never delete any",
        short="p",
        sets=(T.DEPLOY("patch"),),
    ),
    PREFLIGHT,
    PREV_APP,
    SORT,
    Flag(
        "diff-server-side",
        BOOL,
        True,
        "Confirm updates found against the live object with a server-side dry run (kapply)",
        sets=(T.DIFF("server_side_check"),),
    ),
    DIFF_FIELD_OWNERS,
    Flag(
        "drift-policy",
        STR,
        "enforce",
        "What to do with fields others changed on the cluster: enforce, preserve or warn (kapply)",
        sets=(T.DEPLOY("drift_policy", _drift_policy),),
    ),
)

# The flags of `kapp deploy` and `kapp delete` that their options are built from (beside -a, -n, -f and --tty)
DEPLOY_FLAGS = (
    *DIFF_FLAGS,
    *APPLY_FLAGS,
    *WAIT_FLAGS,
    *RESOURCE_FILTER_FLAGS,
    *RESOURCE_VALIDATION_FLAGS,
    *RESOURCE_MANGLING_FLAGS,
    *LOGS_FLAGS,
    *DEPLOY_OTHER_FLAGS,
)
DELETE_FLAGS = (
    *DIFF_FLAGS,
    *DELETE_APPLY_FLAGS,
    *DELETE_WAIT_FLAGS,
    *RESOURCE_FILTER_FLAGS,
    *DANGEROUS_SCOPE_FLAGS,
    PREV_APP,
)


@dataclass(frozen=True, slots=True)
class DiffView:
    """How a plan is shown, from kapp's diff flags (its ChangeSetViewOpts, `--diff-run`, `--diff-exit-status`)."""

    summary: bool
    changes: bool
    changes_yaml: bool
    context: int
    line_numbers: bool
    mask: bool
    anchored: bool
    run: bool
    exit_status: bool

    def format(self) -> DiffFormat:
        from kapply.diff.render import DiffFormat

        return DiffFormat(context=self.context, line_numbers=self.line_numbers, mask=self.mask, anchored=self.anchored)


def diff_view(values: Mapping[str, Any], flags: Iterable[Flag] = DIFF_FLAGS) -> DiffView:
    """How the diff flags in `values` (by name; `TOOLS_DIFF_FLAGS` for `tools diff`) show a plan."""
    return DiffView(**setting(flags, Target.DIFF_VIEW, values))


def resource_filter(values: Mapping[str, Any], flags: Iterable[Flag] = RESOURCE_FILTER_FLAGS) -> ResourceFilter | None:
    """The resource filter of kapp's `--filter`, `--filter-kind`, ... flags in `values` (by name); None when none is
    set. Raises FilterError for a value kapp refuses."""
    from kapply.resources.filters import from_flags

    return from_flags(**setting(flags, Target.RESOURCE_FILTER, values))


def allow_rules(values: Mapping[str, Any], flags: Iterable[Flag] = RESOURCE_VALIDATION_FLAGS) -> AllowRules | None:
    """kapp's client-side allowing from `--allow-check`, `--allow-ns`, `--allow-all-ns` and `--allow-cluster` in
    `values` (by name); None (no check) without `--allow-check`, and then nothing imported."""
    allow = setting(flags, Target.ALLOW, values)
    if not allow["check"]:
        return None
    from kapply.resources.allow import AllowRules

    return AllowRules(allow["namespaces"], allow["all_namespaces"], allow["cluster"])
