"""A diff against the live object (the last-applied copy no longer matches: someone else changed the object). kapp
shows the live object against the new one, so every field the server defaulted shows as removed although the update
leaves it as it is. kapply confirms such an update with a server-side dry run and shows what it really changes
(docs/compatibility.md, Known differences); `--diff-server-side=false` shows kapp's diff, line for line. Either way
the end state is kapp's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_global_resource
from lightkube.types import PatchType

from tests.compat.harness import TOOLS, Harness, Pair

pytestmark = pytest.mark.compat

CRD_TYPE = create_global_resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions")

CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: tests.{ns}.kapply.dev}
spec:
  group: "{ns}.kapply.dev"
  names: {kind: Test, plural: tests}
  scope: Namespaced
  versions:
  - {name: v1alpha1, schema: {openAPIV3Schema: {type: object}}, served: true, storage: true}
status: {acceptedNames: {kind: "", plural: ""}, conditions: [], storedVersions: []}
"""

DEFAULTED = ("conversion:", "strategy: None", "listKind: TestList", "singular: test")


@pytest.fixture
def crds(both: Harness, kube: Client) -> Iterator[None]:
    try:
        yield
    finally:
        for tool in TOOLS:
            with contextlib.suppress(ApiError):
                kube.delete(CRD_TYPE, f"tests.{both.ns[tool]}.kapply.dev")


def annotated(both: Harness, kube: Client) -> None:
    """Each tool's CRD, annotated by another actor (as `kubectl annotate` does)."""
    for tool in TOOLS:
        patch = {"metadata": {"annotations": {"test": "test-ann-val"}}}
        kube.patch(CRD_TYPE, f"tests.{both.ns[tool]}.kapply.dev", patch, patch_type=PatchType.MERGE)


def deploy(both: Harness, *kapply_args: str) -> Pair:
    args = ("deploy", "-a", "st", "-n", "{ns}", "-f", "-", "-c", "-y", "--diff-field-owners=false")
    return Pair(
        both.run_one("kapp", args[:-1], input=CRD),
        both.run_one("kapply", (*args, *kapply_args), input=CRD),
    )


@pytest.mark.parametrize("server_side", [True, False], ids=["server-side", "kapps-diff"])
def test_a_diff_against_the_live_object(both: Harness, kube: Client, crds: None, server_side: bool):
    for result in both.run("deploy", "-a", "st", "-n", "{ns}", "-f", "-", "-y", input=CRD):
        assert result.code == 0, result.output
    annotated(both, kube)
    pair = deploy(both, f"--diff-server-side={str(server_side).lower()}")
    for result in pair:
        assert result.code == 0, result.output
        assert "test: test-ann-val" in result.stdout
        assert "Op:      0 create, 0 delete, 1 update, 0 noop, 0 exists" in result.stdout
    assert all(line in pair.kapp.stdout for line in DEFAULTED)
    if server_side:  # only what the update changes
        assert not any(line in pair.kapply.stdout for line in DEFAULTED)
    else:
        both.same(pair, exact=False)
    for tool in TOOLS:  # the same end state: the annotation removed, the defaults still there
        crd = kube.get(CRD_TYPE, f"tests.{both.ns[tool]}.kapply.dev")
        assert "test" not in (crd.metadata.annotations or {})
        assert crd["spec"]["conversion"] == {"strategy": "None"}
