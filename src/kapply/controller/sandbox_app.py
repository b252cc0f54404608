"""An App's job in the sandbox (sandbox.py): its fetch stage, then its template stage, in the job's own process.

The request is what the controller knows of the App: its name, namespace and spec (read again here by the same
parser, so that the child works from the same values), and the fetch policy of the controller's flags. The result is
the fetch stage's lock (status.fetch.stdout) and the template stage's output (the manifests to deploy).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path
from typing import Any, get_type_hints

from kapply.controller import runner
from kapply.controller.downward import AppContext
from kapply.controller.fetch import FetchPolicy, ReadSource, fetch
from kapply.controller.sandbox import SandboxFailed, Stage
from kapply.controller.spec import TemplateTool, parse_spec
from kapply.controller.template import template
from kapply.errors import KapplyError
from kapply.objects import Obj

PROGRAMS = {
    TemplateTool.YTT: "ytt",
    TemplateTool.KUSTOMIZE: "kustomize",
    TemplateTool.HELM: "helm",
    TemplateTool.KBLD: "kbld",
    TemplateTool.SOPS: "sops",
    TemplateTool.CUE: "cue",
}


def policy_to_json(policy: FetchPolicy) -> Obj:
    return asdict(policy)


def policy_from_json(data: Obj) -> FetchPolicy:
    policy = _from_json(FetchPolicy, data)
    assert isinstance(policy, FetchPolicy)
    return policy


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _from_json(cls: type, data: Obj) -> object:
    """A dataclass from its `asdict` form, the dataclasses among its fields too."""
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for item in fields(cls):
        if item.name in data:
            value, hint = data[item.name], hints[item.name]
            nested = isinstance(hint, type) and is_dataclass(hint) and isinstance(value, dict)
            # JSON has no tuples: the policy's sequences are tuples (its dataclasses are frozen, hashable)
            values[item.name] = (
                _from_json(hint, value) if nested else tuple(value) if isinstance(value, list) else value
            )
    return cls(**values)


def request(app: Obj, policy: FetchPolicy, context: AppContext | None = None) -> Obj:
    """The job's request for `app` (only what the job reads of it: no status, no managed fields); `context`, what
    downward API values read of the App and its cluster (the App's metadata alone when not given)."""
    meta = app["metadata"]
    return {
        "app": {"metadata": {"name": meta["name"], "namespace": meta["namespace"]}, "spec": app.get("spec")},
        "policy": policy_to_json(policy),
        "context": (context or AppContext.of(app)).to_json(),
    }


async def run(request: Obj, root: Path, read: ReadSource, fetched: Callable[[str], Awaitable[None]]) -> dict[str, Any]:
    app = request["app"]
    spec = parse_spec(app)
    policy = policy_from_json(request["policy"])
    runner.confine_fetch_stage([PROGRAMS[step.tool] for step in spec.template], policy.allow_file_urls)
    try:
        lock = await fetch(spec.fetch, root, read, policy)
    except KapplyError as e:
        raise SandboxFailed(Stage.FETCH, str(e), getattr(e, "stderr", "")) from None
    await fetched(lock)
    runner.confine_template_stage([PROGRAMS[step.tool] for step in spec.template])
    meta = app["metadata"]
    try:
        context = AppContext.from_json(request["context"])
        manifests = await template(spec.template, root, read, meta["name"], meta["namespace"], context)
    except KapplyError as e:
        raise SandboxFailed(Stage.TEMPLATE, str(e), getattr(e, "stderr", "")) from None
    return {"lock": lock, "manifests": manifests}


def result(done: Obj) -> tuple[str, str]:
    """The lock and the manifests of a job's result (which came from the sandbox: checked like any untrusted input)."""
    lock, manifests = done.get("lock"), done.get("manifests")
    if not isinstance(lock, str) or not isinstance(manifests, str):
        raise SandboxFailed(Stage.TEMPLATE, "Sandbox: the sandbox sent a result without a lock and manifests")
    return lock, manifests
