"""kapp's strategy annotations, last-applied options, history limits and file inputs, on the real cluster."""

from __future__ import annotations

import json
import re

import pytest
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import ConfigMap

pytestmark = pytest.mark.e2e


def ops(output: str) -> str:
    match = re.search(r"^Op:\s+(.*)$", output, re.M)
    assert match, output
    return match.group(1).strip()


def configmap(name: str, data: dict[str, str], annotations: dict[str, str] | None = None) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "annotations": annotations or {}},
            "data": data,
        }
    )


def job(command: str) -> str:
    return json.dumps(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "migrate", "annotations": {"kapp.k14s.io/update-strategy": "fallback-on-replace"}},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "migrate", "image": "registry.invalid/migrate:1", "command": [command]}
                        ],
                    }
                }
            },
        }
    )


def test_fallback_on_replace_recreates_a_resource_whose_update_is_invalid(kapply, kube: Client, namespace):
    kapply.deploy(namespace, job("up"), app="opts")
    before = kube.get(Job, "migrate", namespace=namespace).metadata.uid
    result = kapply.deploy(namespace, job("down"), app="opts")
    assert ops(result.stdout) == "0 create, 0 delete, 1 update, 0 noop, 0 exists"
    assert re.search(r"migrate\s+Job\s+\S+\s+update\s+fallback on replace", result.stdout), result.stdout
    after = kube.get(Job, "migrate", namespace=namespace)
    assert after.metadata.uid != before
    assert after.spec.template.spec.containers[0].command == ["down"]


def test_always_replace_and_skip_update_strategies(kapply, kube: Client, namespace):
    replace = {"kapp.k14s.io/update-strategy": "always-replace"}
    skip = {"kapp.k14s.io/update-strategy": "skip"}
    kapply.deploy(
        namespace,
        configmap("replaced", {"v": "1"}, replace) + "\n---\n" + configmap("skipped", {"v": "1"}, skip),
        app="opts",
    )
    uid = kube.get(ConfigMap, "replaced", namespace=namespace).metadata.uid
    kapply.deploy(
        namespace,
        configmap("replaced", {"v": "2"}, replace) + "\n---\n" + configmap("skipped", {"v": "2"}, skip),
        app="opts",
    )
    replaced = kube.get(ConfigMap, "replaced", namespace=namespace)
    assert replaced.metadata.uid != uid and replaced.data == {"v": "2"}
    assert kube.get(ConfigMap, "skipped", namespace=namespace).data == {"v": "1"}


def test_orphan_delete_strategy_keeps_the_resource_but_releases_it(kapply, kube: Client, namespace):
    orphan = {"kapp.k14s.io/delete-strategy": "orphan"}
    kapply.deploy(
        namespace, configmap("kept", {"v": "1"}, orphan) + "\n---\n" + configmap("other", {"v": "1"}), app="opts"
    )
    result = kapply.deploy(namespace, configmap("other", {"v": "1"}), app="opts")
    assert re.search(r"kept\s+ConfigMap\s+\S+\s+delete\s+orphan", result.stdout), result.stdout
    labels = kube.get(ConfigMap, "kept", namespace=namespace).metadata.labels
    assert "kapp.k14s.io/app" not in labels and labels["kapp.k14s.io/orphaned"] == ""


def test_disable_original_records_no_last_applied_copy(kapply, kube: Client, namespace):
    kapply.deploy(namespace, configmap("plain", {"v": "1"}, {"kapp.k14s.io/disable-original": ""}), app="opts")
    annotations = kube.get(ConfigMap, "plain", namespace=namespace).metadata.annotations
    assert "kapp.k14s.io/original" not in annotations
    again = kapply.deploy(namespace, configmap("plain", {"v": "1"}, {"kapp.k14s.io/disable-original": ""}), app="opts")
    assert ops(again.stdout) == "0 create, 0 delete, 0 update, 0 noop, 0 exists"


def test_an_original_too_large_for_an_annotation_is_skipped_with_a_warning(kapply, kube: Client, namespace):
    big = configmap("big", {f"k{i}": "x" * 1000 for i in range(300)})
    first = kapply.deploy(namespace, big, app="opts")
    assert "Warning: Not recording the last-applied copy of configmap/big" in first.stderr
    assert "kapp.k14s.io/original" not in (kube.get(ConfigMap, "big", namespace=namespace).metadata.annotations or {})
    again = kapply.deploy(namespace, big, app="opts")
    assert ops(again.stdout) == "0 create, 0 delete, 0 update, 0 noop, 0 exists"


def test_an_outside_change_is_diffed_against_the_live_object_and_reverted(kapply, kube: Client, namespace):
    kapply.deploy(namespace, configmap("drift", {"v": "1"}), app="opts")
    live = kube.get(ConfigMap, "drift", namespace=namespace)
    live.data["v"] = "changed by hand"
    kube.replace(live)
    result = kapply.deploy(namespace, configmap("drift", {"v": "1"}), "-c", app="opts")
    assert ops(result.stdout) == "0 create, 0 delete, 1 update, 0 noop, 0 exists"
    assert re.search(r"^\s*\d+\s+-\s+v: changed by hand$", result.stdout, re.M), result.stdout
    assert kube.get(ConfigMap, "drift", namespace=namespace).data == {"v": "1"}


def test_an_existing_unlabeled_resource_is_adopted(kapply, kube: Client, namespace):
    kube.create(
        from_dict({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "adopted"}, "data": {"v": "1"}}),
        namespace=namespace,
    )
    result = kapply.deploy(namespace, configmap("adopted", {"v": "1"}), app="opts")
    assert ops(result.stdout) == "0 create, 0 delete, 1 update, 0 noop, 0 exists"
    assert "kapp.k14s.io/app" in kube.get(ConfigMap, "adopted", namespace=namespace).metadata.labels


def test_exists_and_noop_annotations(kapply, kube: Client, namespace):
    kube.create(
        from_dict({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "external"}, "data": {"v": "theirs"}}),
        namespace=namespace,
    )
    manifest = (
        configmap("external", {"v": "mine"}, {"kapp.k14s.io/exists": ""})
        + "\n---\n"
        + configmap("never", {"v": "1"}, {"kapp.k14s.io/noop": ""})
    )
    result = kapply.deploy(namespace, manifest, app="opts")
    assert ops(result.stdout) == "0 create, 0 delete, 0 update, 0 noop, 0 exists"
    assert kube.get(ConfigMap, "external", namespace=namespace).data == {"v": "theirs"}
    with pytest.raises(ApiError):
        kube.get(ConfigMap, "never", namespace=namespace)


def test_app_changes_are_kept_to_the_maximum(kapply, kube: Client, namespace):
    for i in range(4):
        kapply.deploy(namespace, configmap("counter", {"v": str(i)}), "--app-changes-max-to-keep", "2", app="opts")
    changes = list(kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/is-app-change": ""}))
    assert len(changes) == 2
    listed = kapply("app-change", "list", "-a", "opts", "-n", namespace)
    assert listed.stdout.count("opts-change-") == 2
    gc = kapply("app-change", "gc", "-a", "opts", "-n", namespace, "--max", "1", "-y", "--tty")
    assert gc.returncode == 0 and "Kept 1, deleted 1 app changes" in gc.stdout, gc.stdout + gc.stderr


def test_a_directory_is_read_recursively_for_yaml_and_json(kapply, kube: Client, namespace, tmp_path):
    (tmp_path / "nested").mkdir()
    (tmp_path / "a.yml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yml\n")
    (tmp_path / "nested" / "b.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n")
    (tmp_path / "nested" / "c.json").write_text(configmap("from-json", {}))
    (tmp_path / "README.md").write_text("not a manifest")
    result = kapply("deploy", "-a", "dir", "-n", namespace, "-f", str(tmp_path), "-y")
    assert result.returncode == 0, result.stderr
    assert ops(result.stdout) == "3 create, 0 delete, 0 update, 0 noop, 0 exists"
    for name in ("from-yml", "from-yaml", "from-json"):
        kube.get(ConfigMap, name, namespace=namespace)


def test_json_output_has_kapps_shape(kapply, namespace):
    result = kapply(
        "deploy", "-a", "js", "-n", namespace, "-f", "-", "-y", "--json", input=configmap("settings", {"v": "1"})
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert set(doc) == {"Tables", "Blocks", "Lines"}
    [table] = doc["Tables"]
    assert table["Header"]["op_strategy"] == "Op st." and table["Header"]["wait_to"] == "Wait to"
    assert table["Rows"] == [
        {
            "namespace": namespace,
            "name": "settings",
            "kind": "ConfigMap",
            "age": "",
            "op": "create",
            "op_strategy": "",
            "wait_to": "reconcile",
            "reconcile_state": "",
            "reconcile_info": "",
        }
    ]


def test_an_exists_resource_that_never_appears_times_out(kapply, namespace):
    result = kapply(
        "deploy",
        "-a",
        "opts",
        "-n",
        namespace,
        "-f",
        "-",
        "-y",
        "--apply-timeout=2s",
        input=configmap("never-made", {}, {"kapp.k14s.io/exists": ""}),
    )
    assert result.returncode == 1
    assert f"exists configmap/never-made (v1) namespace: {namespace}" in result.stdout
    assert "Retryable error: External resource doesn't exists" in result.stdout
    assert result.stderr.endswith(  # kapp's words, laid out as kapp lays them out
        "kapply: Error: Timed out waiting after 2s:\n"
        f"  Last error: exists configmap/never-made (v1) namespace: {namespace}:\n"
        "    External resource doesn't exists\n"
    )
