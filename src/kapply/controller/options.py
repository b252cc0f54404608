"""An App's `deploy[].kapp` as deploy options: `intoNs`, `mapNs`, and `rawOptions` restricted as kapp-controller
restricts them (each `--name=value`, names from an allow-list), over the controller's defaults
(`--app-changes-max-to-keep=5`, `--apply-timeout=5m`, as kapp-controller forces)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kapply.api import deploy_options
from kapply.controller.spec import Deploy
from kapply.deploy import DeployOptions
from kapply.errors import KapplyError
from kapply.values import parse_bool, parse_duration, parse_float, parse_int

Parse = Callable[[str], Any]


def _strings(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


_BOOL, _INT, _DURATION, _STRING = parse_bool, parse_int, parse_duration, str

# kapp-controller's allow-list (pkg/deploy/kapp_restrict.go), with each flag's type; a test checks the types
# against kapply's CLI.
COMMON: dict[str, Parse] = {
    "column": _strings,
    "debug": _BOOL,
    "json": _BOOL,
    "tty": _BOOL,
    "dangerous-ignore-failing-api-services": _BOOL,
    "dangerous-scope-to-fallback-allowed-namespaces": _BOOL,
    "filter": _STRING,
    "filter-age": _STRING,
    "filter-kind": _strings,
    "filter-kind-name": _strings,
    "filter-kind-ns": _strings,
    "filter-kind-ns-name": _strings,
    "filter-name": _strings,
    "filter-ns": _strings,
    "kube-api-qps": parse_float,
    "kube-api-burst": _INT,
}
DEPLOY_AND_DELETE: dict[str, Parse] = {
    "diff-changes": _BOOL,
    "diff-against-last-applied": _BOOL,
    "diff-context": _INT,
    "diff-line-numbers": _BOOL,
    "diff-mask": _BOOL,
    "diff-run": _BOOL,
    "diff-summary": _BOOL,
    "diff-anchored": _BOOL,
    "apply-check-interval": _DURATION,
    "apply-concurrency": _INT,
    "apply-default-update-strategy": _STRING,
    "apply-ignored": _BOOL,
    "apply-timeout": _DURATION,
    "exit-early-on-apply-error": _BOOL,
    "wait": _BOOL,
    "wait-check-interval": _DURATION,
    "wait-concurrency": _INT,
    "wait-ignored": _BOOL,
    "wait-timeout": _DURATION,
    "exit-early-on-wait-error": _BOOL,
}
DEPLOY_ONLY: dict[str, Parse] = {
    "dangerous-allow-empty-list-of-resources": _BOOL,
    "existing-non-labeled-resources-check": _BOOL,
    "existing-non-labeled-resources-check-concurrency": _INT,
    "dangerous-override-ownership-of-existing-resources": _BOOL,
    "into-ns": _STRING,
    "map-ns": _strings,
    "logs": _BOOL,
    "logs-all": _BOOL,
    "app-changes-max-to-keep": _INT,
    "labels": _strings,
    "patch": _BOOL,
}
DEPLOY = {**COMMON, **DEPLOY_AND_DELETE, **DEPLOY_ONLY}
DELETE = {**COMMON, **DEPLOY_AND_DELETE}
CONTROLLER_DEFAULTS = {"app-changes-max-to-keep": 5, "apply-timeout": 300.0}


def parse_raw_options(raw: Sequence[str], allowed: dict[str, Parse]) -> dict[str, Any]:
    """`--name=value` options by name; kapp-controller's errors for any other form or name."""
    values: dict[str, Any] = {}
    for option in raw:
        name, sep, text = option.removeprefix("--").partition("=")
        if not option.startswith("--") or not sep:
            raise KapplyError(f"Expected flag '{option}' to be in '--name=val' format")
        parse = allowed.get(name)
        if parse is None:
            raise KapplyError(f"Unexpected flag '{name}' specified (either forbidden or unknown)")
        try:
            value = parse(text)
        except ValueError as e:
            raise KapplyError(f"Flag '{name}': {e}") from None
        if parse is _strings and name in values:
            value = values[name] + value
        values[name] = value
    return values


def from_spec(deploy: Deploy) -> tuple[DeployOptions, dict[str, Any]]:
    """The deploy options of an App, and the raw values (for output flags such as `--diff-changes`)."""
    values: dict[str, Any] = dict(CONTROLLER_DEFAULTS)
    if deploy.into_ns:
        values["into-ns"] = deploy.into_ns
    if deploy.map_ns:
        values["map-ns"] = list(deploy.map_ns)
    for name, value in parse_raw_options(deploy.raw_options, DEPLOY).items():
        # kapp-controller passes `mapNs` and the raw options both to kapp, whose list flags accumulate.
        values[name] = values[name] + value if DEPLOY[name] is _strings and name in values else value
    return deploy_options(values), values
