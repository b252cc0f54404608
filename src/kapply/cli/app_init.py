"""`kapply app init`: kctrl 0.53's `app init`, the App counterpart of `package init` (kapply.cli.package.init), asking
what kctrl asks and writing `app-build.yml` (a `kctrl.carvel.dev/v1alpha1` AppBuild) and `app.yml` (a
kapp-controller App for `kctrl dev deploy`) as it writes them.

As kctrl does it, in its order:
1. the App's name (default: the last one, else the working directory's name);
2. both files are saved and the "Output" and "Next steps" texts shown, before the content is asked for;
3. where the content comes from (kapply.cli.package.init's sources: a local directory's paths, a Helm chart from a
   Helm repository or a Git repository, fetched by vendir into `upstream`); app-build.yml is saved again with the App
   spec it builds.

A new app.yml is kctrl's: the local-fetch annotation, kctrl's fixed name `microservices-demo` and `<name>-sa`, the
AppBuild's deploy, and no fetch or templates (`kctrl dev deploy` takes those from the AppBuild); an existing one is
kept as written (what kctrl's App struct keeps of it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kapply.cli.command import Args
from kapply.cli.package import authoring as files
from kapply.cli.package import authoring_vendir as vendir
from kapply.cli.package.authoring_ui import AuthoringUI
from kapply.cli.package.init import CONTENT_HELP, GIT_REPOSITORY, HELM_REPOSITORY, PATHS_HELP, SOURCES, local_app_spec
from kapply.errors import KapplyError
from kapply.flags import YES
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.ui.output import Output

BUILD_FILE = "app-build.yml"
APP_FILE = "app.yml"
APP_API_VERSION = "kappctrl.k14s.io/v1alpha1"
DEFAULT_APP_NAME = "microservices-demo"  # kctrl's, whatever the AppBuild's name
PREREQUISITES = (
    "Welcome! Before we start on the app creation journey, please ensure the\n"
    "following pre-requites are met:\n"
    "* The Carvel suite of tools are installed. Do get familiar with the following\n"
    "Carvel tools: ytt, imgpkg, vendir, and kbld.\n"
    "* You have access to an OCI registry, and authenticated locally so that images\n"
    "can be pushed. e.g. docker login <REGISTRY URL>\n"
)
# kapp-controller's AppSpec fields (what kctrl's struct keeps of app.yml)
APP_SPEC_FIELDS = frozenset(
    (
        "serviceAccountName",
        "cluster",
        "fetch",
        "template",
        "deploy",
        "paused",
        "canceled",
        "syncPeriod",
        "noopDelete",
        "defaultNamespace",
    )
)
NEXT_STEPS = "Use `dev deploy` command to iterate on the app and deploy locally.\n"


def read_build() -> Obj:
    """app-build.yml as kctrl reads it into its AppBuild struct (other fields are dropped), or a new AppBuild."""
    text = files.read_text(BUILD_FILE)
    found = files.load_mapping(text, BUILD_FILE) if text is not None else {}
    spec = found.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    build: Obj = {
        "apiVersion": files.BUILD_API_VERSION,
        "kind": "AppBuild",
        "metadata": found.get("metadata") if isinstance(found.get("metadata"), dict) else {},
        "spec": {k: spec[k] for k in ("app", "export") if k in spec},
    }
    return files.go_build(build)


def read_app(build: Obj) -> Obj:
    """app.yml as kctrl reads it into its App struct (unknown and empty spec fields dropped, nothing filled in), or
    kctrl's new App: the local-fetch annotation, kctrl's fixed name `microservices-demo`, `<name>-sa`, the AppBuild's
    deploy."""
    text = files.read_text(APP_FILE)
    if text is None:
        app: Obj = {
            "apiVersion": APP_API_VERSION,
            "kind": "App",
            "metadata": {"annotations": {files.LOCAL_FETCH_ANNOTATION: "."}, "name": DEFAULT_APP_NAME},
            "spec": {"serviceAccountName": f"{DEFAULT_APP_NAME}-sa", "deploy": app_spec(build).get("deploy")},
        }
        return files.go_install(app)
    app = files.go_install(files.load_mapping(text, APP_FILE))  # the fields Go writes of an App are an install's
    app["spec"] = {k: v for k, v in app["spec"].items() if k in APP_SPEC_FIELDS and v not in (None, "", [], {}, False)}
    return app


def app_spec(build: Obj) -> dict[str, Any]:
    """spec.app.spec (made when there is none)."""
    app = files._spec(build).setdefault("app", {})
    if not isinstance(app, dict):
        raise KapplyError(f"Expected {BUILD_FILE}'s spec.app to be a map")
    spec = app.setdefault("spec", {})
    if not isinstance(spec, dict):
        raise KapplyError(f"Expected {BUILD_FILE}'s spec.app.spec to be a map")
    return spec


def export(build: Obj) -> dict[str, Any]:
    exports = build["spec"].get("export")
    if not isinstance(exports, list) or not exports or not isinstance(exports[0], dict):
        exports = build["spec"]["export"] = [{}]
    first: dict[str, Any] = exports[0]
    return first


def init(args: Args, out: Output) -> None:
    files.chdir(args["chdir"])
    ui = AuthoringUI(out, assume_yes=args[YES])
    ui.header("\nPre-requisite")
    ui.informational(PREREQUISITES)
    build = read_build()

    ui.header("\nBasic Information")
    build["metadata"]["name"] = ui.ask_text("Enter the app name", str(build["metadata"].get("name") or Path.cwd().name))
    spec = app_spec(build)
    if not spec.get("deploy"):
        spec["deploy"] = [{"kapp": {}}]
    files.write_yaml(BUILD_FILE, build)
    files.write_yaml(APP_FILE, read_app(build))
    ui.header("\nOutput")
    ui.informational(f"Successfully updated {BUILD_FILE}\n")
    ui.informational(f"Successfully updated {APP_FILE}\n")
    ui.header("\n**Next steps**")
    ui.informational(NEXT_STEPS)

    ui.header("Content")
    ui.informational(CONTENT_HELP)
    source = vendir.choose_source(ui, SOURCES, spec)
    if source in (HELM_REPOSITORY, GIT_REPOSITORY):
        configure = vendir.configure_helm_chart if source == HELM_REPOSITORY else vendir.configure_git
        configure(ui, vendir.read_config())
        vendir.sync(ui)
        vendir.upstream_app_spec(spec, export(build), helm=source == HELM_REPOSITORY)
    elif source != 0:
        raise KapplyError(
            f"kapply app init builds an App from a local directory, a Helm chart from a Helm repository or a Git "
            f"repository only ({SOURCES[source]} is not supported: fetch the content into a directory first)"
        )
    else:
        ui.informational(PATHS_HELP)
        paths_were = export(build).get("includePaths")
        default = ",".join(str(p) for p in paths_were) if isinstance(paths_were, list) else ""
        answer = ui.ask_text("Enter the paths which contain Kubernetes manifests", default)
        paths = [path.strip() for path in answer.split(",")]
        build["spec"]["app"]["spec"] = local_app_spec(paths, spec)
        export(build)["includePaths"] = paths
    files.write_yaml(BUILD_FILE, build)
    out.finish()
