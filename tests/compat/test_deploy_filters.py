"""What deploy and delete apply, chosen by kapp's flags: the change filter (`--diff-filter`), the resource filters
(`--filter`, `--filter-kind`, ...), `--patch`, and `--diff-changes-yaml` (the YAML each change sends), compared with the
real kapp: output, exit status and the objects each tool leaves."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from lightkube import Client

from tests.compat.harness import Harness, Namespaces, Pair
from tests.e2e.harness import Cluster

pytestmark = pytest.mark.compat

FIRST = """
apiVersion: v1
kind: ConfigMap
metadata: {name: front, labels: {tier: web}}
data: {k: one}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: back, labels: {tier: db}}
data: {k: one}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, labels: {tier: db}}
stringData: {password: hunter2}
"""

# front changes, back goes, creds changes, extra comes, external must exist (it does: kapp-less)
SECOND = """
apiVersion: v1
kind: ConfigMap
metadata: {name: front, labels: {tier: web}, annotations: {kapp.k14s.io/update-strategy: fallback-on-replace}}
data: {k: two}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, labels: {tier: db}}
stringData: {password: hunter3}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: extra, labels: {tier: web}, annotations: {kapp.k14s.io/create-strategy: fallback-on-update}}
data: {k: one}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: external, annotations: {kapp.k14s.io/exists: ""}}
"""

EXTERNAL = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: external}\n"

# SECOND without the delete: the diff of a delete names the field manager (kapp, kapply) of the deleted object
SECOND_KEEPING = (
    SECOND + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: back, labels: {tier: db}}\ndata: {k: one}\n"
)


def deploy_first(both: Harness) -> Harness:
    """The app deployed once by each tool, and an object it did not make (`external`); each deploy by the two tools at
    once (the apps one after the other: objects() numbers the app-changes in the order they were made)."""
    for app, manifest in (("app", FIRST), ("other", EXTERNAL)):
        for result in both.run_together("deploy", "-a", app, "-n", "{ns}", "-f", "-", "-y", input=manifest):
            assert result.code == 0, result.output
    return both


@pytest.fixture
def deployed(both: Harness) -> Harness:
    return deploy_first(both)


@pytest.fixture(scope="module")
def deployed_once(kapp_binary: Path, cluster: Cluster, kube: Client) -> Iterator[Harness]:
    """The deployed app, shared by the module's tests that change nothing (a refused flag, `--diff-run`): each of
    them still checks that both tools left the same objects, so one that applied something fails."""
    namespaces = Namespaces(kube, "deploy-filters-unchanged")
    try:
        yield deploy_first(Harness(kapp_binary, cluster.kubeconfig, namespaces))
    finally:
        namespaces.cleanup()


def deploy(both: Harness, *flags: str, manifest: str = SECOND) -> Pair:
    return both.run_together("deploy", "-a", "app", "-n", "{ns}", "-f", "-", *flags, input=manifest)


def redeploy(both: Harness, *flags: str, manifest: str = SECOND) -> None:
    """Deploy for real: the same output, and the same objects left."""
    both.same(deploy(both, "-y", *flags, manifest=manifest), exact=False)
    both.same_objects()


CHANGE_FILTERS = [
    '{"ops":["update"]}',
    '{"ops":["add","update"]}',  # every listed op must be the change's: nothing matches
    '{"ops":["delete"]}',
    '{"OPS":["exists"]}',  # keys are matched without regard to case, as Go's JSON
    '{"and":[{"ops":["update"]},{"existingResource":{"kinds":["ConfigMap"]}}]}',
    '{"or":[{"ops":["add"]},{"existingResource":{"names":["cr%"]}}]}',
    '{"not":{"existingResource":{}}}',  # changes without an existing resource: create and exists
    '{"newResource":{"labels":["tier=web"]}}',
    '{"newResource":{"labels":["kapp.k14s.io/app"]}}',  # the new side carries kapp's labels
    '{"existingResource":{"kindNames":["ConfigMap/back"]}}',
    "{}",
    "null",
]


@pytest.mark.parametrize("change_filter", CHANGE_FILTERS)
def test_diff_filter_shows_and_applies_only_the_changes_it_keeps(deployed: Harness, change_filter: str):
    both = deployed
    flags = ("--diff-filter", change_filter)
    both.same(deploy(both, *flags, "--diff-run", "--diff-changes-yaml", "--tty"), exact=False)
    redeploy(both, *flags)


BAD_CHANGE_FILTERS = [
    "{",
    '{"a":1}x',
    "[]",
    '{"ops":"update"}',
    '{"ops":[1]}',
    '{"and":{}}',
    '{"and":[5]}',
    '{"not":[]}',
    '{"newResource":"x"}',
    '{"newResource":{"kinds":"x"}}',
    '{"and":[{"newResource":{"kinds":5}}]}',
    '{"not":{"existingResource":{"kinds":["a",3]}}}',
]


@pytest.mark.parametrize("change_filter", BAD_CHANGE_FILTERS)
def test_bad_diff_filters_fail_alike_after_naming_the_cluster(deployed_once: Harness, change_filter: str):
    deployed_once.same(deploy(deployed_once, "--diff-filter", change_filter, "--tty"))
    deployed_once.same_objects()


RESOURCE_FILTERS = [
    ("--filter-kind", "Secret"),
    ("--filter-name", "%t"),
    ("--filter-labels", "tier=web"),
    ("--filter-labels", "tier=db", "--filter-kind", "ConfigMap"),
    ("--filter-kind-name", "ConfigMap/back"),
    ("--filter-kind-ns", "ConfigMap/{ns}"),
    ("--filter-kind-ns-name", "Secret/{ns}/creds"),
    ("--filter-ns", "nowhere"),  # nothing new: the empty-set guard
    ("--filter-ns", "nowhere", "--dangerous-allow-empty-list-of-resources"),
    ("--filter-age", "1h-"),  # new resources have no creation time: none is newer than an hour
    ("--filter", '{"not":{"resource":{"kinds":["Secret"]}}}'),
    ("--filter", '{"or":[{"resource":{"names":["front"]}},{"resource":{"names":["back"]}}]}'),
]


@pytest.mark.parametrize("filters", RESOURCE_FILTERS)
def test_resource_filters_keep_new_and_existing_resources_alike(deployed: Harness, filters: tuple[str, ...]):
    both = deployed
    both.same(deploy(both, "--diff-run", "--tty", *filters), exact=False)
    redeploy(both, *filters)


def test_an_age_filter_keeps_new_resources_but_not_new_objects(deployed_once: Harness):
    """`1h+` keeps what was created over an hour ago: new resources (no creation time) but none of the app's objects,
    so the plan creates objects that exist (and applying it fails: which create fails first varies)."""
    deployed_once.same(deploy(deployed_once, "--diff-run", "--tty", "--filter-age", "1h+"), exact=False)
    deployed_once.same_objects()


@pytest.mark.parametrize("filters", [("--filter-age", "1d"), ("--filter", "{bad"), ("--filter-labels", "a b")])
def test_bad_resource_filters_fail_after_naming_the_cluster(deployed_once: Harness, filters: tuple[str, ...]):
    pair = deploy(deployed_once, "--tty", *filters)
    if filters[0] == "--filter-labels":  # kapp panics when it first matches a bad selector; kapply refuses it
        assert pair.kapp.code != 0 and pair.kapply.code == 1
        assert "Parsing label selector 'a b'" in pair.kapply.stderr
    else:
        deployed_once.same(pair)
    deployed_once.same_objects()


def test_patch_adds_and_updates_but_never_deletes(deployed: Harness):
    both = deployed
    both.same(deploy(both, "-p", "--diff-run", "--tty"), exact=False)
    redeploy(both, "--patch")
    left = both.objects("kapply")
    assert "ConfigMap/back" in left and "ConfigMap/extra" in left


def test_patch_with_nothing_new_needs_no_empty_set_flag(deployed: Harness):
    redeploy(deployed, "-p", "--filter-kind", "Nothing")


def test_changes_yaml_prints_what_each_change_sends(deployed: Harness):
    both = deployed
    both.same(deploy(both, "--diff-run", "--diff-changes-yaml", "--tty"), exact=False)
    both.same(deploy(both, "--diff-run", "--diff-changes-yaml", "--tty=false"), exact=False)
    # masked values are numbered once for the YAML and the diffs; the YAML is masked even without --diff-mask
    for flags in (("-c",), ("-c", "--diff-mask=false")):
        both.same(
            deploy(both, "--diff-run", "--diff-changes-yaml", "--tty", *flags, manifest=SECOND_KEEPING), exact=False
        )
    both.same_json(deploy(both, "--diff-run", "--diff-changes-yaml", "-c", "--json", manifest=SECOND_KEEPING))
    redeploy(both, "--diff-changes-yaml")


def test_changes_yaml_of_a_first_deploy(both: Harness):
    both.same(deploy(both, "-y", "--diff-changes-yaml", manifest=FIRST))
    both.same_objects()


DELETE_FILTERS = [
    ("--filter-kind", "ConfigMap"),
    ("--filter-labels", "tier=db"),
    ("--filter-kind", "Nothing"),
    ("--diff-filter", '{"existingResource":{"kinds":["Secret"]}}'),
    ("--diff-filter", '{"ops":["delete"]}'),  # keeps every change: the app goes
    ("--filter-kind", "ConfigMap", "--diff-changes-yaml"),
]


def _yaml_blocks_sorted(pair: Pair) -> Pair:
    """kapp prints delete's `--diff-changes-yaml` blocks in no fixed order (one run `front` first, the next `back`):
    the blocks, sorted, are what must match."""

    def sort(text: str) -> str:
        lines = text.split("\n")
        if "---" not in lines or "Changes" not in lines:
            return text
        first, last = lines.index("---"), lines.index("Changes")
        region = lines[first:last]
        trailing = len(region) - len("\n".join(region).rstrip("\n").split("\n"))
        blocks: list[list[str]] = []
        for line in region[: len(region) - trailing]:
            if line == "---":
                blocks.append([])
            blocks[-1].append(line)
        stripped = sorted("\n".join(block).rstrip("\n") for block in blocks)
        return "\n".join([*lines[:first], "\n\n".join(stripped), *[""] * trailing, *lines[last:]])

    return Pair(*(replace(r, stdout=sort(r.stdout)) for r in pair))


@pytest.mark.parametrize("filters", DELETE_FILTERS)
def test_delete_with_filters_keeps_the_app_when_it_leaves_resources(deployed: Harness, filters: tuple[str, ...]):
    both = deployed
    both.same(
        _yaml_blocks_sorted(both.run_together("delete", "-a", "app", "-n", "{ns}", "--diff-run", *filters)), exact=False
    )
    both.same(_yaml_blocks_sorted(both.run_together("delete", "-a", "app", "-n", "{ns}", "-y", *filters)), exact=False)
    both.same_objects()
    both.same(both.run("ls", "-n", "{ns}", "--tty"), exact=False)


def test_delete_of_a_missing_app_with_a_bad_filter(both: Harness):
    """kapp says the app does not exist; kapply refuses the filter first (a deliberate difference: it reads the
    filters before it looks for the app)."""
    pair = both.run("delete", "-a", "missing", "-n", "{ns}", "--filter-age", "1d")
    assert pair.kapp.code == 0 and "does not exist" in pair.kapp.stdout
    assert pair.kapply.code == 1 and "Expected age filter" in pair.kapply.stderr


def test_app_group_deploy_filters_each_apps_resources(both: Harness, tmp_path):
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "all.yml").write_text(FIRST.replace("name: ", f"name: {sub}-"))
    both.same(
        both.run(
            "app-group",
            "deploy",
            "-g",
            "grp",
            "-d",
            str(tmp_path),
            "-n",
            "{ns}",
            "--diff-run",
            "--diff-changes-yaml",
            "--filter-kind",
            "ConfigMap",
            "--diff-filter",
            '{"newResource":{"labels":["tier=web"]}}',
        )  # fmt: skip
    )


def test_app_group_delete_applies_the_change_filter_to_each_app(both: Harness):
    for name in ("grp-a", "grp-b"):
        manifest = FIRST.replace("name: ", f"name: {name}-")
        for result in both.run(
            "deploy",
            "-a",
            name,
            "-n",
            "{ns}",
            "-f",
            "-",
            "-y",
            "--labels",
            "kapp.k14s.io/app-group=grp",
            input=manifest,
        ):
            assert result.code == 0, result.output
    filters = ("--diff-filter", '{"existingResource":{"kinds":["Secret"]}}', "--diff-changes-yaml")
    both.same(both.run("app-group", "delete", "-g", "grp", "-n", "{ns}", "-y", *filters), exact=False)
    both.same_objects()


VERSIONED = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, annotations: {kapp.k14s.io/versioned: ""}}
data: {k: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other}
"""


def test_patch_of_a_versioned_resource_adds_the_next_version(both: Harness):
    """A deliberate difference: kapp's --patch forgets the existing versions and tries to create `-ver-1` again (and
    fails, AlreadyExists); kapply's adds `-ver-2` and, never deleting, keeps the rest."""
    for result in deploy(both, "-y", manifest=VERSIONED):
        assert result.code == 0, result.output
    changed = VERSIONED.replace('"1"', '"2"').split("---")[0]
    pair = deploy(both, "-y", "-p", manifest=changed)
    assert pair.kapp.code == 1 and "already exists" in pair.kapp.stderr
    assert pair.kapply.code == 0, pair.kapply.output
    left = both.objects("kapply")
    assert {"ConfigMap/settings-ver-1", "ConfigMap/settings-ver-2", "ConfigMap/other"} <= left.keys()
