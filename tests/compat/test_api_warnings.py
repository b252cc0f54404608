"""The API server's warnings (here a deprecated custom resource version) shown as kapp shows them: `Warning: <text>`
among the progress lines, once however often the server says it, for the writes of a deploy or delete (not for its
reads); in `--json` as one of the lines; none with `--warnings=false`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from lightkube import Client

from tests.compat.harness import ANY_FIELDS, Harness, established_crd, namespaced_crd

pytestmark = pytest.mark.compat


@pytest.fixture
def deprecated_group(kube: Client) -> Iterator[str]:
    """A CRD (of a group of this test's own) whose `v1alpha1` is deprecated, `v1` the stored version."""
    group = f"w{uuid.uuid4().hex[:6]}.compat.kapply.dev"
    warning = f"{group}/v1alpha1 CronTab is deprecated; use {group}/v1 CronTab"
    v1alpha1 = {
        "name": "v1alpha1",
        "served": True,
        "storage": False,
        "deprecated": True,
        "deprecationWarning": warning,
        "schema": ANY_FIELDS,
    }
    with established_crd(kube, namespaced_crd(group, "CronTab", v1alpha1)):
        yield group


def crontabs(group: str, *names: str, spec: int = 1) -> str:
    return "".join(
        f"---\napiVersion: {group}/v1alpha1\nkind: CronTab\nmetadata: {{name: {name}}}\nspec: {{x: {spec}}}\n"
        for name in names
    )


def test_a_deprecated_version_is_warned_about_once(both: Harness, deprecated_group: str):
    group = deprecated_group
    deploy = ("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y")
    pair = both.run(*deploy, input=crontabs(group, "cr-1", "cr-2"))
    both.same(pair)
    assert pair.kapply.stdout.count(f"Warning: {group}/v1alpha1 CronTab is deprecated") == 1
    both.same(both.run(*deploy, input=crontabs(group, "cr-1", "cr-2")), exact=False)  # nothing written: no warning
    both.same(both.run(*deploy, "--warnings=false", input=crontabs(group, "cr-1", "cr-2", spec=2)), exact=False)
    pair = both.run(*deploy, "--json", input=crontabs(group, "cr-1", spec=3))
    both.same_json(pair)
    assert any("Warning: " in line for line in json.loads(pair.kapply.stdout)["Lines"])
    both.same(both.run("delete", "-a", "app", "-n", "{ns}", "-y"), exact=False)
