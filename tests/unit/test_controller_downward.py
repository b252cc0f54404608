"""`valuesFrom[].downwardAPI` (kapply.controller.downward): items read from the spec with kapp-controller's checks,
field paths read over the App's metadata only (never its spec, never another object, never an option), values
files as kapp-controller writes them, and the cluster's facts read only when asked and kept a while. Also the App
fields around it that used to be ignored: ytt's ignoreUnknownComments/strict/fileMarks, helm's kubernetesVersion
and kubernetesAPIs, git's refSelection/depth/lfsSkipSmudge/forceHTTPBasicAuth."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from kapply import __version__
from kapply.controller.downward import (
    AppContext,
    ClusterFacts,
    DownwardError,
    DownwardItem,
    DownwardKind,
    needs,
    parse_field_path,
    values_file,
)
from kapply.controller.spec import SpecError, TemplateStep, TemplateTool, ValuesSource, parse_spec
from kapply.controller.template import TemplateError, template
from kapply.objects import Obj
from kapply.resources.cluster import Discovery, ResourceType
from tests.unit.fake_tools import fake_step_tool, nothing

APP: Obj = {
    "metadata": {
        "name": "web",
        "namespace": "demo",
        "uid": "1234-abcd",
        "labels": {"team": "blue", "app.kubernetes.io/name": "web"},
        "annotations": {"note": "--set=x"},
    }
}
CONTEXT = AppContext.of(APP, "1.30.2", ("v1", "apps/v1", "batch/v1"))


def app_with(template: list[Obj], fetch: Obj | None = None) -> Obj:
    return {
        **APP,
        "spec": {
            "serviceAccountName": "sa",
            "fetch": [fetch or {"inline": {"paths": {"a.yml": "a: 1"}}}],
            "template": template,
            "deploy": [{"kapp": {}}],
        },
    }


def ytt_values(items: list[Obj]) -> list[Obj]:
    return [{"ytt": {"valuesFrom": [{"downwardAPI": {"items": items}}]}}]


def items_of(items: list[Obj]) -> tuple[DownwardItem, ...]:
    source = parse_spec(app_with(ytt_values(items))).template[0].values_from[0]
    assert source.downward is not None
    return source.downward


# --- the spec ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "keys"),
    [
        ("metadata.name", ("metadata", "name")),
        (".metadata.uid", ("metadata", "uid")),
        ("{metadata.namespace}", ("metadata", "namespace")),
        ("{.metadata.labels}", ("metadata", "labels")),
        ("metadata.labels['app.kubernetes.io/name']", ("metadata", "labels", "app.kubernetes.io/name")),
        ('metadata.annotations["note"]', ("metadata", "annotations", "note")),
        ("metadata.labels.app\\.kubernetes\\.io/name", ("metadata", "labels", "app.kubernetes.io/name")),
    ],
)
def test_field_paths_are_read_as_kapp_controller_relaxes_them(path: str, keys: tuple[str, ...]):
    assert parse_field_path(path) == keys


@pytest.mark.parametrize(
    "path",
    [
        "metadata.labels['x'] ; --foo",
        "metadata.labels['x'] --set=a",
        "metadata.labels[*]",
        "metadata..name",
        "metadata.labels[?(@.x)]",
        "{range .items[*]}{.metadata.name}{end}",
        "metadata.name,metadata.uid",
        "metadata.labels['x",
        "metadata.$x",
    ],
)
def test_anything_but_fields_and_quoted_keys_is_refused_naming_the_path(path: str):
    with pytest.raises(DownwardError):
        parse_field_path(path)
    with pytest.raises(SpecError, match=r"spec\.template\[0\]\.ytt\.valuesFrom\[0\]\.downwardAPI\.items\[0\]: "):
        items_of([{"name": "x", "fieldPath": path}])


@pytest.mark.parametrize("name", [".a", "a.", "a..b"])
def test_names_are_checked_as_kapp_controller_checks_them(name: str):
    with pytest.raises(SpecError, match=rf"Invalid name was provided '{name}' \(hint: separate paths"):
        items_of([{"name": name, "fieldPath": "metadata.name"}])


def test_each_kind_of_item_is_read_and_the_first_set_wins():
    assert items_of(
        [
            {"name": "a", "fieldPath": "metadata.name", "kubernetesVersion": {}},
            {"name": "b", "kubernetesVersion": {}},
            {"name": "c", "kubernetesVersion": {"version": "1.20.0"}},
            {"name": "d", "kappControllerVersion": {}},
            {"name": "e", "kubernetesAPIs": {}},
            {"name": "f", "kubernetesAPIs": {"groupVersions": ["x/v1"]}},
        ]
    ) == (
        DownwardItem("a", DownwardKind.FIELD_PATH, field_path=("metadata", "name")),
        DownwardItem("b", DownwardKind.KUBERNETES_VERSION),
        DownwardItem("c", DownwardKind.KUBERNETES_VERSION, version="1.20.0"),
        DownwardItem("d", DownwardKind.KAPP_CONTROLLER_VERSION),
        DownwardItem("e", DownwardKind.KUBERNETES_APIS),
        DownwardItem("f", DownwardKind.KUBERNETES_APIS, group_versions=("x/v1",)),
    )


def test_an_item_without_a_value_is_refused():
    with pytest.raises(SpecError, match=r"items\[0\]: Invalid downward API item given"):
        items_of([{"name": "a"}])


def test_the_options_that_were_ignored_are_read():
    spec = parse_spec(
        app_with(
            [
                {"ytt": {"ignoreUnknownComments": True, "strict": True, "fileMarks": ["a.yml:type=data"]}},
                {"helmTemplate": {"kubernetesVersion": {"version": "1.20"}, "kubernetesAPIs": {}}},
            ],
            {
                "git": {
                    "url": "https://git.example/r",
                    "refSelection": {"semver": {"constraints": ">=1.0.0"}},
                    "depth": 1,
                    "lfsSkipSmudge": True,
                    "forceHTTPBasicAuth": True,
                }
            },
        )
    )
    ytt, helm = spec.template
    assert (ytt.ignore_unknown_comments, ytt.strict, ytt.file_marks) == (True, True, ("a.yml:type=data",))
    assert (helm.kubernetes_version, helm.kubernetes_apis) == (True, True)
    git = spec.fetch[0].git
    assert git is not None and git.ref_selection is not None and git.ref_selection.constraints == ">=1.0.0"
    assert (git.depth, git.lfs_skip_smudge, git.force_http_basic_auth) == (1, True, True)


@pytest.mark.parametrize(
    ("git", "message"),
    [
        ({"ref": "main", "refSelection": {"semver": {}}}, "Expected only one of spec.fetch[0].git.ref or"),
        ({"depth": -1}, "Expected spec.fetch[0].git.depth to be a non-negative integer, got -1"),
        ({"depth": "1; rm -rf /"}, 'Expected spec.fetch[0].git.depth to be a non-negative integer, got "1; rm'),
        ({"depth": True}, "Expected spec.fetch[0].git.depth to be a non-negative integer, got true"),
        ({"refSelection": {"semver": {"constraints": 3}}}, "refSelection.semver.constraints to be a string"),
        ({"lfsSkipSmudge": "yes"}, "Expected spec.fetch[0].git.lfsSkipSmudge to be a boolean"),
    ],
)
def test_git_options_are_checked(git: Obj, message: str):
    with pytest.raises(SpecError) as refused:
        parse_spec(app_with([{"ytt": {}}], {"git": {"url": "https://git.example/r", **git}}))
    assert message in str(refused.value)


# --- values files -----------------------------------------------------------------------------------------------------


def test_values_are_written_as_kapp_controller_writes_them():
    def value(item: DownwardItem) -> Any:
        return yaml.safe_load(values_file(item, CONTEXT))

    field = DownwardKind.FIELD_PATH
    assert value(DownwardItem("a.b", field, field_path=("metadata", "name"))) == {"a": {"b": "web"}}
    assert value(DownwardItem("a\\.b", field, field_path=("metadata", "uid"))) == {"a.b": "1234-abcd"}
    assert value(DownwardItem("l", field, field_path=("metadata", "labels"))) == {
        "l": {"team": "blue", "app.kubernetes.io/name": "web"}
    }
    assert value(DownwardItem("n", field, field_path=("metadata", "annotations", "note"))) == {"n": "--set=x"}
    assert value(DownwardItem("v", DownwardKind.KUBERNETES_VERSION)) == {"v": "1.30.2"}
    assert value(DownwardItem("v", DownwardKind.KUBERNETES_VERSION, version="1.20")) == {"v": "1.20"}
    assert value(DownwardItem("k", DownwardKind.KAPP_CONTROLLER_VERSION)) == {"k": __version__}
    assert value(DownwardItem("g", DownwardKind.KUBERNETES_APIS)) == {"g": ["v1", "apps/v1", "batch/v1"]}
    assert value(DownwardItem("g", DownwardKind.KUBERNETES_APIS, group_versions=())) == {"g": []}


@pytest.mark.parametrize(
    "keys", [("spec", "serviceAccountName"), ("metadata", "labels", "missing"), ("status",), ("metadata", "name", "x")]
)
def test_a_field_path_reaches_nothing_but_the_apps_metadata(keys: tuple[str, ...]):
    with pytest.raises(DownwardError, match="is not found"):
        values_file(DownwardItem("x", DownwardKind.FIELD_PATH, field_path=keys), CONTEXT)


def test_empty_labels_are_an_empty_map_as_in_kapp_controller():
    bare = AppContext.of({"metadata": {"name": "a", "namespace": "b"}})
    item = DownwardItem("l", DownwardKind.FIELD_PATH, field_path=("metadata", "labels"))
    assert yaml.safe_load(values_file(item, bare)) == {"l": {}}
    assert AppContext.from_json(CONTEXT.to_json()) == CONTEXT


def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str) -> None:
    """`tool` prints its arguments as YAML, and the content of every values file it was given."""
    script = (
        'echo "args:"\n'
        'for a in "$@"; do echo "- \'$a\'"; done\n'
        'echo "files:"\n'
        'for a in "$@"; do case "$a" in --values=*|--data-values-file=*) '
        'echo "- |"; sed "s/^/  /" "${a#*=}";; esac; done\n'
    )
    fake_step_tool(tmp_path, monkeypatch, tool, script)


def run(steps: tuple[TemplateStep, ...], root: Path) -> Obj:
    return yaml.safe_load(asyncio.run(template(steps, root, nothing, "web", "demo", CONTEXT)))


def test_ytt_gets_one_data_values_file_per_item_and_its_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    fake(tmp_path, monkeypatch, "ytt")
    items = (
        DownwardItem("app.name", DownwardKind.FIELD_PATH, field_path=("metadata", "name")),
        DownwardItem("k8s", DownwardKind.KUBERNETES_VERSION),
    )
    step = TemplateStep(
        TemplateTool.YTT,
        values_from=(ValuesSource(downward=items),),
        ignore_unknown_comments=True,
        strict=True,
        file_marks=("x.txt:type=yaml-template", "--output=/tmp/x"),
    )
    ran = run((step,), tmp_path)
    args = ran["args"]
    assert args[:4] == ["--ignore-unknown-comments", "--strict", "-f", str(tmp_path.resolve())]
    assert args[4:6] == ["--file-mark=x.txt:type=yaml-template", "--file-mark=--output=/tmp/x"]
    assert [a.rsplit("/", 1)[-1] for a in args[6:]] == ["downwardapi_0.yaml", "downwardapi_1.yaml"]
    assert [yaml.safe_load(f) for f in ran["files"]] == [{"app": {"name": "web"}}, {"k8s": "1.30.2"}]


def test_helm_gets_values_files_and_the_clusters_version_and_apis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    fake(tmp_path, monkeypatch, "helm")
    item = DownwardItem("ns", DownwardKind.FIELD_PATH, field_path=("metadata", "namespace"))
    step = TemplateStep(
        TemplateTool.HELM, values_from=(ValuesSource(downward=(item,)),), kubernetes_version=True, kubernetes_apis=True
    )
    ran = run((step,), tmp_path)
    assert [a for a in ran["args"] if a.startswith(("--kube-version", "--api-versions"))] == [
        "--kube-version=1.30.2",
        "--api-versions=v1",
        "--api-versions=apps/v1",
        "--api-versions=batch/v1",
    ]
    assert [yaml.safe_load(f) for f in ran["files"]] == [{"ns": "demo"}]


def test_a_field_that_is_not_found_fails_the_step_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    fake(tmp_path, monkeypatch, "ytt")
    item = DownwardItem("x", DownwardKind.FIELD_PATH, field_path=("metadata", "labels", "nope"))
    with pytest.raises(TemplateError, match="^Templating dir: Writing paths: nope is not found$"):
        run((TemplateStep(TemplateTool.YTT, values_from=(ValuesSource(downward=(item,)),)),), tmp_path)


# --- the cluster's facts ----------------------------------------------------------------------------------------------


class Cluster:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def server_version(self) -> Obj:
        self.asked.append("version")
        return {"gitVersion": "v1.31.1+k3s1"}

    async def discovery(self, refresh: bool = False) -> Discovery:
        self.asked.append("discovery")
        types = [
            ResourceType("", "v1", "ConfigMap", "configmaps", True, frozenset({"list"})),
            ResourceType("", "v1", "Secret", "secrets", True, frozenset({"list"})),
            ResourceType("apps", "v1", "Deployment", "deployments", True, frozenset({"list"})),
            ResourceType("batch", "v1", "Job", "jobs", True, frozenset({"list"})),
        ]
        return Discovery(tuple(types))


def test_the_cluster_is_asked_only_for_what_a_step_reads_and_not_at_every_sync():
    now = [0.0]
    facts = ClusterFacts(lambda: now[0])
    cluster = Cluster()
    client = SimpleNamespace(cluster=cluster)

    def context(steps: tuple[TemplateStep, ...]) -> AppContext:
        return asyncio.run(facts.context(APP, steps, client))  # type: ignore[arg-type]

    given = DownwardItem("v", DownwardKind.KUBERNETES_VERSION, version="1.2.3")
    assert context((TemplateStep(TemplateTool.YTT, values_from=(ValuesSource(downward=(given,)),)),)).uid == "1234-abcd"
    assert cluster.asked == []
    helm = TemplateStep(TemplateTool.HELM, kubernetes_version=True, kubernetes_apis=True)
    assert needs((helm,)) == (True, True)
    found = context((helm,))
    assert (found.kubernetes_version, found.kubernetes_apis) == ("1.31.1+k3s1", ("v1", "apps/v1", "batch/v1"))
    context((helm,))
    assert cluster.asked == ["version", "discovery"]
    now[0] = 1000.0
    context((helm,))
    assert cluster.asked == ["version", "discovery"] * 2
