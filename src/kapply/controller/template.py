"""Templating an App's fetched files into the YAML it deploys: ytt, kustomize and helm template, run as programs.

Steps run in order: the first reads the fetch directory, each later one the YAML the previous one printed (as
kapp-controller chains them); kustomize and helm can only start from files, so they must come first.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from kapply.controller.fetch import ReadSource, confined, source_data
from kapply.controller.spec import SourceRef, TemplateStep, TemplateTool, ValuesSource
from kapply.controller.tools import ToolError, run
from kapply.errors import KapplyError


class TemplateError(KapplyError):
    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


async def _values_files(values: tuple[ValuesSource, ...], root: Path, scratch: Path, read: ReadSource) -> list[str]:
    """One file per data key of each referenced ConfigMap or Secret (sorted), and the given paths, in order."""
    files: list[str] = []
    for index, source in enumerate(values):
        if source.path:
            files.append(str(confined(root, source.path)))
            continue
        ref = SourceRef("Secret", source.secret) if source.secret else SourceRef("ConfigMap", source.config_map)
        for key, content in await source_data(ref, read):
            path = scratch / f"values-{index}" / key
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
            files.append(str(path))
    return files


async def _ytt(step: TemplateStep, root: Path, stdin: str | None, scratch: Path, read: ReadSource) -> str:
    args: list[str] = []
    if stdin is not None:
        args += ["-f", "-"]
    else:
        args += [a for path in (step.paths or (".",)) for a in ("-f", str(confined(root, path)))]
    if step.inline is not None:
        inline = scratch / "ytt-inline"
        for relative, content in step.inline.paths:
            target = confined(inline, relative)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
        for ref in step.inline.paths_from:
            for key, value in await source_data(ref, read):
                target = confined(inline, f"{ref.directory}/{key}" if ref.directory else key)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(value)
        args += ["-f", str(inline)]
    for values in await _values_files(step.values_from, root, scratch, read):
        args += ["--data-values-file", values]
    return (await run("ytt", *args, cwd=str(root), stdin=stdin)).stdout


async def _kustomize(step: TemplateStep, root: Path, stdin: str | None) -> str:
    if stdin is not None:
        raise TemplateError("Templating stream is not supported by kustomize: make it the first template step")
    return (await run("kustomize", "build", str(confined(root, step.kustomize_path or ".")))).stdout


async def _helm(
    step: TemplateStep, root: Path, stdin: str | None, scratch: Path, read: ReadSource, name: str, namespace: str
) -> str:
    if stdin is not None:
        raise TemplateError("Templating stream is not supported by helm: make it the first template step")
    args = [
        "template",
        step.release_name or name,
        str(confined(root, step.chart_path or ".")),
        "--namespace",
        step.release_namespace or namespace,
        "--include-crds",
    ]
    for values in await _values_files(step.values_from, root, scratch, read):
        args += ["--values", values]
    home = scratch / "helm-home"  # no user configuration, no cache shared between Apps
    env = {
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home),
    }
    return (await run("helm", *args, env=env)).stdout


_PREFIX = {
    TemplateTool.YTT: "Templating dir",
    TemplateTool.KUSTOMIZE: "Templating dir",
    TemplateTool.HELM: "Templating helm chart",
}


async def template(steps: tuple[TemplateStep, ...], root: Path, read: ReadSource, name: str, namespace: str) -> str:
    """The YAML the steps produce from the fetch directory `root`. `name` and `namespace` are the App's (helm's
    release defaults)."""
    stdin: str | None = None
    with tempfile.TemporaryDirectory(prefix="kapply-template-") as scratch_dir:
        scratch = Path(scratch_dir)
        for step in steps:
            try:
                if step.tool is TemplateTool.YTT:
                    stdin = await _ytt(step, root, stdin, scratch, read)
                elif step.tool is TemplateTool.KUSTOMIZE:
                    stdin = await _kustomize(step, root, stdin)
                else:
                    stdin = await _helm(step, root, stdin, scratch, read, name, namespace)
            except ToolError as e:
                raise TemplateError(f"{_PREFIX[step.tool]}: {e}", e.stderr) from e
    return stdin or ""
