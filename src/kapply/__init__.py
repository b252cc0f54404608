"""kapply: deploy applications to Kubernetes with exact diffs (kapp-compatible).

The public API is what this module exports; see docs/api.md. Names are imported on first use, so that
`import kapply` (and the CLI's start-up) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from kapply.api import AsyncClient, Client
    from kapply.app.history import AppChange
    from kapply.app.record import App
    from kapply.apply.options import ApplyOptions, WaitOptions
    from kapply.apply.planning import ClusterChange, WaitOp
    from kapply.apply.preflight import PreflightError
    from kapply.apply.progress import LoggedProgress, Progress
    from kapply.delete import DeleteOptions, DeletePlan
    from kapply.deploy import DeployOptions, DiffOptions
    from kapply.deploy import Plan as DeployPlan
    from kapply.deploy import Result as DeployResult
    from kapply.diff.change import ApplyOp, Change, Op
    from kapply.diff.drift import DriftPolicy
    from kapply.diff.render import DiffFormat
    from kapply.errors import (
        ApplyError,
        AppNotFoundError,
        ClusterError,
        ConcurrencyError,
        ConfigError,
        GraphError,
        KapplyError,
        ManifestError,
        OwnershipError,
    )
    from kapply.objects import ResourceKey
    from kapply.resources.allow import AllowRules

_EXPORTS = {
    "AsyncClient": ("kapply.api", "AsyncClient"),
    "Client": ("kapply.api", "Client"),
    "App": ("kapply.app.record", "App"),
    "AppChange": ("kapply.app.history", "AppChange"),
    "ApplyOptions": ("kapply.apply.options", "ApplyOptions"),
    "WaitOptions": ("kapply.apply.options", "WaitOptions"),
    "ClusterChange": ("kapply.apply.planning", "ClusterChange"),
    "WaitOp": ("kapply.apply.planning", "WaitOp"),
    "Progress": ("kapply.apply.progress", "Progress"),
    "LoggedProgress": ("kapply.apply.progress", "LoggedProgress"),
    "DeleteOptions": ("kapply.delete", "DeleteOptions"),
    "DeletePlan": ("kapply.delete", "DeletePlan"),
    "DeployOptions": ("kapply.deploy", "DeployOptions"),
    "DiffOptions": ("kapply.deploy", "DiffOptions"),
    "DeployPlan": ("kapply.deploy", "Plan"),
    "DeployResult": ("kapply.deploy", "Result"),
    "ApplyOp": ("kapply.diff.change", "ApplyOp"),
    "Change": ("kapply.diff.change", "Change"),
    "Op": ("kapply.diff.change", "Op"),
    "DiffFormat": ("kapply.diff.render", "DiffFormat"),
    "DriftPolicy": ("kapply.diff.drift", "DriftPolicy"),
    "ApplyError": ("kapply.errors", "ApplyError"),
    "ConcurrencyError": ("kapply.errors", "ConcurrencyError"),
    "AppNotFoundError": ("kapply.errors", "AppNotFoundError"),
    "ClusterError": ("kapply.errors", "ClusterError"),
    "ConfigError": ("kapply.errors", "ConfigError"),
    "GraphError": ("kapply.errors", "GraphError"),
    "KapplyError": ("kapply.errors", "KapplyError"),
    "ManifestError": ("kapply.errors", "ManifestError"),
    "OwnershipError": ("kapply.errors", "OwnershipError"),
    "ResourceKey": ("kapply.objects", "ResourceKey"),
    "AllowRules": ("kapply.resources.allow", "AllowRules"),
    "PreflightError": ("kapply.apply.preflight", "PreflightError"),
}

__all__ = [
    "__version__",
    "AllowRules",
    "App",
    "AppChange",
    "AppNotFoundError",
    "ApplyError",
    "ApplyOp",
    "ApplyOptions",
    "AsyncClient",
    "Change",
    "Client",
    "ClusterChange",
    "ClusterError",
    "ConcurrencyError",
    "ConfigError",
    "DeleteOptions",
    "DeletePlan",
    "DeployOptions",
    "DeployPlan",
    "DeployResult",
    "DiffFormat",
    "DiffOptions",
    "DriftPolicy",
    "GraphError",
    "KapplyError",
    "LoggedProgress",
    "ManifestError",
    "Op",
    "OwnershipError",
    "PreflightError",
    "Progress",
    "ResourceKey",
    "WaitOp",
    "WaitOptions",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'kapply' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
