"""The programs the controller runs to fetch and template (git, ytt, kustomize, helm): found through an environment
variable or PATH, run with a time limit, their output captured. kapp-controller bundles them; kapply uses the ones the
machine (or the controller's image) has, and says clearly when one is missing."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from kapply import programs
from kapply.errors import KapplyError

TIMEOUT = 300.0


class ToolError(KapplyError):
    """A program failed or is not available; `stderr` is what it said."""

    def __init__(self, message: str, stderr: str = "", exit_code: int = -1) -> None:
        super().__init__(message)
        self.stderr = stderr
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True)
class Ran:
    stdout: str
    stderr: str


def find(tool: str) -> str:
    """The path of `tool`: $KAPPLY_<TOOL> (which must then exist) or PATH."""
    try:
        return programs.find(tool)
    except programs.ProgramNotFound as e:
        raise ToolError(str(e)) from None


async def run(
    tool: str, *args: str, cwd: str | None = None, stdin: str | None = None, env: dict[str, str] | None = None
) -> Ran:
    """Run the tool; ToolError (with its stderr and exit code) when it fails or takes longer than TIMEOUT."""
    process = await asyncio.create_subprocess_exec(
        find(tool),
        *args,
        cwd=cwd,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    try:
        out, err = await asyncio.wait_for(
            process.communicate(stdin.encode() if stdin is not None else None), timeout=TIMEOUT
        )
    except TimeoutError:
        process.kill()
        await process.wait()
        raise ToolError(f"{tool} did not finish in {TIMEOUT:.0f}s") from None
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    if process.returncode:
        raise ToolError(f"{tool} failed (exit status {process.returncode})", stderr.strip(), process.returncode or -1)
    return Ran(stdout, stderr)
