"""The controller's flags that `kapply controller manifests` also takes, to write them into the Deployment's args:
each declared once here, for both commands (kept light: the CLI's tree imports it at start-up)."""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

from kapply.cli.pflag import UsageError
from kapply.flags import Flag, Kind

# kapply.controller.settings: default_drift_policy, drift_watches
DEFAULT_DRIFT_POLICY = Flag(
    "default-drift-policy",
    Kind.STRING,
    "enforce",
    "Drift policy of Apps that set no spec.driftPolicy: enforce, preserve or warn",
)
DRIFT_WATCHES = Flag(
    "drift-watches",
    Kind.STRING,
    "on",
    "Act on drift within seconds (on), at the sync period with the watches kept for the cache (sync-period), or "
    "at the sync period without watches of Apps' objects (off)",
)
DRIFT_FLAGS = (DEFAULT_DRIFT_POLICY, DRIFT_WATCHES)
# kapply.controller.vocabulary: whose API groups the controller serves (and the manifests install)
API_GROUPS = Flag(
    "api-groups",
    Kind.STRING,
    "kapply",
    "API groups to serve: kapply's own (kapply.dev, packaging.kapply.dev, data.packaging.kapply.dev), or carvel: "
    "kapp-controller's (kappctrl.k14s.io, packaging.carvel.dev, data.packaging.carvel.dev), with its finalizers and "
    "global namespace, where kapp-controller does not run",
)

_Choice = TypeVar("_Choice", bound=StrEnum)


def choice(choices: type[_Choice], flag: Flag, text: str) -> _Choice:
    """A flag's value as one of `choices`, or a usage error naming them."""
    try:
        return choices(text)
    except ValueError:
        raise UsageError(f"--{flag.name} {text!r}: expected {', '.join(c.value for c in choices)}") from None
