"""`kapply package init`: kctrl's `package init`, asking what kctrl asks and writing package-build.yml and
package-resources.yml as it writes them (kapply.cli.package.authoring).

The questions, in order (kctrl's defaults come from the files of an earlier run):
1. the package's reference name (a DNS subdomain of at least three segments);
2. where its content comes from: kctrl offers a local directory, a GitHub release, a Helm chart from a Helm
   repository, a Git repository and a Helm chart from a Git repository; kapply builds from a local directory, a Helm
   chart from a Helm repository or a Git repository, and says so for the others (docs/compatibility.md, "Known
   differences");
3. for a local directory, the paths (comma-separated) that hold its manifests: templated with ytt, then kbld, and put
   in its bundle; for a Helm chart, its repository URL, name and version, for a Git repository its URL, reference and
   the paths kept of it (kapply.cli.package.authoring_vendir: written to vendir.yml and fetched into `upstream` by
   vendir), templated with helm (a chart), then ytt and kbld;
4. on a rerun whose Package templates otherwise than the PackageBuild now does: whether to overwrite the Package's.

Like kctrl, each step saves what it decided (a question left unanswered leaves the files as far as they got).
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any

from kapply.cli.command import Args
from kapply.cli.package import authoring as files
from kapply.cli.package import authoring_vendir as vendir
from kapply.cli.package.authoring_ui import AuthoringUI
from kapply.errors import KapplyError
from kapply.flags import YES
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.ui.output import Output

DEFAULT_REF_NAME = "samplepackage.corp.com"
DEFAULT_VERSION = "0.0.0"
SOURCES = (
    "Local Directory",
    "Github Release",
    "Helm Chart from Helm Repository",
    "Git Repository",
    "Helm Chart from Git Repository",
)
HELM_REPOSITORY = 2  # the index of "Helm Chart from Helm Repository"
GIT_REPOSITORY = 3
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS1123_SUBDOMAIN_MAX = 253

WELCOME = (
    "\nWelcome! Before we start, do install the latest Carvel suite of tools,\n"
    "specifically ytt, imgpkg, vendir and kbld.\n"
)
REF_NAME_HELP = "A package reference name must be at least three '.' separated segments,e.g.\nsamplepackage.corp.com"
CONTENT_HELP = (
    "Please provide the location from where your Kubernetes manifests or Helm chart\n"
    "can be fetched. This will be bundled as a part of the package."
)
PATHS_HELP = (
    "We need to include files/ directories which contain Kubernetes manifests.\n"
    "Multiple values can be included using a comma separator."
)
DIFFERENT_APP_SPEC = (
    "Found different AppSpec section in\nPackage (inside package-resources.yml) and\nPackageBuild (inside "
    "package-build.yml)"
)
NEXT_STEPS = (
    "Created files can be consumed in following ways:\n"
    "1. `package release` command to release the package.\n"
    "2. `package release --repo-output repo` to release the package and add it to the\n"
    "package repository directory.\n"
)


def check_ref_name(name: str) -> str | None:
    """kctrl's check of a package's reference name: a DNS subdomain (Kubernetes' message), of three segments at
    least."""
    if len(name) > DNS1123_SUBDOMAIN_MAX:
        return f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters"
    if not _DNS1123_SUBDOMAIN.fullmatch(name):
        return (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    if len(name.split(".")) < 3:
        return f"Invalid name: {name} should be a fully qualified name with at least three segments separated by dots"
    return None


def local_app_spec(paths: list[str], existing: dict[str, Any] | None) -> dict[str, Any]:
    """The App spec a local directory is built with: ytt over the paths, then kbld; deployed with kapp (an
    earlier run's deploy is kept)."""
    deploy = (existing or {}).get("deploy") or [{"kapp": {}}]
    return {"template": [{"ytt": {"paths": paths}}, {"kbld": {}}], "deploy": deploy}


def init(args: Args, out: Output) -> None:
    files.chdir(args["chdir"])
    ui = AuthoringUI(out, assume_yes=args[YES])
    ui.informational(WELCOME)
    build = files.read_build(required=False)
    resources = files.read_resources(required=False)
    package = files.only(resources, "Package") or {"apiVersion": files.DATA_API_VERSION, "kind": "Package"}
    metadata = files.only(resources, "PackageMetadata") or {
        "apiVersion": files.DATA_API_VERSION,
        "kind": "PackageMetadata",
    }
    install = files.only(resources, "PackageInstall") or {
        "apiVersion": files.PACKAGING_API_VERSION,
        "kind": "PackageInstall",
    }
    for obj, go in ((package, files.go_package), (metadata, files.go_metadata), (install, files.go_install)):
        go(obj)

    ui.header("\nBasic Information")
    ui.informational(REF_NAME_HELP)
    ref_name = ui.ask_text(
        "Enter the package reference name", metadata["metadata"].get("name") or DEFAULT_REF_NAME, check_ref_name
    )
    _name(ref_name, package, metadata)
    files.save_resources(package, metadata, install)

    ui.header("Content")
    ui.informational(CONTENT_HELP)
    source = vendir.choose_source(ui, SOURCES, files.build_app_spec(build))
    _save_after_source(build, package, metadata, install)
    if source in (HELM_REPOSITORY, GIT_REPOSITORY):
        configure = vendir.configure_helm_chart if source == HELM_REPOSITORY else vendir.configure_git
        configure(ui, vendir.read_config())
        vendir.sync(ui)
        app_spec = files.build_app_spec(build) or {}
        vendir.upstream_app_spec(app_spec, files.build_export(build), helm=source == HELM_REPOSITORY)
        files.set_build_app_spec(build, app_spec)
    elif source != 0:
        raise KapplyError(
            "kapply package init builds a package from a local directory, a Helm chart from a Helm repository or a "
            f"Git repository only ({SOURCES[source]} is not supported: fetch the content into a directory first)"
        )
    else:
        ui.informational(PATHS_HELP)
        answer = ui.ask_text("Enter the paths which contain Kubernetes manifests", ",".join(files.include_paths(build)))
        paths = [path.strip() for path in answer.split(",")]
        files.set_build_app_spec(build, local_app_spec(paths, files.build_app_spec(build)))
        files.build_export(build)["includePaths"] = paths
    files.write_yaml(files.BUILD_FILE, build)

    if _differs(package, build) and _package_was_made(package):
        ui.informational(DIFFERENT_APP_SPEC)
        if ui.ask_choice("Overwrite the Package AppSpec from PackageBuild", ("Yes", "No"), 1) == 0:
            _take_build_spec(package, build, overwrite=True)

    ui.header("Output")
    build["metadata"]["name"] = package["spec"]["refName"]
    _complete_install(install, package, metadata)
    _complete_package(package, build)
    files.write_yaml(files.BUILD_FILE, build)
    files.save_resources(package, metadata, install)
    ui.informational(f"Successfully updated {files.BUILD_FILE}\n")
    ui.informational(f"Successfully updated {files.RESOURCES_FILE}\n")
    ui.header("\nNext steps")
    ui.informational(NEXT_STEPS)
    out.finish()


def _name(ref_name: str, package: Obj, metadata: Obj) -> None:
    metadata["metadata"]["name"] = ref_name
    spec = metadata["spec"]
    spec["displayName"] = ref_name.split(".")[0]
    if not spec.get("shortDescription"):
        spec["shortDescription"] = ref_name
    if not spec.get("longDescription"):
        spec["longDescription"] = ref_name
    package["spec"]["refName"] = ref_name


def _save_after_source(build: Obj, package: Obj, metadata: Obj, install: Obj) -> None:
    """What kctrl saves once the source is chosen (seen when a later question is left unanswered): the build with an
    empty template spec, and the Package as its Go struct then writes it (no empty version, `template: {spec: null}`
    where it has no App spec yet)."""
    build_spec = files.go_build(build)["spec"].setdefault("template", {})
    build_spec.setdefault("spec", {})
    files.write_yaml(files.BUILD_FILE, build)
    written = copy.deepcopy(files.go_package(package))
    if not written["spec"].get("version"):
        del written["spec"]["version"]
    written["spec"]["template"].setdefault("spec", None)
    files.write_yaml(files.RESOURCES_FILE, written, files.go_metadata(metadata), files.go_install(install))


def _package_was_made(package: Obj) -> bool:
    """An earlier run wrote the Package's App spec."""
    return isinstance(package["spec"].get("template", {}).get("spec"), dict)


def _differs(package: Obj, build: Obj) -> bool:
    app = package["spec"].get("template", {}).get("spec") or {}
    built = files.build_app_spec(build) or {}
    return bool(app.get("template") != built.get("template") or app.get("deploy") != built.get("deploy"))


def _take_build_spec(package: Obj, build: Obj, *, overwrite: bool) -> None:
    template = package["spec"].setdefault("template", {})
    app = template.get("spec")
    if not isinstance(app, dict):
        app = template["spec"] = {}
    built = files.build_app_spec(build) or {}
    for key in ("template", "deploy"):
        if overwrite or not app.get(key):
            app[key] = built.get(key)


def _complete_package(package: Obj, build: Obj) -> None:
    """kctrl's updatePackage: a version (0.0.0), the name `<refName>.<version>`, the build's templates and deploy
    where the Package has none, and a placeholder fetch (`git: {}`, which `package release` replaces)."""
    spec = package["spec"]
    if not spec.get("version"):
        spec["version"] = DEFAULT_VERSION
    package["metadata"]["name"] = f"{spec['refName']}.{spec['version']}"
    _take_build_spec(package, build, overwrite=False)
    app = spec["template"]["spec"]
    if not app.get("fetch"):
        app["fetch"] = [{"git": {}}]


def _complete_install(install: Obj, package: Obj, metadata: Obj) -> None:
    """kctrl's updatePackageInstall: what `kctrl dev deploy` needs, where the install has none."""
    meta, spec = install["metadata"], install["spec"]
    display = metadata["spec"]["displayName"]
    if meta.get("annotations") is None:
        meta["annotations"] = {files.LOCAL_FETCH_ANNOTATION: "."}
    if not meta.get("name"):
        meta["name"] = display
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = f"{display}-sa"
    version = package["spec"].get("version") or DEFAULT_VERSION
    if not isinstance(spec.get("packageRef"), dict):
        spec["packageRef"] = {
            "refName": package["spec"]["refName"],
            "versionSelection": {"constraints": version},
        }
    if not spec["packageRef"].get("refName"):
        spec["packageRef"]["refName"] = package["spec"]["refName"]
