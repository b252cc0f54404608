"""A plan as kapp prints it: `--diff-changes-yaml` blocks and `--diff-changes` diffs, with one numbering of masked
values."""

from __future__ import annotations

from kapply.apply.planning import cluster_changes
from kapply.apply.view import change_set_text
from kapply.config.default import default_config
from kapply.diff.change import calculate
from kapply.diff.render import DiffFormat

CONFIG = default_config()


def live(obj: dict, **meta: object) -> dict:
    return {
        **obj,
        "metadata": {
            **obj["metadata"],
            "uid": "u-1",
            "resourceVersion": "7",
            "creationTimestamp": "2020-01-01T00:00:00Z",
            "managedFields": [{"manager": "kapp", "operation": "Update"}],
            "annotations": {"kapp.k14s.io/identity": "v1;ns//ConfigMap/x;v1"},
            **meta,
        },
    }


def configmap(name: str, value: str, **annotations: str) -> dict:
    meta: dict = {"name": name, "namespace": "ns"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": value}}


def secret(name: str, value: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "ns"}, "data": {"p": value}}


def text(*changes, **kwargs):  # type: ignore[no-untyped-def]
    return change_set_text(cluster_changes(list(changes), CONFIG), CONFIG, **kwargs)


def test_a_create_prints_what_is_sent_with_its_strategy():
    new = configmap("x", "1", **{"kapp.k14s.io/create-strategy": "fallback-on-update"})
    blocks = text(calculate(new, None, CONFIG), yaml=True, diffs=False)
    assert blocks.hunks == ()
    assert blocks.yaml == (
        "---\n# create: configmap/x (v1) namespace: ns (strategy: fallback-on-update)\n"
        'apiVersion: v1\ndata:\n  k: "1"\nkind: ConfigMap\nmetadata:\n  annotations:\n'
        "    kapp.k14s.io/create-strategy: fallback-on-update\n  name: x\n  namespace: ns\n\n",
    )


def test_an_update_prints_the_object_rebased_onto_the_live_one_without_managed_fields():
    change = calculate(configmap("x", "2"), live(configmap("x", "1")), CONFIG)
    (block,) = text(change, yaml=True, diffs=False).yaml
    assert block.startswith("---\n# update: configmap/x (v1) namespace: ns\n")
    assert 'resourceVersion: "7"' in block and "uid: u-1" in block and "creationTimestamp:" in block
    assert "managedFields" not in block and "kapp.k14s.io/identity" not in block
    assert block.endswith("\n\n")


def test_deletes_and_exists_print_their_header_only_and_noops_nothing():
    gone = calculate(None, live(configmap("gone", "1")), CONFIG)
    external = calculate(configmap("ext", "1", **{"kapp.k14s.io/exists": ""}), None, CONFIG)
    assert text(gone, external, yaml=True, diffs=False).yaml == (
        "---\n# delete: configmap/gone (v1) namespace: ns\n\n",
        "---\n# exists: configmap/ext (v1) namespace: ns\n\n",
    )
    same = calculate(configmap("x", "1"), live(configmap("x", "1")), CONFIG)
    assert text(same, yaml=True).yaml == ()


def test_the_update_strategy_flag_names_the_strategy():
    change = calculate(configmap("x", "2"), live(configmap("x", "1")), CONFIG)
    planned = cluster_changes([change], CONFIG)
    (block,) = change_set_text(planned, CONFIG, yaml=True, default_update_strategy="fallback-on-replace").yaml
    assert block.startswith("---\n# update: configmap/x (v1) namespace: ns (strategy: fallback-on-replace)\n")
    (block,) = change_set_text(planned, CONFIG, yaml=True, known_strategies=False).yaml
    assert "(strategy: unknown)" in block.split("\n")[1]


def test_masked_values_are_numbered_once_across_yaml_and_diffs():
    change = calculate(secret("s", "bmV3"), live(secret("s", "b2xk")), CONFIG)
    both = text(change, yaml=True, diffs=True)
    (block,) = both.yaml
    assert "p: <-- value not shown (#1)" in block
    (hunk,) = both.hunks
    assert "-   p: <-- value not shown (#2)" in hunk.body and "+   p: <-- value not shown (#1)" in hunk.body


def test_the_yaml_is_masked_even_when_the_diffs_are_not():
    change = calculate(secret("s", "bmV3"), live(secret("s", "b2xk")), CONFIG)
    unmasked = text(change, fmt=DiffFormat(mask=False), yaml=True, diffs=True)
    assert "<-- value not shown (#1)" in unmasked.yaml[0]
    assert "bmV3" in unmasked.hunks[0].body and "bmV3" not in unmasked.yaml[0]


def test_an_ignored_change_has_a_noop_header_and_no_lines():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "namespace": "ns", "uid": "u"}}
    change = calculate(None, pod, CONFIG, transient=True)
    planned = cluster_changes([change], CONFIG, wait_ignored=True)
    (hunk,) = change_set_text(planned, CONFIG, yaml=True).hunks
    assert (hunk.header, hunk.body) == ("@@ noop pod/web-1 (v1) namespace: ns @@\n", "\n")
    assert change_set_text(planned, CONFIG, yaml=True).yaml == ()
    applied = cluster_changes([change], CONFIG, apply_ignored=True)
    (hunk,) = change_set_text(applied, CONFIG).hunks
    assert hunk.header == "@@ delete pod/web-1 (v1) namespace: ns @@\n" and hunk.body == "\n"
