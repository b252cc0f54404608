#!/usr/bin/env python3
"""Build the templating tools kapply's controller runs, helm, kustomize, kbld, cue and sops, and programs only the
tests run: crane (their OCI registry), age-keygen (their sops keys), imgpkg and vendir (the real kctrl's).

Like the control plane (hack/cluster.py, whose build helpers this reuses), each
is built with the machine's Go from the Go module proxy at a pinned version,
into $KAPPLY_CACHE (default ~/.cache/kapply)/<tool>-<version>/bin/<tool>, and
never rebuilt once there.

Usage:
    tools.py build [helm|kustomize|kbld|imgpkg|vendir|cue|sops|crane|age-keygen ...]
                              build the named tools (default: all) unless built
    tools.py path TOOL        print the binary's path; exit 1 if not built
    tools.py env              print KAPPLY_HELM=... / KAPPLY_KUSTOMIZE=... / KAPPLY_KBLD=... / KAPPLY_CUE=...
                              / KAPPLY_SOPS=... / KAPPLY_CRANE=... / KAPPLY_AGE_KEYGEN=... for the built ones

crane (go-containerregistry's CLI) is not run by kapply: the tests run `crane registry serve` as the OCI
registry that kapply.oci pulls from, and push images and imgpkg bundles to it with `crane` (tests/e2e/registry.py).
Nor is age-keygen (filippo.io/age): the tests make the age keys of their sops-encrypted files with it (sops itself
cannot make keys). Nor are imgpkg and vendir: the real kctrl's `package release` runs them, beside which
tests/compat/test_kctrl_authoring.py runs `kapply package release` (which pushes with kapply.oci).

This script uses the standard library only, so it runs before the project's
virtualenv exists.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cluster  # noqa: E402  (hack/cluster.py: Build, bin_dir, go_mod_download, build_one)

# The newest releases whose go.mod (and whose dependencies' go.mod) the machine's Go 1.26 accepts (GOTOOLCHAIN is
# local, so Go fetches no newer toolchain): helm v3.22.0 says `go 1.26.0`; kustomize v5.8.3 says `go 1.27.0`, so
# kustomize stays at v5.8.2 (`go 1.26.0`). helm v4 is out, but kapp-controller's App CR templates with helm v3.
# go-containerregistry v0.22.1, the newest release, says `go 1.25.0` (and `toolchain go1.26.6`, which Go 1.26 meets).
# kbld v0.46.0 says `go 1.23.8`. cue v0.17.1 says `go 1.25.0` (kapp-controller 0.53 ships v0.9.2: `cue export` is
# the same command); sops v3.13.3 says `go 1.25.8` (kapp-controller's is v3.9.0); age v1.3.2 says `go 1.25.0`.
HELM_VERSION = "v3.22.0"
KUSTOMIZE_VERSION = "v5.8.2"
KBLD_VERSION = "v0.46.0"
# imgpkg and vendir are run by the real kctrl only (`package release` shells out to them), which the differential tests
# of `kapply package release` run beside kapply: imgpkg v0.46.1 says `go 1.23.8`, vendir v0.44.0 `go 1.23.8`.
IMGPKG_VERSION = "v0.46.1"
VENDIR_VERSION = "v0.44.0"
CUE_VERSION = "v0.17.1"
SOPS_VERSION = "v3.13.3"
CRANE_VERSION = "v0.22.1"
AGE_VERSION = "v1.3.2"


@dataclass(frozen=True)
class Tool:
    name: str
    version: str
    module: str
    package: str  # the main package, built to bin/<name>

    @property
    def env_var(self) -> str:
        return f"KAPPLY_{self.name.upper().replace('-', '_')}"


TOOLS = {
    t.name: t
    for t in [
        Tool("helm", HELM_VERSION, "helm.sh/helm/v3", "helm.sh/helm/v3/cmd/helm"),
        Tool(
            "kustomize", KUSTOMIZE_VERSION, "sigs.k8s.io/kustomize/kustomize/v5", "sigs.k8s.io/kustomize/kustomize/v5"
        ),
        Tool("kbld", KBLD_VERSION, "carvel.dev/kbld", "carvel.dev/kbld/cmd/kbld"),
        Tool("imgpkg", IMGPKG_VERSION, "carvel.dev/imgpkg", "carvel.dev/imgpkg/cmd/imgpkg"),
        Tool("vendir", VENDIR_VERSION, "carvel.dev/vendir", "carvel.dev/vendir/cmd/vendir"),
        Tool("cue", CUE_VERSION, "cuelang.org/go", "cuelang.org/go/cmd/cue"),
        Tool("sops", SOPS_VERSION, "github.com/getsops/sops/v3", "github.com/getsops/sops/v3/cmd/sops"),
        Tool(
            "crane",
            CRANE_VERSION,
            "github.com/google/go-containerregistry",
            "github.com/google/go-containerregistry/cmd/crane",
        ),
        Tool("age-keygen", AGE_VERSION, "filippo.io/age", "filippo.io/age/cmd/age-keygen"),
    ]
}


def binary(tool: Tool) -> Path:
    return cluster.bin_dir(tool.name, tool.version) / tool.name


def is_built(tool: Tool) -> bool:
    return binary(tool).exists()


# ---------------------------------------------------------------- go.mod handling


def gomod_directives(gomod: str, verb: str) -> list[str]:
    """The arguments of every `verb` directive in a go.mod, single-line or in a block, comments dropped."""
    found: list[str] = []
    in_block = False
    for raw in gomod.splitlines():
        line = raw.split("//")[0].strip()
        if in_block:
            if line == ")":
                in_block = False
            elif line:
                found.append(line)
        elif re.fullmatch(rf"{verb}\s*\(", line):
            in_block = True
        elif line.startswith(f"{verb} "):
            found.append(line[len(verb) :].strip())
    return found


def inherited_directives(tool: Tool, gomod: str) -> tuple[str, ...]:
    """Go obeys replace and exclude directives only in the main module's go.mod, and here the tool is a
    dependency of a throw-away module, so its own ones are copied over (helm v3.5 replaced docker/docker, for
    one; the pinned releases have none). A replace by a local path works only inside the tool's repository:
    that needs a rule of its own, like cluster.staging_replaces for Kubernetes, so it stops the build."""
    lines = []
    for replace in gomod_directives(gomod, "replace"):
        target = replace.split("=>", 1)[1].strip()
        if target.startswith((".", "/")):
            raise SystemExit(
                f"[tools] {tool.module} {tool.version} replaces by a local path ({replace}); "
                "hack/tools.py cannot build it as a dependency"
            )
        lines.append(f"replace {replace}")
    lines += [f"exclude {exclude}" for exclude in gomod_directives(gomod, "exclude")]
    return tuple(lines)


def helm_ldflags(version: str, gomod: str) -> str:
    """What helm's Makefile stamps in: its version, and the Kubernetes version `helm template` reports as
    .Capabilities.KubeVersion (and lints against), 1.<minor of the k8s.io/client-go it is built with>."""
    found = re.search(r"^\s*k8s\.io/client-go v0\.(\d+)\.", gomod, re.M)
    if not found:
        raise SystemExit(
            "[tools] helm's go.mod requires no k8s.io/client-go v0.X.Y; cannot tell its Kubernetes version"
        )
    minor = found.group(1)
    stamps = {
        "helm.sh/helm/v3/internal/version.version": version,
        "helm.sh/helm/v3/internal/version.gitTreeState": "clean",
        "helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor": "1",
        "helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor": minor,
        "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor": "1",
        "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor": minor,
    }
    return " ".join(["-s -w", *(f"-X {var}={value}" for var, value in stamps.items())])


def crane_ldflags(version: str) -> str:
    """crane reports the main module's version from the Go build info, and built as a dependency of a throw-away
    module that is `(devel)`; its release builds stamp the tag in, as this does."""
    return f"-s -w -X github.com/google/go-containerregistry/cmd/crane/cmd.Version={version}"


def kbld_ldflags(version: str) -> str:
    """What kbld's hack/build.sh stamps in: the release's version, without its `v` (`kbld version` says 0.46.0)."""
    return f"-s -w -X carvel.dev/kbld/pkg/kbld/version.Version={version.removeprefix('v')}"


def age_ldflags(version: str) -> str:
    """age's release builds stamp the tag into its commands' main.Version (`age-keygen --version`)."""
    return f"-s -w -X main.Version={version}"


# Where imgpkg's and vendir's release builds stamp their version (`imgpkg version` says 0.46.1)
CARVEL_VERSION_VARIABLES = {
    "imgpkg": "carvel.dev/imgpkg/pkg/imgpkg/cmd.Version",
    "vendir": "carvel.dev/vendir/pkg/vendir/version.Version",
}


def build_spec(tool: Tool, gomod: str) -> cluster.Build:
    """The cluster.Build for a tool, given the go.mod of its module at the pinned version.
    kustomize and cue need no stamps: they read their version from the Go build info of the dependency; sops's is
    a variable its source sets."""
    if tool.name == "helm":
        ldflags = helm_ldflags(tool.version, gomod)
    elif tool.name == "crane":
        ldflags = crane_ldflags(tool.version)
    elif tool.name == "kbld":
        ldflags = kbld_ldflags(tool.version)
    elif tool.name in CARVEL_VERSION_VARIABLES:
        ldflags = f"-s -w -X {CARVEL_VERSION_VARIABLES[tool.name]}={tool.version.removeprefix('v')}"
    elif tool.name == "age-keygen":
        ldflags = age_ldflags(tool.version)
    else:
        ldflags = "-s -w"
    return cluster.Build(
        name=tool.name,
        version=tool.version,
        requires={tool.module: tool.version},
        binaries={tool.name: tool.package},
        ldflags=ldflags,
        gomod_extra=inherited_directives(tool, gomod),
    )


# ---------------------------------------------------------------- commands


def build(names: list[str]) -> None:
    cluster.CACHE.mkdir(parents=True, exist_ok=True)
    missing = [TOOLS[n] for n in names if not is_built(TOOLS[n])]
    if missing and shutil.which("go") is None:
        sys.exit(f"[tools] Go is required to build {', '.join(t.name for t in missing)}; none is on PATH")
    for tool in missing:
        gomod = Path(cluster.go_mod_download(tool.module, tool.version)["GoMod"]).read_text()
        cluster.build_one(build_spec(tool, gomod))
    for name in names:
        cluster.log(f"{name} {TOOLS[name].version}: {binary(TOOLS[name])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build tools unless built").add_argument("tools", nargs="*", metavar="TOOL")
    sub.add_parser("path", help="print a built tool's path").add_argument("tool", metavar="TOOL")
    sub.add_parser("env", help="print KAPPLY_<TOOL>=<path> for each built tool")
    args = parser.parse_args(argv)
    cluster.LOG_PREFIX = "[tools]"

    names = args.tools if args.command == "build" else [args.tool] if args.command == "path" else []
    if unknown := [n for n in names if n not in TOOLS]:
        parser.error(f"unknown tool {', '.join(unknown)} (known: {', '.join(TOOLS)})")
    if args.command == "build":
        build(args.tools or list(TOOLS))
    elif args.command == "path":
        tool = TOOLS[args.tool]
        if not is_built(tool):
            print(
                f"[tools] {tool.name} {tool.version} is not built (no {binary(tool)}); "
                f"run `python3 hack/tools.py build {tool.name}`",
                file=sys.stderr,
            )
            return 1
        print(binary(tool))
    else:
        for tool in TOOLS.values():
            if is_built(tool):
                print(f"{tool.env_var}={binary(tool)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
