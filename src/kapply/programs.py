"""Finding the programs kapply runs (git, ytt, kustomize, helm, kbld, cue, sops, vendir): `$KAPPLY_<PROGRAM>`, which
must then name an executable file (a wrong path is an error, not a fall-back), else PATH."""

from __future__ import annotations

import os

from kapply.errors import KapplyError

ENV = {
    "git": "KAPPLY_GIT",
    "ytt": "KAPPLY_YTT",
    "kustomize": "KAPPLY_KUSTOMIZE",
    "helm": "KAPPLY_HELM",
    "kbld": "KAPPLY_KBLD",
    "cue": "KAPPLY_CUE",
    "sops": "KAPPLY_SOPS",
    "vendir": "KAPPLY_VENDIR",
}


class ProgramNotFound(KapplyError):
    """The program is not on PATH, or its variable names no executable file."""


def find(program: str) -> str:
    """The path of `program`: $KAPPLY_<PROGRAM> (which must then exist) or PATH."""
    variable = ENV[program]
    named = os.environ.get(variable)
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise ProgramNotFound(
                f"{program} is not available: ${variable} names {named}, which is not an executable file"
            )
        return named
    import shutil  # here: a command that runs no program never needs it (~3 ms of its start)

    found = shutil.which(program)
    if found is None:
        raise ProgramNotFound(f"{program} is not available: install it on PATH or name it with ${variable}")
    return found
