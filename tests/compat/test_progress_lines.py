"""Progress as kapp prints it while a deploy waits:

- kapp de-duplicates progress (a section, or a change's lines, identical to one shown in the last minute is not shown
  again): a `kapp.k14s.io/exists` resource that is missing is one `Retryable error` pair, not one a second; a change
  that unblocked its dependents but still reconciles is one `waiting on ...` section, not a flood of them;
- every applied change is waited on, one with nothing to wait for as `ok: noop ...` (`--wait=false`,
  `kapp.k14s.io/disable-wait`), counted in the `[x/y done]` of the sections, for deploy and delete.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.core_v1 import Namespace
from lightkube.types import PatchType

from tests.compat.harness import TOOLS, Harness, Pair, Result, established_crd, namespaced_crd

pytestmark = pytest.mark.compat


@contextmanager
def later(seconds: float, action: Callable[[], object]) -> Iterator[None]:
    """`action` run `seconds` after the block starts (on a thread), and done by the time the block ends."""
    timer = threading.Timer(seconds, action)
    timer.start()
    try:
        yield
    finally:
        timer.join()


def each_with(both: Harness, seconds: float, action: Callable[[str], object], *args: str, input: str) -> Pair:
    """The command run by both tools at once (each in its own namespaces), `action(namespace of the tool)` done
    `seconds` after the tool's run started."""

    def run(tool: str) -> Result:
        with later(seconds, lambda: action(both.ns[tool])):
            return both.run_one(tool, args, input=input)

    with ThreadPoolExecutor(len(TOOLS)) as pool:
        return Pair(*pool.map(run, TOOLS))


EXISTS = """
apiVersion: v1
kind: Namespace
metadata:
  name: '{ns}-x'
  annotations: {kapp.k14s.io/exists: ""}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kapp-config, namespace: '{ns}-x'}
"""


def test_a_missing_exists_resource_is_one_retryable_error(both: Harness, kube: Client):
    def create(namespace: str) -> None:
        kube.create(Namespace.from_dict({"metadata": {"name": f"{namespace}-x"}}))

    try:
        pair = each_with(both, 6, create, "deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=EXISTS)
        both.same(pair, exact=False)
        assert pair.kapply.stdout.count("Retryable error") == 1, pair.kapply.stdout
    finally:
        for namespace in both.ns.values():
            try:
                kube.delete(Namespace, f"{namespace}-x")
            except ApiError as e:
                if e.status.code != 404:
                    raise


GROUP = "progress.compat.kapply.dev"
CronTab = create_namespaced_resource(GROUP, "v1", "CronTab", "crontabs")


@pytest.fixture(scope="module")
def crontabs(kube: Client) -> Iterator[None]:
    with established_crd(kube, namespaced_crd(GROUP, "CronTab")):
        yield


CONFIG = f"""
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
waitRules:
- conditionMatchers:
  - {{type: Progressing, status: "True", unblockChanges: true}}
  - {{type: Available, status: "True", success: true}}
  resourceMatchers:
  - apiVersionKindMatcher: {{apiVersion: {GROUP}/v1, kind: CronTab}}
rebaseRules:
- path: [status]
  type: copy
  sources: [existing]
  resourceMatchers:
  - apiVersionKindMatcher: {{apiVersion: {GROUP}/v1, kind: CronTab}}
"""


def crontab(version: int) -> str:
    return (
        f"---\napiVersion: {GROUP}/v1\nkind: CronTab\nmetadata:\n  name: cron-1\n"
        f"  annotations: {{kapp.k14s.io/change-group: cr}}\nspec: {{version: {version}}}\n"
    )


TEST_CM = (
    "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: test-cm\n"
    "  annotations: {kapp.k14s.io/change-rule: upsert after upserting cr}\n"
)


def condition(kind: str) -> dict[str, object]:
    return {"status": {"conditions": [{"type": kind, "status": "True", "reason": "Test", "message": "made so"}]}}


@pytest.mark.usefixtures("crontabs")
def test_a_change_that_unblocked_others_and_still_reconciles_is_one_section(both: Harness, kube: Client):
    deploy = ("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y")
    for result in both.run(*deploy, "--wait=false", input=CONFIG + crontab(1)):
        assert result.code == 0, result.output
    for namespace in both.ns.values():
        kube.patch(CronTab, "cron-1", condition("Progressing"), namespace=namespace, patch_type=PatchType.MERGE)

    def available(namespace: str) -> None:
        kube.patch(CronTab, "cron-1", condition("Available"), namespace=namespace, patch_type=PatchType.MERGE)

    pair = each_with(both, 8, available, *deploy, input=CONFIG + crontab(2) + TEST_CM)
    both.same(pair, exact=False)
    assert pair.kapply.stdout.count("waiting on 1 changes [1/2 done]") == 1, pair.kapply.stdout
    for result in pair:
        assert result.code == 0, result.output


MANIFEST = (
    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n"
    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, annotations: {kapp.k14s.io/disable-wait: ''}}\n"
    "data: {k: v}\n"
)


def test_changes_not_waited_on_are_ok_noop(both: Harness):
    deploy = ("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y")
    both.same(both.run(*deploy, "--wait=false", input=MANIFEST), exact=False)
    both.same(both.run(*deploy, input=MANIFEST.replace("k: v", "k: w")), exact=False)  # b: disable-wait
    pair = both.run("delete", "-a", "app", "-n", "{ns}", "-y", "--wait=false")
    both.same(pair, exact=False)
    assert pair.kapply.stdout.count("ok: noop") == 2
