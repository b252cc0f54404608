"""The App fields kapply used to ignore or refuse, through the controller process and the real tools (issue 32):
`valuesFrom[].downwardAPI` into ytt (data values) and helm (values files, with helmTemplate's kubernetesVersion and
kubernetesAPIs), kbld's absolute paths read within the fetched files, `deploy[].kapp.inspect` and
`deploy.kapp.associatedResources` in the status, and git's `refSelection` and `depth` against a local repository.
Hostile: a field path that tries to be more than a path or to reach another object, a selection's constraints that
try to be a command, an absolute path naming a file of the machine: each ends ReconcileFailed naming the field, and
nothing outside the App's own files is read.

One controller for the module (`-n` its own namespace, `--dangerous-allow-file-urls` for the local repository), and
one namespace deleted at the end with everything in it.
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client

from kapply import __version__
from kapply.api import AsyncClient
from tests.e2e.controller_harness import (
    App,
    Controllers,
    config_map_data,
    inline_app,
    module_controller,
    tool_env,
)
from tests.e2e.harness import Cluster, eventually, external_tool
from tests.e2e.test_controller_hostile import assert_refused, outcomes

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

CANARY = f"CANARY-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def controller(
    cluster: Cluster, kube: Client, module_namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Controllers]:
    logs = tmp_path_factory.mktemp("logs")
    with module_controller(
        cluster.kubeconfig,
        kube,
        module_namespace,
        logs,
        "--dangerous-allow-file-urls",
        env=tool_env("ytt", "helm", "kbld"),
    ) as running:
        yield running


def app(name: str, namespace: str, files: dict[str, str], labels: dict[str, str] | None = None, **spec: Any) -> Any:
    made = inline_app(name, namespace, files, syncPeriod="30s", **spec)
    made["metadata"]["labels"] = labels or {}
    return App(**made)


def deployed(kube: Client, namespace: str, name: str) -> dict:
    reported = outcomes(kube, namespace, name, timeout=60)[name]
    assert reported["conditions"][0]["type"] == "ReconcileSucceeded", reported
    return reported


def server_version(cluster: Cluster) -> str:
    """`/version`'s gitVersion without its `v`, as kapp-controller gives it."""

    async def read() -> str:
        async with AsyncClient(cluster.kubeconfig) as client:
            return str((await client.cluster.server_version())["gitVersion"])

    return asyncio.run(read()).removeprefix("v")


DOWNWARD_ITEMS = [
    {"name": "app.name", "fieldPath": "metadata.name"},
    {"name": "app.namespace", "fieldPath": "{.metadata.namespace}"},
    {"name": "app.uid", "fieldPath": ".metadata.uid"},
    {"name": "app.team", "fieldPath": "metadata.labels['team']"},
    {"name": "k8s", "kubernetesVersion": {}},
    {"name": "kc", "kappControllerVersion": {}},
    {"name": "apis", "kubernetesAPIs": {}},
]


def test_downward_api_values_reach_ytt_as_data_values(
    controller: Controllers, cluster: Cluster, kube: Client, module_namespace: str
):
    template = (
        '#@ load("@ytt:data", "data")\n'
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-ytt}\ndata:\n"
        "  name: #@ data.values.app.name\n  namespace: #@ data.values.app.namespace\n"
        "  uid: #@ data.values.app.uid\n  team: #@ data.values.app.team\n"
        "  k8s: #@ data.values.k8s\n  kc: #@ data.values.kc\n"
        '  served: #@ str("kapply.dev/v1alpha1" in data.values.apis and "v1" in data.values.apis)\n'
    )
    created = app(
        "dw-ytt",
        module_namespace,
        {"cm.yml": template},
        labels={"team": "blue"},
        template=[{"ytt": {"valuesFrom": [{"downwardAPI": {"items": DOWNWARD_ITEMS}}]}}],
    )
    made = kube.create(created)
    deployed(kube, module_namespace, "dw-ytt")
    assert config_map_data(kube, module_namespace, "from-ytt") == {
        "name": "dw-ytt",
        "namespace": module_namespace,
        "uid": made.metadata.uid,
        "team": "blue",
        "k8s": server_version(cluster),
        "kc": __version__,
        "served": "True",
    }


def test_downward_api_values_and_the_clusters_version_and_apis_reach_helm(
    controller: Controllers, cluster: Cluster, kube: Client, module_namespace: str
):
    chart = {
        "Chart.yaml": "apiVersion: v2\nname: dw\nversion: 0.1.0\n",
        "templates/cm.yaml": (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-helm}\ndata:\n"
            "  name: {{ .Values.app.name | quote }}\n  team: {{ .Values.app.team | quote }}\n"
            "  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n"
            '  served: {{ .Capabilities.APIVersions.Has "kapply.dev/v1alpha1" | quote }}\n'
        ),
    }
    helm = {
        "valuesFrom": [{"downwardAPI": {"items": DOWNWARD_ITEMS}}],
        "kubernetesVersion": {},
        "kubernetesAPIs": {},
    }
    kube.create(app("dw-helm", module_namespace, chart, labels={"team": "green"}, template=[{"helmTemplate": helm}]))
    deployed(kube, module_namespace, "dw-helm")
    assert config_map_data(kube, module_namespace, "from-helm") == {
        "name": "dw-helm",
        "team": "green",
        "kube": f"v{server_version(cluster)}",
        "served": "true",
    }


def test_kbld_reads_an_absolute_path_within_the_fetched_files_never_the_machines(
    controller: Controllers, kube: Client, module_namespace: str, tmp_path: Path
):
    canary = tmp_path / "canary.yml"
    canary.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: canary}}\ndata: {{x: {CANARY}}}\n")
    service = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-service}\ndata: {x: service}\n"
    kube.create(
        app("kbld-abs", module_namespace, {"service/cm.yml": service}, template=[{"kbld": {"paths": ["/service"]}}])
    )
    kube.create(app("kbld-host", module_namespace, {"cm.yml": service}, template=[{"kbld": {"paths": [str(canary)]}}]))
    deployed(kube, module_namespace, "kbld-abs")
    assert config_map_data(kube, module_namespace, "from-service") == {"x": "service"}
    reported = outcomes(kube, module_namespace, "kbld-host")["kbld-host"]
    assert config_map_data(kube, module_namespace, "canary") is None
    assert_refused(reported, "Templating dir: ")
    assert CANARY not in str(reported)


def test_inspect_and_associated_resources_are_written_to_the_status(
    controller: Controllers, kube: Client, module_namespace: str
):
    files = {"cm.yml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inspected}\ndata: {x: '1'}\n"}
    kube.create(
        app("inspect", module_namespace, files, deploy=[{"kapp": {"inspect": {"rawOptions": ["--tree=true"]}}}])
    )
    kube.create(app("no-inspect", module_namespace, files | {"cm.yml": files["cm.yml"].replace("inspected", "plain")}))
    reported = deployed(kube, module_namespace, "inspect")
    inspect = reported["inspect"]
    assert inspect["exitCode"] == 0 and inspect["stdout"].startswith("Resources in app 'inspect.app'"), inspect
    assert "inspected" in inspect["stdout"] and "ConfigMap" in inspect["stdout"]
    associated = reported["deploy"]["kapp"]["associatedResources"]
    assert associated["label"].startswith("kapp.k14s.io/app=")
    assert associated["namespaces"] == [module_namespace]
    assert associated["groupKinds"] == [{"group": "", "kind": "ConfigMap"}]
    plain = deployed(kube, module_namespace, "no-inspect")
    assert "inspect" not in plain and plain["deploy"]["kapp"]["associatedResources"]["namespaces"] == [module_namespace]


# --- git: refSelection and depth ----------------------------------------------------------------------------------


def git(*args: str, cwd: Path) -> str:
    command = [str(external_tool("git", "KAPPLY_GIT")), "-c", "user.name=kapply tests", "-c", "user.email=t@kapply"]
    result = subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"git {' '.join(args)}:\n{result.stderr}"
    return result.stdout.strip()


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    """A bare repository with versions tagged (a prerelease among them) and a newer untagged commit; its file://
    URL and each tag's commit."""
    tmp = tmp_path_factory.mktemp("git")
    bare, work = tmp / "repo.git", tmp / "work"
    git("init", "-q", "--bare", "--initial-branch=main", str(bare), cwd=tmp)
    git("init", "-q", "--initial-branch=main", str(work), cwd=tmp)
    git("remote", "add", "origin", str(bare), cwd=work)
    commits = {}
    for version in ("v1.0.0", "v1.1.0", "v2.0.0-rc.1", "untagged"):
        (work / "cm.yml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: from-git}}\ndata: {{version: {version}}}\n"
        )
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", version, cwd=work)
        commits[version] = git("rev-parse", "HEAD", cwd=work)
        if version != "untagged":
            git("tag", version, cwd=work)
    git("push", "-q", "--tags", "origin", "main", cwd=work)
    return f"file://{bare}", commits


def test_git_ref_selection_and_depth_fetch_the_highest_version_within_the_constraints(
    controller: Controllers, kube: Client, module_namespace: str, repository: tuple[str, dict[str, str]]
):
    url, commits = repository
    source = {"url": url, "refSelection": {"semver": {"constraints": "<2.0.0"}}, "depth": 1}
    kube.create(app("git-select", module_namespace, {}, fetch=[{"git": source}]))
    reported = deployed(kube, module_namespace, "git-select")
    assert config_map_data(kube, module_namespace, "from-git") == {"version": "v1.1.0"}
    assert yaml.safe_load(reported["fetch"]["stdout"])["directories"][0]["git"]["sha"] == commits["v1.1.0"]


# --- hostile ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field_path", "message"),
    [
        ("metadata.labels['team'] ; --foo", "items[0]: Invalid field path \"metadata.labels['team'] ; --foo\""),
        ("spec.serviceAccountName", "Templating dir: Writing paths: spec is not found"),
        ("{range .items[*]}{.metadata.name}{end}", "unexpected path string"),
    ],
)
def test_a_field_path_is_a_path_into_the_apps_metadata_and_nothing_else(
    controller: Controllers, kube: Client, module_namespace: str, field_path: str, message: str
):
    name = f"dw-hostile-{uuid.uuid4().hex[:5]}"
    items = [{"name": "x", "fieldPath": field_path}]
    kube.create(
        app(
            name,
            module_namespace,
            {"cm.yml": "a: 1\n"},
            template=[{"ytt": {"valuesFrom": [{"downwardAPI": {"items": items}}]}}],
        )
    )
    reported = outcomes(kube, module_namespace, name)[name]
    assert_refused(reported, message.replace('"', "'"))


def test_ref_selection_constraints_are_never_a_command(
    controller: Controllers, kube: Client, module_namespace: str, repository: tuple[str, dict[str, str]], tmp_path: Path
):
    planted = tmp_path / "planted"
    source = {
        "url": repository[0],
        "refSelection": {"semver": {"constraints": f"$(touch {planted}) --upload-pack=touch {planted}"}},
    }
    kube.create(app("git-hostile", module_namespace, {}, fetch=[{"git": source}]))
    reported = outcomes(kube, module_namespace, "git-hostile")["git-hostile"]
    assert not planted.exists()
    assert_refused(reported, "Fetching resources: Determining tag selection: ")


def test_fields_kapply_does_not_show_are_refused_by_name(controller: Controllers, kube: Client, module_namespace: str):
    files = {"cm.yml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: json-inspect}\ndata: {x: '1'}\n"}
    kube.create(
        app("inspect-json", module_namespace, files, deploy=[{"kapp": {"inspect": {"rawOptions": ["--json=true"]}}}])
    )
    reported = deployed(kube, module_namespace, "inspect-json")
    assert reported["inspect"]["error"].startswith("Inspecting: Unsupported flag 'json' for inspect"), reported
    eventually(lambda: config_map_data(kube, module_namespace, "json-inspect") == {"x": "1"}, what="the deploy")
