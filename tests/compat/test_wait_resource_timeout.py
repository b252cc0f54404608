"""`--wait-resource-timeout` as kapp keeps it (issue 30): kapp checks a change's deadline before whether the resource
is done, so a resource first found done on a poll after its deadline fails the wait (`Errored: Resource timed out
waiting after 1s`, exit 1); kapply took it as done.

Each tool's resource is made done by the test once its 1 s deadline has passed: PAST_DEADLINE after the tool printed
its first poll (`ongoing: reconcile ...`, after the change was applied). kapp finds it done on its next poll (a check
interval of 2 s), kapply when its watch sees the change (kapply.apply.observe.Wakes): both after the deadline."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from lightkube import Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.types import PatchType

from tests.compat.harness import TOOLS, Harness, Pair, Result, established_crd, namespaced_crd

pytestmark = pytest.mark.compat

GROUP = "waittimeout.compat.kapply.dev"
Gadget = create_namespaced_resource(GROUP, "v1", "Gadget", "gadgets")

MANIFEST = f"""
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
waitRules:
- conditionMatchers:
  - {{type: Ready, status: "True", success: true}}
  resourceMatchers:
  - apiVersionKindMatcher: {{apiVersion: {GROUP}/v1, kind: Gadget}}
---
apiVersion: {GROUP}/v1
kind: Gadget
metadata:
  name: g
spec: {{}}
"""

PAST_DEADLINE = 1.3  # seconds: the deadline (1 s from the apply, which came before the first poll) and a margin
READY = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Test", "message": "made so"}]}}


@pytest.fixture(scope="module")
def gadgets(kube: Client) -> Iterator[None]:
    with established_crd(kube, namespaced_crd(GROUP, "Gadget")):
        yield


def deploy_made_ready_past_its_deadline(both: Harness, kube: Client, tool: str, args: list[str]) -> Result:
    """The deploy run by `tool`, its Gadget made Ready once its deadline passed (PAST_DEADLINE after the tool printed
    that it is still waiting on it: a wait for the clock, which is what the test is about)."""
    env = {**os.environ, "KUBECONFIG": str(both.kubeconfig), "PYTHONUNBUFFERED": "1"}
    env.pop("KAPP_NAMESPACE", None)
    process = subprocess.Popen(
        [*both.command(tool), *(both.fill(a, tool) for a in args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    process.stdin.write(both.fill(MANIFEST, tool))
    process.stdin.close()
    lines = []
    for line in process.stdout:
        lines.append(line)
        if "ongoing: reconcile gadget/g" in line:
            time.sleep(PAST_DEADLINE)
            kube.patch(Gadget, "g", READY, namespace=both.ns[tool], patch_type=PatchType.MERGE)
    stderr = process.stderr.read()
    return Result(tool, process.wait(timeout=60), "".join(lines), stderr)


@pytest.mark.usefixtures("gadgets")
def test_a_resource_found_done_only_after_its_deadline_fails_the_wait(both: Harness, kube: Client):
    args = ["deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", "--wait-resource-timeout=1s"]
    with ThreadPoolExecutor(len(TOOLS)) as pool:  # the two tools at once, each on its own gadget
        pair = Pair(
            *pool.map(
                lambda tool: deploy_made_ready_past_its_deadline(both, kube, tool, [*args, "--wait-check-interval=2s"]),
                TOOLS,
            )
        )
    both.same(pair, exact=False)
    assert pair.kapply.code == 1, pair.kapply.output
    assert "Errored:\n    Resource timed out waiting after 1s" in pair.kapply.stderr  # laid out as kapp's
    assert "ok: reconcile gadget/g" in pair.kapply.stdout  # the poll found it done
