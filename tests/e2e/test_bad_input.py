"""Every bad input gets one clear message naming the file and document (or resource), exit 1, no traceback,
and nothing applied to the cluster."""

from __future__ import annotations

import re

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap

pytestmark = pytest.mark.e2e

GOOD = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata:\n  k: v\n---\n"

CASES = {
    "malformed-yaml": (
        GOOD + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n data: x\n",
        ["Parsing file '", "line 12, column 2"],
    ),
    "not-an-object": (GOOD + "- a\n- b\n", ["Parsing file '", "doc 2: expected a resource (a YAML mapping)"]),
    "missing-api-version": (
        GOOD + "kind: ConfigMap\nmetadata:\n  name: a\n",
        ["Expected 'apiVersion' on resource 'configmap/a", "doc 2)"],
    ),
    "missing-kind": (GOOD + "apiVersion: v1\nmetadata:\n  name: a\n", ["Expected 'kind' on resource", "doc 2)"]),
    "missing-name": (
        GOOD + "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
        ["Expected 'metadata.name' on resource 'configmap/*", "doc 2)"],
    ),
    "duplicate": (
        GOOD + GOOD.replace("k: v", "k: other"),
        ["Uniqueness errors:", "Found resource 'configmap/good (v1)", "multiple times with different content"],
    ),
    "unknown-kind": (
        GOOD + "apiVersion: example.test/v1\nkind: Widget\nmetadata:\n  name: a\n",
        ["Expected to find kind 'example.test/v1/Widget', but did not", "doc 2)"],
    ),
    "bad-config": (GOOD + "apiVersion: kapp.k14s.io/v1alpha1\nkind: Config\nrebaseRulez: []\n", ["rebaseRulez"]),
}


def app_records(kube: Client, namespace: str) -> list:
    return list(kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/is-app": ""}))


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_manifest_is_refused_with_a_clear_message_and_nothing_applied(case, kapply, kube, namespace, tmp_path):
    manifest, expected = CASES[case]
    path = tmp_path / f"{case}.yml"
    path.write_text(manifest)
    result = kapply("deploy", "-a", "bad", "-n", namespace, "-f", str(path), "-y")
    assert result.returncode == 1, result.stdout
    assert result.stderr.startswith("kapply: Error: "), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in expected:
        assert fragment in result.stderr, result.stderr
    assert app_records(kube, namespace) == []
    assert [cm.metadata.name for cm in kube.list(ConfigMap, namespace=namespace)] == ["kube-root-ca.crt"]


def test_invalid_app_name_is_refused(kapply, kube, namespace):
    result = kapply("deploy", "-a", "Bad_Name", "-n", namespace, "-f", "-", "-y", input=GOOD)
    assert result.returncode == 1
    assert "App name 'Bad_Name' is not valid" in result.stderr
    assert app_records(kube, namespace) == []


def test_missing_file_is_named(kapply, namespace, tmp_path):
    result = kapply("deploy", "-a", "bad", "-n", namespace, "-f", str(tmp_path / "nope.yml"), "-y")
    assert result.returncode == 1
    assert f"'{tmp_path / 'nope.yml'}': no such file or directory" in result.stderr


def test_without_any_namespace_resources_default_to_the_default_namespace(kapply, cluster, kube, tmp_path):
    """As with kubectl and kapp (client-go): a context without a namespace means `default`."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for context in config["contexts"]:
        context["context"].pop("namespace", None)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    result = kapply(
        "deploy",
        "-a",
        "bad",
        "-f",
        "-",
        "--diff-run",
        input=GOOD,
        env={"KUBECONFIG": str(kubeconfig), "KAPP_NAMESPACE": ""},
    )
    assert result.returncode == 0, result.stderr
    assert re.search(r"^default\s+good\s+ConfigMap\s+-\s+create", result.stdout, re.M), result.stdout
    assert app_records(kube, "default") == []


def test_namespace_comes_from_kapp_namespace_then_kubeconfig(kapply, kube, namespace):
    result = kapply("deploy", "-a", "from-env", "-f", "-", "-y", input=GOOD, env={"KAPP_NAMESPACE": namespace})
    assert result.returncode == 0, result.stderr
    assert kube.get(ConfigMap, "good", namespace=namespace).data == {"k": "v"}


def test_cluster_scoped_resource_given_a_namespace_is_created_cluster_wide(kapply, kube, namespace):
    manifest = f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}-cs\n  namespace: {namespace}\n"
    result = kapply("deploy", "-a", "cs", "-n", namespace, "-f", "-", "-y", input=manifest)
    assert result.returncode == 0, result.stderr
    assert f"create namespace/{namespace}-cs (v1) cluster" in result.stdout
    assert kapply("delete", "-a", "cs", "-n", namespace, "-y").returncode == 0
