"""The cue template step: `cue export --out yaml` of the fetched content, as kapp-controller runs it.

kapp-controller's arguments, in its order: the step's `paths` (default `.`, the package of the fetch directory),
`--path <inputExpression>`, the values files of `valuesFrom`, `--expression <outputExpression>`; cue runs in the fetch
directory. Here each path is read as kapp-controller's ScopedPath reads it, within the fetch directory (template.scoped:
`/config` is the fetch directory's, a path leaving it or through a symlink leading out is refused), and given as
`./<path>` (a path `--foo` is a file, never an option), and each expression as `--flag=value` (an expression `--foo`
is an expression). cue cannot read the previous step's output: it must come first (or after
sops, which prints nothing).

cue may fetch the modules a `cue.mod/module.cue` depends on from a registry: here it has no registry to ask
(CUE_REGISTRY=none), no cache or configuration of anyone's (its directories are the step's own), no PATH, proxies
that refuse every connection and, where the kernel allows it, no network at all (runner.OFFLINE).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from kapply.controller.runner import run
from kapply.controller.spec import TemplateStep
from kapply.errors import KapplyError

CUE_ENV = {
    "PATH": "",
    "CUE_REGISTRY": "none",
    **dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"), "http://127.0.0.1:0"),
    **dict.fromkeys(("NO_PROXY", "no_proxy"), ""),
}


class CueError(KapplyError):
    pass


def scoped(root: Path, path: str) -> Path:
    """template.scoped (which imports this module: looked up when called)."""
    from kapply.controller import template

    return template.scoped(root, path)


def relative(root: Path, path: str) -> str:
    """`path` within the fetch directory `root`, as cue is given it: `.` or `./<path within root>`."""
    inside = os.path.relpath(scoped(root, path), os.path.realpath(root))
    return "." if inside == "." else f"./{inside}"


def cue_args(step: TemplateStep, root: Path, values: list[str]) -> list[str]:
    """`cue export`'s arguments for the step, its values files (absolute paths) given."""
    args = ["export", "--out=yaml", *(relative(root, path) for path in step.paths or (".",))]
    if step.input_expression:
        args.append(f"--path={step.input_expression}")
    args += values
    if step.output_expression:
        args.append(f"--expression={step.output_expression}")
    return args


async def cue(
    step: TemplateStep, root: Path, stdin: str | None, scratch: Path, values: Callable[[], Awaitable[list[str]]]
) -> str:
    """What `cue export` prints for the step in the fetch directory `root`; `values` writes the values files (read
    only once the step can run)."""
    if stdin is not None:
        raise CueError("Templating stream is not supported by cue: make it the first template step")
    args = cue_args(step, root, await values())
    env = CUE_ENV | {"CUE_CACHE_DIR": str(scratch / "cue-cache"), "CUE_CONFIG_DIR": str(scratch / "cue-config")}
    return (await run("cue", *args, cwd=root, env=env)).stdout
