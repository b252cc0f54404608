"""Labeled apps (`-a label:<selector>`): the resources a label selector finds, with no app record or history. inspect
and delete take any selector; deploy takes one `key=value`, which it puts on the resources instead of an app label.

Each tool's selector names its own namespace (`label:compat-ns={ns}`), so that the two runs find only their own
objects although a labeled app spans the cluster."""

from __future__ import annotations

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap

from tests.compat.harness import TOOLS, Harness, Pair

pytestmark = pytest.mark.compat

APP = "label:compat-ns={ns}"
CONFIG = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deployed}\ndata: {k: v}\n"


def labeled_config_map(kube: Client, namespace: str, name: str) -> None:
    kube.create(
        ConfigMap.from_dict(
            {"metadata": {"name": name, "namespace": namespace, "labels": {"compat-ns": namespace}}, "data": {"a": "b"}}
        )
    )


def succeeded(pair: Pair) -> None:
    for result in pair:
        assert result.code == 0, result.output


def test_inspect_shows_what_the_selector_finds(both: Harness, kube: Client):
    for tool in TOOLS:
        labeled_config_map(kube, both.ns[tool], "made-by-hand")
    for flags in (("--tty",), (), ("--json",)):
        pair = both.run("inspect", "-a", APP, *flags)
        if "--json" in flags:
            both.same_json(pair)
        else:
            both.same(pair, exact=False)
        assert pair.kapply.code == 0


def test_deploy_labels_resources_with_the_selectors_label_and_keeps_no_record(both: Harness, kube: Client):
    for tool in TOOLS:
        labeled_config_map(kube, both.ns[tool], "made-by-hand")
    pair = both.run("deploy", "-a", APP, "-n", "{ns}", "-f", "-", "-y", "-c", input=CONFIG)
    both.same(pair)
    succeeded(pair)
    both.same_objects()
    deployed = both.objects("kapply")["ConfigMap/deployed"]
    assert deployed["metadata"]["labels"]["compat-ns"] == "NS"
    labels = [obj["metadata"].get("labels") or {} for obj in both.objects("kapply").values()]
    assert not any("kapp.k14s.io/is-app" in found or "kapp.k14s.io/is-app-change" in found for found in labels)
    again = both.run("deploy", "-a", APP, "-n", "{ns}", "-f", "-", "-y", input=CONFIG.replace("k: v", "k: w"))
    both.same(again, exact=False)
    both.same_objects()


@pytest.mark.parametrize("selector", ["label:compat-ns", "label:a=b,c=d", "label:", "label:x in (a"])
def test_deploy_needs_one_key_value(both: Harness, selector: str):
    pair = both.run("deploy", "-a", selector, "-n", "{ns}", "-f", "-", "-y", input=CONFIG)
    if selector == "label:x in (a":  # the parser's own words differ (kapp's are cut short by its error printer)
        assert pair.kapp.code == pair.kapply.code == 1
        assert pair.kapply.stderr.startswith("kapply: Error: Parsing app name (or label selector): ")
        return
    both.same(pair)
    assert pair.kapply.code == 1


def test_delete_deletes_what_the_selector_finds(both: Harness):
    succeeded(both.run("deploy", "-a", APP, "-n", "{ns}", "-f", "-", "-y", input=CONFIG))
    pair = both.run("delete", "-a", APP, "-y")
    both.same(pair, exact=False)
    succeeded(pair)
    both.same_objects()
    assert both.objects("kapply") == {}
