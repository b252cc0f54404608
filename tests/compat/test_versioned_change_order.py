"""The order of a deploy's changes (issue 30, kapp difference 1): kapp lists the new versions of versioned resources
first (manifest order), then the deletes of their old versions, then every other change (new resources in manifest
order, then deletes); `--diff-changes` and `--diff-changes-yaml` show them so, and masked Secret values are numbered
in that order. kapply listed every change in manifest order, then every delete."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.compat.harness import Harness, Pair

pytestmark = pytest.mark.compat


def manifest(value: str, *, keep_versioned_map: bool = True, keep_plain_b: bool = True) -> str:
    docs = [
        f'apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: plain-a}}\ndata: {{k: "{value}"}}\n',
        f'apiVersion: v1\nkind: Secret\nmetadata: {{name: plain-secret}}\nstringData: {{password: "{value}"}}\n',
    ]
    if keep_versioned_map:
        docs.append(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ver-map\n"
            '  annotations: {kapp.k14s.io/versioned: "", kapp.k14s.io/versioned-keep-original: ""}\n'
            f'data: {{k: "{value}"}}\n'
        )
    if keep_plain_b:
        docs.append(f'apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: plain-b}}\ndata: {{k: "{value}"}}\n')
    docs.append(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ver-secret\n  annotations: {kapp.k14s.io/versioned: ''}\n"
        f'stringData: {{password: "{value}"}}\n'
    )
    return "---\n".join(docs)


def deploy(both: Harness, text: str, *flags: str):  # noqa: ANN201
    return both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "--diff-changes", "-c", *flags, input=text)


def manager_kapp(pair: Pair) -> Pair:
    """A delete's diff shows the whole object, managedFields and their manager (each tool's own name) included."""
    return Pair(pair.kapp, replace(pair.kapply, stdout=pair.kapply.stdout.replace("manager: kapply", "manager: kapp")))


def last_deletes_sorted(pair: Pair) -> Pair:
    """kapp makes the deletes of the other existing resources (the last run of delete hunks) walking a Go map, so
    their order varies from run to run (diff.kapp_order): both outputs get that run sorted by header."""
    return Pair(*(replace(result, stdout=_sort_last_deletes(result.stdout)) for result in pair))


def _sort_last_deletes(text: str) -> str:
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("@@ ")]
    first = len(starts)
    while first > 0 and lines[starts[first - 1]].startswith("@@ delete "):
        first -= 1
    if first == len(starts):
        return text
    end = next(i for i in range(starts[-1], len(lines) + 1) if i == len(lines) or not lines[i].strip())
    bounds = [*starts[first:], end]
    hunks = sorted(lines[a:b] for a, b in zip(bounds, bounds[1:], strict=False))
    return "\n".join([*lines[: starts[first]], *(line for hunk in hunks for line in hunk), *lines[end:]])


def headers(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("@@ ")]


def test_versioned_resources_changes_are_listed_first_as_kapp_lists_them(both: Harness):
    first = deploy(both, manifest("1"), "--diff-changes-yaml", "-y")
    both.same(first, exact=False)
    assert first.kapply.code == 0, first.kapply.output
    assert headers(first.kapply.stdout)[:2] == [
        "@@ create configmap/ver-map-ver-1 (v1) namespace: {ns} @@".replace("{ns}", both.ns["kapply"]),
        "@@ create secret/ver-secret-ver-1 (v1) namespace: {ns} @@".replace("{ns}", both.ns["kapply"]),
    ]
    changed = deploy(both, manifest("2"), "-y")
    both.same(changed, exact=False)
    assert changed.kapply.code == 0, changed.kapply.output
    # the versioned ConfigMap and a plain one removed: every version of the first deleted, before the other changes
    removed = deploy(both, manifest("3", keep_versioned_map=False, keep_plain_b=False), "-y")
    both.same(last_deletes_sorted(manager_kapp(removed)), exact=False)
    assert removed.kapply.code == 0, removed.kapply.output
    shown = [h.split(" (v1)")[0] for h in headers(removed.kapply.stdout)]
    assert shown == [
        "@@ create secret/ver-secret-ver-3",
        "@@ delete configmap/ver-map-ver-1",
        "@@ delete configmap/ver-map-ver-2",
        "@@ update configmap/plain-a",
        "@@ update secret/plain-secret",
        "@@ delete configmap/plain-b",
        "@@ delete configmap/ver-map",
    ]
    both.same_objects()
