"""An App's `deploy[].kapp` as deploy options: `intoNs`, `mapNs`, and `rawOptions` restricted as kapp-controller
restricts them (each `--name=value`, names from an allow-list), over the controller's defaults
(`--app-changes-max-to-keep=5`, `--apply-timeout=5m`, as kapp-controller forces). Which flags an App may set is
kapp-controller's list; what each one is (its type, how its value parses, the option it sets) is its declaration in
kapply.flags, the one the CLI has."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kapply.api import DeleteOptions, DeployOptions, delete_options, deploy_options
from kapply.controller.spec import Deploy
from kapply.errors import KapplyError
from kapply.flags import (
    APP_CHANGES_MAX_TO_KEEP,
    APPLY_TIMEOUT,
    DEPLOY_FLAGS,
    GLOBAL_FLAGS,
    INTO_NS,
    MAP_NS,
    TTY,
    Flag,
    Kind,
    convert,
    diff_view,
)

_DECLARED = {flag.name: flag for flag in (*GLOBAL_FLAGS, TTY, *DEPLOY_FLAGS)}


def _declared(*names: str) -> dict[str, Flag]:
    return {name: _DECLARED[name] for name in names}


# kapp-controller's allow-list (pkg/deploy/kapp_restrict.go), by flag name
COMMON = _declared(
    "column",
    "debug",
    "json",
    "tty",
    "dangerous-ignore-failing-api-services",
    "dangerous-scope-to-fallback-allowed-namespaces",
    "filter",
    "filter-age",
    "filter-kind",
    "filter-kind-name",
    "filter-kind-ns",
    "filter-kind-ns-name",
    "filter-name",
    "filter-ns",
    "kube-api-qps",
    "kube-api-burst",
)
DEPLOY_AND_DELETE = _declared(
    "diff-changes",
    "diff-against-last-applied",
    "diff-context",
    "diff-line-numbers",
    "diff-mask",
    "diff-run",
    "diff-summary",
    "diff-anchored",
    "apply-check-interval",
    "apply-concurrency",
    "apply-default-update-strategy",
    "apply-ignored",
    "apply-timeout",
    "exit-early-on-apply-error",
    "wait",
    "wait-check-interval",
    "wait-concurrency",
    "wait-ignored",
    "wait-timeout",
    "exit-early-on-wait-error",
)
DEPLOY_ONLY = _declared(
    "dangerous-allow-empty-list-of-resources",
    "existing-non-labeled-resources-check",
    "existing-non-labeled-resources-check-concurrency",
    "dangerous-override-ownership-of-existing-resources",
    "into-ns",
    "map-ns",
    "logs",
    "logs-all",
    "app-changes-max-to-keep",
    "labels",
    "patch",
)
DEPLOY = {**COMMON, **DEPLOY_AND_DELETE, **DEPLOY_ONLY}
DELETE = {**COMMON, **DEPLOY_AND_DELETE}
CONTROLLER_DEFAULTS = {APP_CHANGES_MAX_TO_KEEP.name: 5, APPLY_TIMEOUT.name: 300.0}


def parse_raw_options(raw: Sequence[str], allowed: dict[str, Flag]) -> dict[str, Any]:
    """`--name=value` options by name, each value parsed as its flag's declaration says (a list flag's values
    accumulate, as pflag's); kapp-controller's errors for any other form or name."""
    values: dict[str, Any] = {}
    for option in raw:
        name, sep, text = option.removeprefix("--").partition("=")
        if not option.startswith("--") or not sep:
            raise KapplyError(f"Expected flag '{option}' to be in '--name=val' format")
        flag = allowed.get(name)
        if flag is None:
            raise KapplyError(f"Unexpected flag '{name}' specified (either forbidden or unknown)")
        try:
            value = convert(flag, text)
        except ValueError as e:
            raise KapplyError(f"Flag '{name}': {e}") from None
        values[name] = _accumulated(flag, values, value)
    return values


def _accumulated(flag: Flag, values: dict[str, Any], value: Any) -> Any:
    """The value of `flag` once `value` is given after `values`: a list flag's values add up, as pflag's."""
    return [*values[flag.name], *value] if flag.kind is Kind.STRINGS and flag.name in values else value


def from_spec(deploy: Deploy) -> tuple[DeployOptions, dict[str, Any]]:
    """The deploy options of an App, and the flag values they were built from, by name (what identifies them). Its
    waits look every `--wait-check-interval`, as kapp-controller's kapp, without the CLI's wake watches
    (kapply.apply.observe.Wakes): a controller's reads go through its own watch-fed cache, and thousands of Apps'
    waits each opening watches is load nobody measured yet."""
    values: dict[str, Any] = dict(CONTROLLER_DEFAULTS)
    if deploy.into_ns:
        values[INTO_NS.name] = deploy.into_ns
    if deploy.map_ns:
        values[MAP_NS.name] = list(deploy.map_ns)
    for name, value in parse_raw_options(deploy.raw_options, DEPLOY).items():
        # kapp-controller passes `mapNs` and the raw options both to kapp, whose list flags accumulate.
        values[name] = _accumulated(DEPLOY[name], values, value)
    options = deploy_options(values)
    return replace(options, wait=replace(options.wait, wake_on_watch=False)), values


def shows_changes(values: dict[str, Any]) -> bool:
    """Whether the output shows the plan's diff before its changes table (`--diff-changes` among the values)."""
    return diff_view(values).changes


def delete_from_spec(deploy: Deploy) -> DeleteOptions:
    """The delete options of an App: its `delete.rawOptions` over kapp's delete defaults."""
    options = delete_options(parse_raw_options(deploy.delete_raw_options, DELETE))
    return replace(options, wait=replace(options.wait, wake_on_watch=False))
