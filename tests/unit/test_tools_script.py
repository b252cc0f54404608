"""The pure parts of hack/tools.py, which builds helm and kustomize (the builds are covered by
tests/e2e/test_template_tools.py)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "tools.py"


@pytest.fixture(scope="module")
def tools() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kapply_tools", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


def run_script(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KAPPLY_CACHE": str(cache)}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60)


HELM_3_5_GOMOD = """module helm.sh/helm/v3

go 1.15

require (
\tgithub.com/docker/docker v17.12.0-ce-rc1.0.20200916142827-bd33bbf0497b+incompatible
\tk8s.io/client-go v0.20.4
)

replace (
\tgithub.com/docker/distribution => github.com/docker/distribution v0.0.0-20191216044856-a8371794149d
\t// pinned for a CVE
\tgithub.com/docker/docker => github.com/moby/moby v17.12.0-ce-rc1.0.20200618181300-9dc6525e6118+incompatible
)

replace golang.org/x/net v0.1.0 => golang.org/x/net v0.2.0 // a single-line one, with a version on the left

exclude github.com/bad/mod v1.0.0
exclude (
\tgithub.com/bad/mod v1.0.1
)
"""


def test_pins_are_stable_helm_3_and_kustomize_5_releases(tools):
    assert re.fullmatch(r"v3\.\d+\.\d+", tools.HELM_VERSION)
    assert re.fullmatch(r"v5\.\d+\.\d+", tools.KUSTOMIZE_VERSION)
    assert re.fullmatch(r"v0\.\d+\.\d+", tools.CRANE_VERSION)
    assert re.fullmatch(r"v0\.\d+\.\d+", tools.KBLD_VERSION)
    assert re.fullmatch(r"v0\.\d+\.\d+", tools.CUE_VERSION)
    assert re.fullmatch(r"v3\.\d+\.\d+", tools.SOPS_VERSION)
    assert re.fullmatch(r"v1\.\d+\.\d+", tools.AGE_VERSION)
    assert {n: (t.version, t.module, t.package) for n, t in tools.TOOLS.items()} == {
        "helm": (tools.HELM_VERSION, "helm.sh/helm/v3", "helm.sh/helm/v3/cmd/helm"),
        "kustomize": (
            tools.KUSTOMIZE_VERSION,
            "sigs.k8s.io/kustomize/kustomize/v5",
            "sigs.k8s.io/kustomize/kustomize/v5",
        ),
        "kbld": (tools.KBLD_VERSION, "carvel.dev/kbld", "carvel.dev/kbld/cmd/kbld"),
        "imgpkg": (tools.IMGPKG_VERSION, "carvel.dev/imgpkg", "carvel.dev/imgpkg/cmd/imgpkg"),
        "vendir": (tools.VENDIR_VERSION, "carvel.dev/vendir", "carvel.dev/vendir/cmd/vendir"),
        "cue": (tools.CUE_VERSION, "cuelang.org/go", "cuelang.org/go/cmd/cue"),
        "sops": (tools.SOPS_VERSION, "github.com/getsops/sops/v3", "github.com/getsops/sops/v3/cmd/sops"),
        "crane": (
            tools.CRANE_VERSION,
            "github.com/google/go-containerregistry",
            "github.com/google/go-containerregistry/cmd/crane",
        ),
        "age-keygen": (tools.AGE_VERSION, "filippo.io/age", "filippo.io/age/cmd/age-keygen"),
    }
    # an environment variable's name has no "-"
    assert tools.TOOLS["age-keygen"].env_var == "KAPPLY_AGE_KEYGEN" and tools.TOOLS["cue"].env_var == "KAPPLY_CUE"


def test_binaries_live_in_the_shared_cache_next_to_the_control_plane(tools):
    for tool in tools.TOOLS.values():
        assert tools.binary(tool) == tools.cluster.CACHE / f"{tool.name}-{tool.version}" / "bin" / tool.name


def test_gomod_directives_reads_blocks_and_single_lines_without_comments(tools):
    assert tools.gomod_directives(HELM_3_5_GOMOD, "replace") == [
        "github.com/docker/distribution => github.com/docker/distribution v0.0.0-20191216044856-a8371794149d",
        "github.com/docker/docker => github.com/moby/moby v17.12.0-ce-rc1.0.20200618181300-9dc6525e6118+incompatible",
        "golang.org/x/net v0.1.0 => golang.org/x/net v0.2.0",
    ]
    assert tools.gomod_directives(HELM_3_5_GOMOD, "exclude") == [
        "github.com/bad/mod v1.0.0",
        "github.com/bad/mod v1.0.1",
    ]
    assert tools.gomod_directives("module x\n\ngo 1.26.0\n", "replace") == []


def test_the_tools_replaces_and_excludes_are_copied_into_the_build_module(tools):
    helm = tools.TOOLS["helm"]
    assert tools.inherited_directives(helm, HELM_3_5_GOMOD) == (
        "replace github.com/docker/distribution => github.com/docker/distribution v0.0.0-20191216044856-a8371794149d",
        "replace github.com/docker/docker => github.com/moby/moby v17.12.0-ce-rc1.0.20200618181300-9dc6525e6118"
        "+incompatible",
        "replace golang.org/x/net v0.1.0 => golang.org/x/net v0.2.0",
        "exclude github.com/bad/mod v1.0.0",
        "exclude github.com/bad/mod v1.0.1",
    )


def test_a_replace_by_a_local_path_stops_the_build_with_a_clear_message(tools):
    gomod = "module sigs.k8s.io/kustomize/kustomize/v5\n\nreplace sigs.k8s.io/kustomize/api => ../api\n"
    with pytest.raises(SystemExit, match=r"replaces by a local path \(sigs.k8s.io/kustomize/api => ../api\)"):
        tools.inherited_directives(tools.TOOLS["kustomize"], gomod)


def test_helm_is_stamped_with_its_version_and_the_kubernetes_version_of_its_client_go(tools):
    flags = tools.helm_ldflags("v3.22.0", "require (\n\tk8s.io/client-go v0.37.0\n\tk8s.io/api v0.37.0\n)\n")
    assert flags.startswith("-s -w ")
    assert "-X helm.sh/helm/v3/internal/version.version=v3.22.0" in flags
    for pkg in ["helm.sh/helm/v3/pkg/chartutil", "helm.sh/helm/v3/pkg/lint/rules"]:
        assert f"-X {pkg}.k8sVersionMajor=1" in flags
        assert f"-X {pkg}.k8sVersionMinor=37" in flags
    with pytest.raises(SystemExit, match="client-go"):
        tools.helm_ldflags("v3.22.0", "module helm.sh/helm/v3\n")


def test_build_spec_requires_the_pinned_module_and_builds_its_main_package(tools):
    helm = tools.build_spec(tools.TOOLS["helm"], HELM_3_5_GOMOD)
    assert helm.requires == {"helm.sh/helm/v3": tools.HELM_VERSION}
    assert helm.binaries == {"helm": "helm.sh/helm/v3/cmd/helm"}
    assert f"internal/version.version={tools.HELM_VERSION}" in helm.ldflags
    assert "k8sVersionMinor=20" in helm.ldflags  # client-go v0.20.4 in that go.mod
    assert len(helm.gomod_extra) == 5
    assert not helm.k8s_staging and not helm.main_go

    kustomize = tools.build_spec(tools.TOOLS["kustomize"], "module sigs.k8s.io/kustomize/kustomize/v5\n\ngo 1.26.0\n")
    assert kustomize.requires == {"sigs.k8s.io/kustomize/kustomize/v5": tools.KUSTOMIZE_VERSION}
    assert kustomize.binaries == {"kustomize": "sigs.k8s.io/kustomize/kustomize/v5"}
    assert kustomize.ldflags == "-s -w"  # kustomize reads its version from the Go build info
    assert kustomize.gomod_extra == ()

    crane = tools.build_spec(tools.TOOLS["crane"], "module github.com/google/go-containerregistry\n\ngo 1.25.0\n")
    assert crane.requires == {"github.com/google/go-containerregistry": tools.CRANE_VERSION}
    assert crane.binaries == {"crane": "github.com/google/go-containerregistry/cmd/crane"}
    # built as a dependency, crane would report `(devel)`: its release version is stamped in
    assert (
        crane.ldflags == f"-s -w -X github.com/google/go-containerregistry/cmd/crane/cmd.Version={tools.CRANE_VERSION}"
    )

    kbld = tools.build_spec(tools.TOOLS["kbld"], "module carvel.dev/kbld\n\ngo 1.23.8\n")
    assert kbld.requires == {"carvel.dev/kbld": tools.KBLD_VERSION}
    assert kbld.binaries == {"kbld": "carvel.dev/kbld/cmd/kbld"}
    # as kbld's hack/build.sh: `kbld version` says 0.46.0
    assert kbld.ldflags == f"-s -w -X carvel.dev/kbld/pkg/kbld/version.Version={tools.KBLD_VERSION[1:]}"

    # cue reads its version from the Go build info; sops's is a variable of its source
    for name, module in (("cue", "cuelang.org/go"), ("sops", "github.com/getsops/sops/v3")):
        spec = tools.build_spec(tools.TOOLS[name], f"module {module}\n\ngo 1.25.0\n")
        assert spec.requires == {module: tools.TOOLS[name].version}
        assert spec.binaries == {name: tools.TOOLS[name].package} and spec.ldflags == "-s -w"

    age = tools.build_spec(tools.TOOLS["age-keygen"], "module filippo.io/age\n\ngo 1.25.0\n")
    assert age.binaries == {"age-keygen": "filippo.io/age/cmd/age-keygen"}
    assert age.ldflags == f"-s -w -X main.Version={tools.AGE_VERSION}"  # `age-keygen --version`


def test_path_of_an_unbuilt_tool_fails_clearly_and_env_lists_only_built_tools(tools, tmp_path):
    result = run_script(tmp_path, "path", "helm")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "helm v3." in result.stderr and "is not built" in result.stderr
    assert "python3 hack/tools.py build helm" in result.stderr

    assert run_script(tmp_path, "env").stdout == ""

    kustomize = tmp_path / f"kustomize-{tools.KUSTOMIZE_VERSION}" / "bin" / "kustomize"
    kustomize.parent.mkdir(parents=True)
    kustomize.write_text("#!/bin/sh\n")
    assert run_script(tmp_path, "path", "kustomize").stdout == f"{kustomize}\n"
    assert run_script(tmp_path, "env").stdout == f"KAPPLY_KUSTOMIZE={kustomize}\n"
    assert run_script(tmp_path, "path", "helm").returncode == 1


def test_unknown_tools_are_refused(tmp_path):
    result = run_script(tmp_path, "build", "helm", "kubectl")
    assert result.returncode == 2
    known = "helm, kustomize, kbld, imgpkg, vendir, cue, sops, crane, age-keygen"
    assert f"unknown tool kubectl (known: {known})" in result.stderr
    assert not (tmp_path / "build").exists()  # nothing was built, not even helm


def test_imgpkg_and_vendir_say_their_release_versions(tools):
    """The real kctrl's `package release` runs them (the differential tests of `kapply package release`)."""
    for name, variable in (
        ("imgpkg", "carvel.dev/imgpkg/pkg/imgpkg/cmd.Version"),
        ("vendir", "carvel.dev/vendir/pkg/vendir/version.Version"),
    ):
        tool = tools.TOOLS[name]
        spec = tools.build_spec(tool, "module x\n\ngo 1.23.8\n")
        assert f"-X {variable}={tool.version.removeprefix('v')}" in spec.ldflags
