"""`kapply package repository release`: kctrl's `package repository release`, from a `packages` directory of
Packages and PackageMetadatas (what `package release --repo-output` writes):

1. ask for the repository's name and the registry repository to push it to (defaults: the last ones, from
   pkgrepo-build.yml, which is written again, to `--copy-to` when given);
2. lock the images the Packages name with kbld (`kbld -f packages --imgpkg-lock-output .imgpkg/images.yml`, run in
   the working directory as kctrl runs it: kapply makes `.imgpkg` for it and removes it after, and refuses to start
   when one is there already, where kctrl would delete it);
3. push the bundle (`packages/` and the lock) to `<registry URL>:<--version>` (default `0.0.0-build.<unix time>`)
   with kapply's own OCI client, as `package release` pushes;
4. write package-repository.yml: the PackageRepository that fetches the bundle by digest.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kapply import programs
from kapply.cli.command import Args
from kapply.cli.package import authoring as files
from kapply.cli.package.authoring_ui import AuthoringUI
from kapply.cli.package.release import LOCK_DIR, LOCK_FILE, push
from kapply.errors import KapplyError
from kapply.flags import YES
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.ui.output import Output

DEFAULT_NAME = "sample-repo.carvel.dev"
PACKAGES = "packages"
PREREQUISITES = (
    "1. `packages` directory containing Package and PackageMetadata files present in\n"
    "the working directory.\n"
    "2. Host is authorized to push images to a registry (can be set up using `docker\n"
    "login`)\n"
)
REGISTRY_HELP = (
    "The bundle created needs to be pushed to an OCI registry (format:\n"
    "<REGISTRY_URL/REPOSITORY_NAME>) e.g. index.docker.io/k8slt/sample-bundle"
)
LOCKING_HELP = "kbld ensures that all image references are resolved to an immutable reference."
PUSHING_HELP = (
    "\nAn imgpkg bundle consists of all required YAML configuration bundled into an OCI\n"
    "image that can be pushed to an image registry and consumed by the package.\n"
)
NEXT_STEPS = (
    "1. Add the package repository to the cluster by running `package repository add`\n"
    "2. Alternatively, apply 'package-repository.yml' directly to your cluster.\n"
)


def timestamp(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def repository_build(existing: Obj | None, now: float) -> Obj:
    """pkgrepo-build.yml's PackageRepositoryBuild: the one there, or a new one made now."""
    if existing is not None:
        existing.setdefault("metadata", {}).setdefault("creationTimestamp", None)
        spec = existing.setdefault("spec", {})
        export = spec.get("export") if isinstance(spec.get("export"), dict) else None
        spec["export"] = export or {}
        if not isinstance(spec["export"].get("imgpkgBundle"), dict):
            spec["export"]["imgpkgBundle"] = {}
        return existing
    return {
        "apiVersion": files.BUILD_API_VERSION,
        "kind": "PackageRepositoryBuild",
        "metadata": {"creationTimestamp": timestamp(now)},
        "spec": {"export": {"imgpkgBundle": {}}},
    }


def package_repository(name: str, version: str, image: str, now: float) -> Obj:
    return {
        "apiVersion": files.PACKAGING_API_VERSION,
        "kind": "PackageRepository",
        "metadata": {
            "annotations": {files.REPOSITORY_VERSION_ANNOTATION: version},
            "creationTimestamp": timestamp(now),
            "name": name,
        },
        "spec": {"fetch": {"imgpkgBundle": {"image": image}}},
        "status": {"conditions": None, "friendlyDescription": "", "observedGeneration": 0},
    }


def release(args: Args, out: Output) -> None:
    ui = AuthoringUI(out, assume_yes=args[YES])
    ui.header("\nPrerequisites")
    ui.informational(PREREQUISITES)
    now = time.time()
    version = args["version"] or f"0.0.0-build.{int(now)}"
    files.chdir(args["chdir"])
    text = files.read_text(files.REPO_BUILD_FILE)
    build = repository_build(None if text is None else files.load_mapping(text, files.REPO_BUILD_FILE), now)
    bundle: dict[str, Any] = build["spec"]["export"]["imgpkgBundle"]

    ui.header("\nBasic Information")
    name = ui.ask_text("Enter the package repository name", str(build["metadata"].get("name") or DEFAULT_NAME))
    build["metadata"]["name"] = name
    ui.header("Registry URL")
    ui.informational(REGISTRY_HELP)
    bundle["image"] = ui.ask_text("Enter the registry url", str(bundle.get("image") or "")).strip()
    files.write_yaml(Path(args["copy-to"]) / files.REPO_BUILD_FILE, build)

    ui.informational(LOCKING_HELP)
    ui.informational("\nLock image references using kbld")
    if not Path(PACKAGES).exists():
        raise KapplyError("Expected to find `packages` directory in the root")
    lock = _lock()
    ui.command_output(f"\n$ kbld -f {PACKAGES} --imgpkg-lock-output {LOCK_FILE}")

    ui.informational(PUSHING_HELP)
    ui.header("Pushing imgpkg bundle")
    pushed = push(ui, bundle["image"], version, [PACKAGES], [(LOCK_FILE, lock)])
    files.write_yaml(files.REPOSITORY_FILE, package_repository(name, version, pushed.image, time.time()))
    ui.informational(f"Successfully created {files.REPOSITORY_FILE}\n")
    ui.header("\nNext steps")
    ui.informational(NEXT_STEPS)
    out.finish()


def _lock() -> bytes:
    """kbld's images lock of the packages, written to ./.imgpkg (made for it, and removed after)."""
    if Path(LOCK_DIR).exists() or Path(LOCK_DIR).is_symlink():
        raise KapplyError(
            f"The working directory has a {LOCK_DIR} already; kapply package repository release writes its images "
            "lock there and removes it after: move it away first"
        )
    Path(LOCK_DIR).mkdir()
    try:
        done = subprocess.run(
            [programs.find("kbld"), "-f", PACKAGES, "--imgpkg-lock-output", LOCK_FILE],
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        if done.returncode != 0:
            raise KapplyError(f"kbld: {done.stderr.strip() or done.stdout.strip()}")
        return Path(LOCK_FILE).read_bytes()
    finally:
        shutil.rmtree(LOCK_DIR, ignore_errors=True)
