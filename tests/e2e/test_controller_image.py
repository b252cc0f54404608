"""kapply's controller image (hack/image.py; docs/reconciler.md, "Installing"), without a container runtime.

The image is built from this checkout, or reused from the cache when its inputs (the wheel, the lock file, the
tools, the recipe) are the ones it was built from; pushed with crane to a real OCI registry (`crane registry serve`);
pulled back with kapply.oci into a directory, exactly as an App's `image` fetch would; and run from that root file
system with chroot, as the user and with the environment its config names. Building needs root and mmdebstrap
(`make image` installs it): a few minutes when nothing is cached; for a new commit about 10 s (the Debian and tools
layers are cached for their own inputs: only kapply's wheel is installed again).

kapply.oci unpacks layers as untrusted input and refuses absolute symlinks; the build writes Debian's absolute ones
(`/etc/alternatives/...`, the CA certificates) as relative ones, so the image unpacks whole: that is checked here.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kapply import __version__
from kapply.cli.controller_manifests import stream
from kapply.oci import Kind, fetch
from tests.e2e.registry import Registry
from tests.e2e.test_controller_sandbox import HELM_BOMB

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]  # the first test may build the image

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "image.py"
USER = "65532:65532"
TOOLS = ("helm", "kustomize", "kbld", "cue", "sops", "ytt")
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"


def image_script(*args: str | Path) -> str:
    """hack/image.py's stdout; its stderr in the failure when it fails."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=1500, check=False
    )
    assert result.returncode == 0, f"hack/image.py {' '.join(map(str, args))}:\n{result.stderr[-6000:]}"
    return result.stdout.strip()


@pytest.fixture(scope="module")
def built() -> Path:
    """The build's directory (oci/, rootfs.tar, manifest.txt, image.json)."""
    if os.geteuid() != 0:
        pytest.fail("building the image needs root (mmdebstrap --mode=root, chroot)")
    return Path(image_script("build").splitlines()[-1])


@pytest.fixture(scope="module")
def description(built: Path) -> dict[str, Any]:
    described: dict[str, Any] = json.loads((built / "image.json").read_text())
    return described


@pytest.fixture(scope="module")
def pushed(built: Path, description: dict[str, Any], oci_registry: Registry) -> str:
    """The image's reference in the test registry, pushed by hack/image.py (with crane)."""
    ref = oci_registry.ref("kapply", __version__)
    printed = image_script("push", ref, "--dir", built)
    assert printed.endswith("@" + description["digest"])
    assert oci_registry.digest(ref) == description["digest"]
    return ref


@pytest.fixture(scope="module")
def config(pushed: str, oci_registry: Registry) -> dict[str, Any]:
    """The image's config, as the registry serves it."""
    document: dict[str, Any] = json.loads(oci_registry.crane("config", pushed))
    return document


@pytest.fixture(scope="module")
def rootfs(pushed: str, description: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The image pulled with kapply.oci into a directory: its root file system."""
    root = tmp_path_factory.mktemp("image") / "rootfs"
    root.mkdir()
    fetched = asyncio.run(fetch(pushed, Kind.IMAGE, root, plain_http=True))
    assert fetched.reference.digest == description["digest"]
    assert not any((root / "dev").iterdir())  # left to the runtime, which gives every container a /dev of its own
    null = root / "dev" / "null"  # all git asks of it
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    null.chmod(0o666)
    return root


def environment(config: dict[str, Any]) -> dict[str, str]:
    return dict(entry.split("=", 1) for entry in config["config"]["Env"])


def in_image(root: Path, config: dict[str, Any], *argv: str) -> str:
    """Run `argv` in the root file system as the image's user, with (only) its environment; stdout, or the failure
    with stderr."""
    result = subprocess.run(
        [CHROOT, f"--userspec={config['config']['User']}", str(root), *argv],
        env=environment(config),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{argv} in the image exited {result.returncode}:\n{result.stdout}{result.stderr}"
    return result.stdout


def test_the_image_is_configured_to_run_the_controller_as_non_root(
    config: dict[str, Any], description: dict[str, Any]
) -> None:
    settings = config["config"]
    assert (config["os"], config["architecture"]) == ("linux", "amd64")
    assert settings["User"] == USER
    assert settings["Entrypoint"] == ["/opt/kapply/bin/kapply"]
    assert settings["Cmd"] == ["controller", "--in-cluster"]
    env = environment(config)
    assert env["PATH"].split(":")[0] == "/opt/kapply/bin"
    expected_tools = {"helm", "kustomize", "kbld", "cue", "sops"} | ({"ytt"} if os.environ.get("KAPPLY_YTT") else set())
    assert set(description["tools"]) == expected_tools
    assert {name for name in TOOLS if f"KAPPLY_{name.upper()}" in env} == expected_tools
    assert settings["Labels"]["org.opencontainers.image.version"] == __version__
    assert [layer["name"] for layer in description["layers"]] == ["debian", "tools", "kapply"]
    assert description["tag"] == f"ghcr.io/kapply/kapply:{__version__}"


def test_the_pulled_root_file_system_keeps_programs_executable_and_every_symlink_inside(
    rootfs: Path, config: dict[str, Any], built: Path
) -> None:
    for program in ("opt/kapply/bin/kapply", "usr/bin/python3.11", "usr/bin/git", "usr/bin/ssh"):
        assert stat.S_IMODE((rootfs / program).stat().st_mode) & 0o111, program
    for name, path in environment(config).items():
        if name.startswith("KAPPLY_"):
            assert stat.S_IMODE((rootfs / path.lstrip("/")).stat().st_mode) == 0o755, name
    links = {str(p.relative_to(rootfs)): os.readlink(p) for p in rootfs.rglob("*") if p.is_symlink()}
    assert not [path for path, target in links.items() if target.startswith("/")]
    assert links["usr/bin/python3"] == "python3.11"  # Debian's own relative links are kept as they are
    assert links["bin"] == "usr/bin"  # merged /usr
    assert links["opt/kapply/bin/python3"] == "../../../usr/bin/python3"  # made relative by the build
    assert links["usr/bin/awk"] == "../../etc/alternatives/awk"
    assert (rootfs / "etc" / "ssl" / "certs" / "ca-certificates.crt").is_file()
    assert (rootfs / "opt" / "kapply" / "image-manifest.txt").read_text() == (built / "manifest.txt").read_text()
    assert not (rootfs / "etc" / "resolv.conf").exists()  # the build machine's is not left in
    passwd = (rootfs / "etc" / "passwd").read_text().splitlines()
    assert f"kapply:x:{USER}:kapply controller:/tmp:/usr/sbin/nologin" in passwd


def test_kapply_and_its_tools_run_from_the_root_file_system(rootfs: Path, config: dict[str, Any]) -> None:
    entrypoint = config["config"]["Entrypoint"]
    assert in_image(rootfs, config, *entrypoint, "version").strip() == f"kapply version {__version__}"
    help_text = in_image(rootfs, config, *entrypoint, *config["config"]["Cmd"], "--help")
    assert "Run the App controller" in help_text
    assert "manifests" in help_text
    assert in_image(rootfs, config, "git", "--version").startswith("git version 2.")
    env = environment(config)
    assert in_image(rootfs, config, env["KAPPLY_HELM"], "version", "--short").startswith("v3.")
    assert in_image(rootfs, config, env["KAPPLY_KUSTOMIZE"], "version").startswith("v5.")
    assert in_image(rootfs, config, env["KAPPLY_KBLD"], "version").startswith("kbld version 0.46.")
    assert in_image(rootfs, config, env["KAPPLY_CUE"], "version").startswith("cue version v0.17.")
    assert in_image(rootfs, config, env["KAPPLY_SOPS"], "--version", "--disable-version-check").startswith("sops 3.13.")
    if "KAPPLY_YTT" in env:
        assert in_image(rootfs, config, env["KAPPLY_YTT"], "version").startswith("ytt version ")
    # the install manifests ship in the wheel: the image's kapply prints what this checkout has in config/
    assert in_image(rootfs, config, *entrypoint, "controller", "manifests") == stream()


def test_the_build_records_every_package_it_installed(built: Path, description: dict[str, Any]) -> None:
    manifest = (built / "manifest.txt").read_text()
    sections = {
        block.splitlines()[0].split(":")[0]: block.splitlines()[1:] for block in manifest.split("\n\n") if block
    }
    debian = {name: version for name, version, _ in (line.split("\t") for line in sections["[debian packages"])}
    assert {"python3", "git", "ca-certificates", "openssh-client", "libc6"} <= set(debian)
    assert debian["python3"].startswith("3.11.")
    python = dict(line.split("\t") for line in sections["[python packages in /opt/kapply"])
    assert python["kapply"] == __version__
    assert "pip" not in python  # pip installed the packages from its own wheel and is not in the image
    tools = {line.split("\t")[0]: line.split("\t") for line in sections["[tools in /usr/local/bin]"]}
    assert set(tools) == set(description["tools"])
    assert all(fields[2] == "sha256:" + description["inputs"]["tools"][name] for name, fields in tools.items())


SANDBOX_CHECK = """
import asyncio, json, os, sys
from kapply.controller import sandbox_app
from kapply.controller.fetch import FetchPolicy
from kapply.controller.sandbox import Sandbox, SandboxFailed, SandboxLimits

def app(files):
    return {"metadata": {"name": "a", "namespace": "n"}, "spec": {"serviceAccountName": "sa",
            "fetch": [{"inline": {"paths": files}}], "template": [{"helmTemplate": {"path": "chart"}}],
            "deploy": [{"kapp": {}}]}}

async def main():
    sandbox = Sandbox(SandboxLimits(memory=256 << 20, cpu=20, wall=60))
    async def read(kind, name):
        return None
    protections = sorted(await sandbox.protections())
    chart, bomb = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    _, manifests = sandbox_app.result(await sandbox.run("app", sandbox_app.request(app(chart), FetchPolicy()), read))
    try:
        await sandbox.run("app", sandbox_app.request(app(bomb), FetchPolicy()), read)
        failed = "the bomb did not fail"
    except SandboxFailed as e:
        failed = str(e)
    os.environ["KAPPLY_HELM"] = "/tmp/forker.sh"  # a "helm" that starts processes without end: a fork bomb
    forks = Sandbox(SandboxLimits(memory=256 << 20, cpu=20, wall=60, processes=64))
    try:
        await forks.run("app", sandbox_app.request(app(chart), FetchPolicy()), read)
        forked = "the fork bomb did not fail"
    except SandboxFailed as e:
        forked = str(e)
    print(json.dumps({"protections": protections, "manifests": manifests, "bomb": failed, "forks": forked}))

asyncio.run(main())
"""


def test_the_sandbox_runs_in_the_image_and_its_limits_hold_without_namespaces_processes_too(
    rootfs: Path, config: dict[str, Any]
) -> None:
    # chroot, as the image's user: no user namespace can be made in a chroot, so this is a pod without them (the
    # runtime's default seccomp profile): the limits alone hold, and a helm chart that allocates without end fails
    # naming the limit, while an honest chart templates.
    chart = {
        "chart/Chart.yaml": "apiVersion: v2\nname: honest\nversion: 0.1.0\n",
        "chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Chart.Name }}}\n",
    }
    python = str(Path(config["config"]["Entrypoint"][0]).parent / "python3")
    (rootfs / "tmp").chmod(0o1777)  # config/controller/deployment.yml mounts an emptyDir there (the root is read-only)
    forker = rootfs / "tmp" / "forker.sh"
    forker.write_text("#!/bin/sh\ni=0\nwhile [ $i -lt 1000 ]; do sleep 3 & i=$((i+1)); done\nwait\n")
    forker.chmod(0o755)
    ran = json.loads(
        in_image(rootfs, config, python, "-c", SANDBOX_CHECK, json.dumps(chart), json.dumps(HELM_BOMB)).strip()
    )
    assert ran["protections"] == ["limits"]
    assert "name: honest" in ran["manifests"]
    assert ran["bomb"] == (
        "Templating helm chart: helm ran out of memory (the sandbox's limit is 268435456 bytes per process, "
        "--sandbox-memory-mib)"
    )
    # RLIMIT_NPROC binds the image's user (not root): the bomb's shell cannot fork past it
    assert ran["forks"] == (
        "Templating helm chart: helm could not start a process: its user has the sandbox's 64 processes already"
    )
