"""Errors laid out as kapp lays them out: the message broken at each `: <Capital>` into deeper-indented lines (kapp's
MultiLineError), and the API server's list of validation errors as `- item` lines (SemiStructuredError), on real
errors of the real kapp: an invalid object, one with several invalid fields, a wait that fails, a wait that times out
on several resources, an `exists` resource that never appears, and `--diff-exit-status`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lightkube import Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.types import PatchType

from tests.compat.harness import Harness, established_crd, namespaced_crd

pytestmark = pytest.mark.compat

GROUP = "layout.compat.kapply.dev"


@pytest.fixture(scope="module")
def gadgets(kube: Client) -> Iterator[None]:
    """A kind whose status is written with the object (no status subresource), so that a manifest sets it."""
    with established_crd(kube, namespaced_crd(GROUP, "Gadget")):
        yield


# Gadgets fail or succeed by their status conditions, which an update keeps
WAIT_RULES = f"""
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
waitRules:
- resourceMatchers:
  - apiVersionKindMatcher: {{apiVersion: {GROUP}/v1, kind: Gadget}}
  conditionMatchers:
  - {{type: Broken, status: "True", failure: true}}
  - {{type: Ready, status: "True", success: true}}
rebaseRules:
- path: [status]
  type: copy
  sources: [existing]
  resourceMatchers:
  - apiVersionKindMatcher: {{apiVersion: {GROUP}/v1, kind: Gadget}}
"""
Gadget = create_namespaced_resource(GROUP, "v1", "Gadget", "gadgets")


def gadgets_with(both: Harness, kube: Client, conditions: dict[str, str]) -> str:
    """The gadgets deployed (not waited on), then given their condition (`name: type`, "" for none); the manifest
    that updates them."""
    first = WAIT_RULES + "".join(gadget(name, 1) for name in conditions)
    for result in both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", "--wait=false", input=first):
        assert result.code == 0, result.output
    for namespace in both.ns.values():
        for name, condition in conditions.items():
            if condition:
                status = {
                    "conditions": [{"type": condition, "status": "True", "reason": "Test", "message": "Made: So"}]
                }
                kube.patch(Gadget, name, {"status": status}, namespace=namespace, patch_type=PatchType.MERGE)
    return WAIT_RULES + "".join(gadget(name, 2) for name in conditions)


def gadget(name: str, version: int) -> str:
    return f"---\napiVersion: {GROUP}/v1\nkind: Gadget\nmetadata: {{name: {name}}}\nspec: {{version: {version}}}\n"


def deploy(both: Harness, manifest: str, *flags: str) -> None:
    pair = both.run_together("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", *flags, input=manifest)
    both.same(pair, stdout=False)
    assert pair.kapply.code != 0 and "\n  " in pair.kapply.stderr, pair.kapply.stderr


def test_an_invalid_object(both: Harness):
    deploy(both, "apiVersion: v1\nkind: Service\nmetadata: {name: no-ports}\n")


def test_an_object_with_several_invalid_fields(both: Harness):
    deploy(both, "apiVersion: v1\nkind: Service\nmetadata: {name: bad}\nspec: {type: Bogus, ports: [{port: 0}]}\n")


@pytest.mark.usefixtures("gadgets")
def test_a_wait_that_fails(both: Harness, kube: Client):
    deploy(both, gadgets_with(both, kube, {"broken": "Broken"}))


@pytest.mark.usefixtures("gadgets")
def test_a_wait_that_times_out_on_several_resources(both: Harness, kube: Client):
    deploy(both, gadgets_with(both, kube, {"slow-1": "", "slow-2": ""}), "--wait-timeout=2s")


def test_an_exists_resource_that_never_appears(both: Harness):
    manifest = "apiVersion: v1\nkind: Namespace\nmetadata: {name: {ns}-never, annotations: {kapp.k14s.io/exists: ''}}\n"
    deploy(both, manifest, "--apply-timeout=2s")


CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {k: v}\n"


def test_an_exit_status(both: Harness):
    pair = both.run(
        "deploy", "-a", "app", "-n", "{ns}", "-f", "-", "--diff-run", "--diff-exit-status", input=CONFIG_MAP
    )
    both.same(pair, exact=False)
