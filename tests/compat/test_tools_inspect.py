"""`tools inspect` (resources in files, no cluster) and `tools list-labels` (labels of everything on the cluster),
compared with the real kapp."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap

from tests.compat.harness import Harness, Result

pytestmark = pytest.mark.compat

WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {tier: front}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: main, image: nginx}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: prod}
spec: {ports: [{port: 80}]}
"""
CONFIG = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: prod, labels: {tier: back}}
data: {a: b}
---
apiVersion: v1
kind: ConfigMapList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: from-list, creationTimestamp: "CREATED"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules: []
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A directory of manifests: two files, one nested, one empty, one that is not a manifest."""
    (tmp_path / "web.yml").write_text(WEB)
    (tmp_path / "nested").mkdir()
    created = (datetime.now(UTC) - timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%SZ")  # shows an age
    (tmp_path / "nested" / "config.yaml").write_text(CONFIG.replace("CREATED", created))
    (tmp_path / "nested" / "empty.yaml").write_text("")
    (tmp_path / "README.md").write_text("not a manifest")
    return tmp_path


@pytest.mark.parametrize("mode", [(), ("--tty",), ("--json",), ("--raw",), ("--raw", "--tty")])
def test_inspecting_a_directory_shows_a_table_per_file(both: Harness, files: Path, mode: tuple[str, ...]):
    pair = both.run("tools", "inspect", "-f", str(files), *mode)
    if "--json" in mode:
        both.same_json(pair)
    else:
        both.same(pair)


def test_inspecting_files_and_stdin(both: Harness, files: Path):
    stdin = (files / "nested" / "config.yaml").read_text()
    both.same(both.run("tools", "i", "-f", str(files / "web.yml"), "-f", "-", "--tty", input=stdin))
    both.same(both.run("tools", "inspect", "--tty"))  # no file: nothing to show


def test_without_sorting_resources_keep_their_file_order(both: Harness, files: Path):
    both.same(both.run("tools", "inspect", "-f", str(files), "--sort=false"))


@pytest.mark.xfail(strict=True, reason="kapply's tables mark a repeated first cell `^` even where kapp fills it")
def test_without_sorting_the_first_column_is_filled(both: Harness, files: Path):
    both.same(both.run("tools", "inspect", "-f", str(files), "--sort=false", "--tty"))


@pytest.mark.parametrize(
    "filters",
    [
        ("--filter-kind", "ConfigMap"),
        ("--filter-kind", "Config%,Deployment"),
        ("--filter-name", "%e%", "--filter-ns", "prod"),
        ("--filter-ns", "pr*"),
        ("--filter-kind-ns", "ClusterRole/"),
        ("--filter-kind-name", "Service/web"),
        ("--filter-kind-ns-name", "ConfigMap/prod/settings"),
        ("--filter-labels", "tier in (front)", "--filter-labels", "missing"),
        ("--filter-labels", "tier notin (front)", "--filter-labels", "tier!=back"),
        ("--filter-labels", "!tier"),
        ("--filter-age", "1h+"),  # resources read from files have no age: they count as old
        ("--filter-age", "1h-"),
        ("--filter", '{"or":[{"resource":{"kinds":["Service"]}},{"not":{"resource":{"namespaces":["prod"]}}}]}'),
        ("--filter", '{"and":[{"resource":{"Kinds":["ConfigMap"]}}]}', "--filter-kind", "Service"),
        ("--filter", "{}"),
        ("--filter", '{"resource":{"createdAtBeforeTime":"2021-01-01T00:00:00Z"}}'),
    ],
)
def test_resource_filters_choose_the_same_resources(both: Harness, files: Path, filters: tuple[str, ...]):
    both.same(both.run("tools", "inspect", "-f", str(files), "--tty", *filters))


@pytest.mark.parametrize(
    "filters",
    [
        ("--filter-age", "5m"),
        ("--filter-age", "-"),
        ("--filter", "{bad"),
        ("--filter", '{"and":{}}'),
        ("--filter", '{"and":[{"resource":{"kinds":[1]}}]}'),
        ("--filter", "[]"),
    ],
)
def test_bad_filters_are_refused_alike(both: Harness, files: Path, filters: tuple[str, ...]):
    both.same(both.run("tools", "inspect", "-f", str(files), "--tty", *filters))


def test_a_missing_file_fails(both: Harness):
    pair = both.run("tools", "inspect", "-f", "/nonexistent/x.yml")
    assert pair.kapp.code == pair.kapply.code == 1
    assert "no such file or directory" in pair.kapp.stderr and "no such file or directory" in pair.kapply.stderr


# ---------------------------------------------------------------------------------------------------- list-labels


@pytest.fixture
def labeled(both: Harness, kube: Client) -> None:
    """ConfigMaps in each tool's namespace with labels and annotations whose keys name the namespace, so that each
    tool's rows can be told from those of the rest of the cluster."""
    for namespace in both.ns.values():
        for name, labels, notes in (
            ("a", {f"{namespace}.example.com/tier": "web", f"{namespace}.example.com/team": "x"}, {}),
            ("b", {f"{namespace}.example.com/tier": "db"}, {f"{namespace}.example.com/note": "hi"}),
            ("c", {f"{namespace}.example.com/tier": "web"}, {f"{namespace}.example.com/note": "hi"}),
        ):
            meta = {"name": name, "namespace": namespace, "labels": labels, "annotations": notes}
            kube.create(ConfigMap.from_dict({"metadata": meta}))


def own_rows(both: Harness, result: Result) -> list[str]:
    """The rows about this tool's namespace, normalised."""
    namespace = both.ns[result.tool]
    return [both.normalize(line, result.tool) for line in result.stdout.splitlines() if namespace in line]


@pytest.mark.usefixtures("labeled")
@pytest.mark.parametrize(
    "flags",
    [(), ("--values",), ("--accessor", "annotations", "--values"), ("--accessor", "ownerrefs", "--values")],
)
def test_list_labels_counts_alike(both: Harness, flags: tuple[str, ...]):
    pair = both.run("tools", "list-labels", *flags)
    assert (pair.kapp.code, pair.kapp.stderr) == (pair.kapply.code, pair.kapply.stderr) == (0, "")
    assert own_rows(both, pair.kapp) == own_rows(both, pair.kapply)
    if flags != ("--accessor", "ownerrefs", "--values"):
        assert own_rows(both, pair.kapply)


def test_list_labels_table_and_json_have_kapps_shape(both: Harness):
    pair = both.run("tools", "ls-labels", "--tty", "-f", "ignored.yml")
    heads = [[both.normalize(line, r.tool) for line in r.stdout.splitlines()[:5]] for r in pair]
    assert heads[0][:4] == heads[1][:4]
    assert heads[0][1:4] == ["", "Labels", ""]
    assert heads[0][4].split() == heads[1][4].split() == ["Name", "Resources"]
    documents = [json.loads(r.stdout) for r in both.run("tools", "ls-labels", "--values", "--json")]
    shapes = [(d["Tables"][0]["Header"], d["Tables"][0]["Content"], d["Tables"][0]["Notes"]) for d in documents]
    assert shapes[0] == shapes[1]


def test_list_labels_knows_only_kapps_accessors(both: Harness):
    both.same(both.run("tools", "ls-labels", "--accessor", "names", "--tty"))
