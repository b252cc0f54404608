"""`package init`'s upstream sources, as kctrl 0.53 fetches them: the answers go into `vendir.yml` (one directory,
`upstream`, of one content at `.`), saved after each answer, the file is shown, and the real vendir syncs it
(`vendir sync -f vendir.yml`, which writes `upstream/` and `vendir.lock.yml`).

Built: a Helm chart from a Helm repository (its repository URL, chart name and version) and a Git repository (its URL,
reference and the paths kept of it: vendir's includePaths). kctrl's other upstream sources (a GitHub release, a Helm
chart from a Git repository) are refused with a message.

vendir is found as kapply finds its programs ($KAPPLY_VENDIR, else PATH) and runs with the user's environment; it runs
helm, which it finds on PATH unless $VENDIR_HELM_BINARY names it (kapply sets that to $KAPPLY_HELM when only the
latter is set).
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

from kapply import programs
from kapply.cli.package import authoring as files
from kapply.cli.package.authoring_ui import AuthoringUI
from kapply.errors import KapplyError
from kapply.objects import Obj

VENDIR_FILE = "vendir.yml"
SYNC_DIRECTORY = "upstream"
VENDIR_API_VERSION = "vendir.k14s.io/v1alpha1"

VENDIR_HELP = (
    "We will use vendir to fetch the data from the source to the local directory.\n"
    "Vendir allows us to declaratively state what should be in a directory and sync\n"
    "data sources into it.\n"
    "All the information entered above has been persisted into a vendir.yml file.\n"
)
SYNC_HELP = (
    "\nNext step is to run 'vendir sync' to fetch the data from the source to the local\n"
    "directory.\n"
    "Vendir will sync the data into the upstream folder.\n"
)


def read_config() -> Obj:
    """vendir.yml, or a new Config."""
    text = files.read_text(VENDIR_FILE)
    if text is None:
        return {"apiVersion": VENDIR_API_VERSION, "kind": "Config", "minimumRequiredVersion": ""}
    config = files.load_mapping(text, VENDIR_FILE)
    config.setdefault("minimumRequiredVersion", "")
    return config


def content(config: Obj) -> dict[str, Any]:
    """The one content of the one directory (made when there is none); more is refused as kctrl refuses it."""
    directories = config.get("directories")
    if not isinstance(directories, list) or not directories:
        directories = config["directories"] = [{"path": SYNC_DIRECTORY, "contents": [{"path": "."}]}]
    if len(directories) > 1:
        raise KapplyError("More than 1 directory config found in the vendir file. (hint: Run vendir sync manually)")
    contents = directories[0].get("contents") if isinstance(directories[0], dict) else None
    if not isinstance(contents, list) or not contents:
        contents = directories[0]["contents"] = [{"path": "."}]
    if len(contents) > 1:
        raise KapplyError("More than 1 content config found in the vendir file. (hint: Run vendir sync manually)")
    found: dict[str, Any] = contents[0]
    return found


def save(config: Obj) -> None:
    files.write_yaml(VENDIR_FILE, _without_empty(config))


def _without_empty(value: Any) -> Any:
    """What Go writes of vendir's structs: empty fields are omitted (`minimumRequiredVersion` is always written)."""
    if isinstance(value, dict):
        kept = {k: _without_empty(v) for k, v in value.items() if v not in ("", None) or k == "minimumRequiredVersion"}
        return kept
    if isinstance(value, list):
        return [_without_empty(v) for v in value]
    return value


def source_index(config: Obj | None, helm_in_build: bool) -> int | None:
    """The source an earlier run chose, as an index of init.SOURCES, read from vendir.yml as kctrl reads it (a Git
    repository's is a Helm chart's when the build templates with helm); None: none fetched with vendir."""
    if config is None or not config.get("directories"):
        return None
    found = content(config)
    if "helmChart" in found:
        return 2
    if "githubRelease" in found:
        return 1
    if "git" in found:
        return 4 if helm_in_build else 3
    return None


def choose_source(ui: AuthoringUI, sources: tuple[str, ...], build_app_spec: dict[str, Any] | None) -> int:
    """kctrl's question for the source (the last one by default); another source than vendir.yml's is refused."""
    config = read_config() if os.path.exists(VENDIR_FILE) else None
    steps = (build_app_spec or {}).get("template")
    helm = isinstance(steps, list) and any(isinstance(s, dict) and "helmTemplate" in s for s in steps)
    previous = source_index(config, helm)
    chosen = ui.ask_choice("Enter source", sources, previous or 0)
    if previous is not None and chosen != previous:
        raise KapplyError(
            "Transitioning from one fetch option to another is not allowed. Earlier option selected: "
            f"{sources[previous]}, Current Option selected: {sources[chosen]}"
        )
    return chosen


def configure_helm_chart(ui: AuthoringUI, config: Obj) -> None:
    """kctrl's questions for a Helm chart from a Helm repository: its repository URL, name and version."""
    found = content(config)
    for key in [k for k in found if k not in ("path", "helmChart")]:
        del found[key]
    chart = found.get("helmChart")
    if not isinstance(chart, dict):
        chart = found["helmChart"] = {}
    save(config)
    repository = chart.get("repository")
    if not isinstance(repository, dict):
        repository = chart["repository"] = {}
    repository["url"] = ui.ask_text("Enter helm chart repository URL", str(repository.get("url") or "")).strip()
    save(config)
    chart["name"] = ui.ask_text("Enter helm chart name", str(chart.get("name") or "")).strip()
    save(config)
    chart["version"] = ui.ask_text("Enter helm chart version", str(chart.get("version") or "")).strip()
    save(config)


GIT_URL_HELP = "Both https and ssh URL's are supported, e.g.\nhttps://github.com/vmware-tanzu/carvel-kapp-controller"
GIT_REF_HELP = "A git reference can be any branch, tag, commit; origin is the name of the\nremote."
GIT_PATHS_HELP = (
    "We need to know which files contain Kubernetes manifests. Multiple files can be\n"
    "included using a comma separator.\n"
    "- To include all the files, enter *\n"
    "- To include a folder with all the sub-folders and files, enter\n"
    "<FOLDER_NAME>/**/* \n"
    "- To include all the files inside a folder, enter <FOLDER_NAME>/*"
)
DEFAULT_GIT_REF = "origin/main"


def configure_git(ui: AuthoringUI, config: Obj) -> None:
    """kctrl's questions for a Git repository: its URL, the reference and the paths vendir keeps of it."""
    found = content(config)
    for key in [k for k in found if k not in ("path", "git", "includePaths")]:
        del found[key]
    git = found.get("git")
    if not isinstance(git, dict):
        git = found["git"] = {}
    save(config)
    ui.informational(GIT_URL_HELP)
    git["url"] = ui.ask_text("Enter Git URL", str(git.get("url") or "")).strip()
    save(config)
    ui.informational(GIT_REF_HELP)
    git["ref"] = ui.ask_text("Enter Git Reference", str(git.get("ref") or DEFAULT_GIT_REF)).strip()
    save(config)
    ui.informational(GIT_PATHS_HELP)
    were = found.get("includePaths")
    default = ",".join(str(p) for p in were) if isinstance(were, list) and were else "*"
    answer = ui.ask_text("Enter the paths which contain Kubernetes manifests", default)
    found["includePaths"] = [path.strip() for path in answer.split(",")]
    save(config)


def sync(ui: AuthoringUI) -> None:
    """Show vendir.yml and run `vendir sync -f vendir.yml`; its stderr is the error when it fails."""
    ui.informational(VENDIR_HELP)
    ui.header(f"Printing {VENDIR_FILE} ")
    text = files.read_text(VENDIR_FILE) or ""
    ui.command_output(text.rstrip("\n"))
    ui.informational(SYNC_HELP)
    ui.header("Running vendir sync")
    ui.command_text(f"vendir sync -f {VENDIR_FILE}\n")
    env = dict(os.environ)
    helm = os.environ.get(programs.ENV["helm"])
    if helm and "VENDIR_HELM_BINARY" not in env:
        env["VENDIR_HELM_BINARY"] = helm
    done = subprocess.run(
        [programs.find("vendir"), "sync", "-f", VENDIR_FILE],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        raise KapplyError(f"Running vendir sync: {done.stderr}")


def upstream_app_spec(app_spec: dict[str, Any], export: dict[str, Any], *, helm: bool) -> None:
    """Build what vendir fetched into `upstream`: a chart with helm template, then ytt and kbld; manifests with ytt,
    then kbld. As kctrl, only where the build has no templates (or include paths) yet."""
    if not app_spec.get("template"):
        first = {"helmTemplate": {"path": SYNC_DIRECTORY}} if helm else {"ytt": {"paths": [SYNC_DIRECTORY]}}
        app_spec["template"] = [first, {"ytt": {"paths": ["-"]}}, {"kbld": {}}] if helm else [first, {"kbld": {}}]
    if not app_spec.get("deploy"):
        app_spec["deploy"] = [{"kapp": {}}]
    if not export.get("includePaths"):
        export["includePaths"] = [SYNC_DIRECTORY]
