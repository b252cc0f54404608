"""A custom resource written at an API version that is served but not the storage version: kapp finds an app's
objects by group and kind and compares them with what was applied whatever version they are read at, so a
redeploy that stops serving that version changes only the CRD. No apiVersion "drift", and no write through a
version the server no longer serves."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_global_resource

from tests.compat.harness import TOOLS, Harness

pytestmark = pytest.mark.compat

CRD_TYPE = create_global_resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions")

SCHEMA = """
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}"""


def manifest(old_served: str, cr_version: str = "v1beta1") -> str:
    return f"""---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: foostores.{{ns}}.kapply.dev}}
spec:
  group: "{{ns}}.kapply.dev"
  scope: Namespaced
  names: {{kind: FooStore, plural: foostores, singular: foostore, listKind: FooStoreList}}
  versions:
  - name: v1beta1
    served: {old_served}
    storage: false{SCHEMA}
  - name: v1
    served: true
    storage: true{SCHEMA}
---
apiVersion: "{{ns}}.kapply.dev/{cr_version}"
kind: FooStore
metadata: {{name: test-cr}}
spec: {{size: small}}
"""


@pytest.fixture
def crds(both: Harness, kube: Client) -> Iterator[None]:
    try:
        yield
    finally:
        for tool in TOOLS:
            with contextlib.suppress(ApiError):
                kube.delete(CRD_TYPE, f"foostores.{both.ns[tool]}.kapply.dev")


def test_a_resource_at_a_non_preferred_version_is_unchanged_when_that_version_stops_being_served(
    both: Harness, crds: None
):
    deploy = ("deploy", "-a", "crdv", "-n", "{ns}", "-f", "-")
    # (whether a CRD is seen Established at once varies from run to run)
    for result in both.run_together(*deploy, "-y", input=manifest("true")):
        assert result.code == 0, result.output
    unchanged = both.run_together(*deploy, "--diff-run", "--diff-exit-status", input=manifest("true"))
    both.same(unchanged, exact=False)
    assert unchanged.kapply.code == 2, unchanged.kapply.output
    retired = both.run_together(*deploy, "-y", "-c", input=manifest("false"))
    both.same(retired, exact=False)
    assert retired.kapply.code == 0, retired.kapply.output
    assert "Op:      0 create, 0 delete, 1 update, 0 noop, 0 exists" in retired.kapply.stdout
    both.same(both.run_together("inspect", "-a", "crdv", "-n", "{ns}"), exact=False)
    # The manifest moves to the served version: the one update stamps the object's identity with it. (Its diff is
    # against the live object, which kapply confirms with the server: see test_diff_against_live.py.)
    moved = both.run_together(*deploy, "-y", input=manifest("false", "v1"))
    both.same(moved, exact=False)
    assert "Op:      0 create, 0 delete, 1 update, 0 noop, 0 exists" in moved.kapply.stdout
    again = both.run_together(*deploy, "--diff-run", "--diff-exit-status", input=manifest("false", "v1"))
    both.same(again, exact=False)
    assert again.kapply.code == 2, again.kapply.output
