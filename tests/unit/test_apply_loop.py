"""The apply loop's logic against an in-memory cluster double: what runs when, what unblocks what, and when it gives
up. (How the real API server answers is tested end to end.)"""

from __future__ import annotations

import asyncio

import pytest

from kapply.apply.loop import ApplyLoop
from kapply.apply.options import ApplyOptions, WaitOptions
from kapply.apply.planning import WaitOp, cluster_changes, order
from kapply.config.config import Config, merge, parse_config
from kapply.diff.change import calculate
from kapply.errors import ApplyError
from kapply.objects import Document
from kapply.resources.cluster import Discovery, ResourceType
from kapply.resources.preparation import Placement, prepare
from tests.unit.conftest import BUILTIN_TYPES, VERBS
from tests.unit.fake_cluster import FakeCluster

APP = {"kapp.k14s.io/app": "1"}
WIDGETS = ResourceType("example.com", "v1", "Widget", "widgets", True, VERBS)
DISCOVERY = Discovery((*BUILTIN_TYPES, WIDGETS))
FAST = WaitOptions(check_interval=0.01)


class Lines:
    """The progress a deploy or delete reports, kept as lines (also test_apply_loop_failures', test_apply_round_trips'
    and test_delete_answers')."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def section(self, message: str) -> None:
        self.lines.append(f"---- {message} ----")

    def line(self, message: str) -> None:
        self.lines.append(message)

    def warn(self, message: str) -> None:
        self.lines.append(f"Warning: {message}")


def resources(config: Config, *objs: dict) -> list[dict]:
    return [d.obj for d in prepare([Document(o, "test") for o in objs], DISCOVERY, config, Placement("ns"), APP)]


def run(
    fake: FakeCluster,
    config: Config,
    new: list[dict],
    existing: list[dict] = (),  # type: ignore[assignment]
    *,
    wait: WaitOptions = FAST,
    apply: ApplyOptions = ApplyOptions(),
) -> tuple[tuple, Lines]:
    changes = [calculate(n, None, config) for n in new] + [calculate(None, e, config) for e in existing]
    planned = cluster_changes(changes, config, wait.wait)
    lines = Lines()
    loop = ApplyLoop(fake, DISCOVERY, config, "kapp.k14s.io/app=1", apply, wait, lines)  # type: ignore[arg-type]
    return asyncio.run(loop.run(planned, order(planned, config))), lines


def deployment(name: str, **annotations: str) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": name}}}},
    }


def configmap(name: str, **annotations: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "annotations": annotations}}


def becomes_ready_after(reads: int):
    def evolve(obj: dict, seen: int) -> None:
        generation = obj["metadata"]["generation"]
        ready = 1 if seen >= reads else 0
        obj["status"] = {"observedGeneration": generation, "readyReplicas": ready, "replicas": 1}

    return evolve


def writes(fake: FakeCluster) -> list[tuple[str, str]]:
    return [(kind, name) for verb, kind, name in fake.log if verb == "create"]


def test_a_dependent_change_starts_only_after_its_dependency_converged(config):
    fake = FakeCluster(DISCOVERY)
    fake.evolve[("Deployment", "db")] = becomes_ready_after(3)
    db = deployment("db", **{"kapp.k14s.io/change-group": "example.com/db"})
    web = deployment("web", **{"kapp.k14s.io/change-rule": "upsert after upserting example.com/db"})
    fake.evolve[("Deployment", "web")] = becomes_ready_after(1)
    waited, lines = run(fake, config, resources(config, web, db))
    assert writes(fake) == [("Deployment", "db"), ("Deployment", "web")]
    db_reads = [i for i, entry in enumerate(fake.log) if entry == ("get", "Deployment", "db")]
    assert len(db_reads) >= 3 and fake.log.index(("create", "Deployment", "web")) > db_reads[2]
    assert [c.wait for c in waited] == [WaitOp.RECONCILE, WaitOp.RECONCILE]
    assert any("ongoing: reconcile deployment/db" in line for line in lines.lines)
    assert lines.lines[-2:] == ["---- applying complete [2/2 done] ----", "---- waiting complete [2/2 done] ----"]


def test_default_rules_put_config_before_workloads_and_namespaces_before_their_contents(config):
    fake = FakeCluster(DISCOVERY)
    fake.evolve[("Deployment", "web")] = becomes_ready_after(1)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
    run(fake, config, resources(config, deployment("web"), configmap("settings"), namespace))
    assert writes(fake) == [("Namespace", "ns"), ("ConfigMap", "settings"), ("Deployment", "web")]


def test_a_condition_that_unblocks_lets_dependents_start_before_the_resource_is_done(config):
    rules = parse_config(
        {
            "apiVersion": "kapp.k14s.io/v1alpha1",
            "kind": "Config",
            "waitRules": [
                {
                    "resourceMatchers": [{"apiVersionKindMatcher": {"apiVersion": "example.com/v1", "kind": "Widget"}}],
                    "conditionMatchers": [
                        {"type": "Ready", "status": "True", "success": True},
                        {"type": "Started", "status": "True", "unblockChanges": True},
                    ],
                }
            ],
        },
        "test",
    )
    config = merge([config, rules])
    fake = FakeCluster(DISCOVERY)
    ready_at: list[int] = []

    def widget(obj: dict, seen: int) -> None:
        conditions = [{"type": "Started", "status": "True"}]
        if seen >= 6:
            conditions.append({"type": "Ready", "status": "True"})
            ready_at.append(len(fake.log))
        obj["status"] = {"conditions": conditions}

    fake.evolve[("Widget", "w")] = widget
    w = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "annotations": {"kapp.k14s.io/change-group": "example.com/w"}},
    }
    after = configmap("after", **{"kapp.k14s.io/change-rule": "upsert after upserting example.com/w"})
    _, lines = run(fake, config, resources(config, w, after))
    assert fake.log.index(("create", "ConfigMap", "after")) < ready_at[0]
    assert any("Allowing blocked changes to proceed" in line for line in lines.lines)


def test_waiting_gives_up_after_the_wait_timeout_naming_what_it_waited_for(config):
    fake = FakeCluster(DISCOVERY)
    fake.evolve[("Deployment", "web")] = becomes_ready_after(10_000)
    with pytest.raises(ApplyError, match=r"Timed out waiting after 200ms for resources: \[deployment/web"):
        run(fake, config, resources(config, deployment("web")), wait=WaitOptions(timeout=0.2, check_interval=0.01))


def test_a_resource_timeout_fails_the_resource_that_took_too_long(config):
    fake = FakeCluster(DISCOVERY)
    fake.evolve[("Deployment", "web")] = becomes_ready_after(10_000)
    options = WaitOptions(resource_timeout=0.1, check_interval=0.01)
    with pytest.raises(ApplyError, match="reconcile deployment/web .*Resource timed out waiting after 100ms"):
        run(fake, config, resources(config, deployment("web")), wait=options)


def test_a_failed_resource_ends_the_run_with_its_reason(config):
    fake = FakeCluster(DISCOVERY)

    def fails(obj: dict, seen: int) -> None:
        obj["status"] = {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}

    fake.evolve[("Job", "migrate")] = fails
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"}, "spec": {"template": {}}}
    with pytest.raises(ApplyError, match="Finished unsuccessfully \\(Failed with reason BackoffLimitExceeded"):
        run(fake, config, resources(config, job))


def test_without_waiting_everything_is_applied_and_nothing_read(config):
    fake = FakeCluster(DISCOVERY)
    waited, _ = run(fake, config, resources(config, deployment("web")), wait=WaitOptions(wait=False))
    assert waited == () and not any(verb in ("get", "list") for verb, _, _ in fake.log)


def test_apply_concurrency_bounds_the_writes_in_flight(config):
    fake = FakeCluster(DISCOVERY)
    fake.write_delay = 0.02
    run(fake, config, resources(config, *(configmap(f"c{i}") for i in range(8))), apply=ApplyOptions(concurrency=2))
    assert fake.max_in_flight == 2 and len(writes(fake)) == 8


def test_deletes_remove_contents_before_their_namespace(config):
    fake = FakeCluster(DISCOVERY)
    namespace, settings = resources(
        config, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}, configmap("settings")
    )
    run(fake, config, [namespace, settings], wait=WaitOptions(wait=False))
    live = [
        {**obj, "metadata": {**obj["metadata"], "uid": f"uid-{obj['metadata']['name']}"}}
        for obj in (namespace, settings)
    ]
    run(fake, config, [], live)
    deletes = [(kind, name) for verb, kind, name in fake.log if verb == "delete"]
    assert deletes == [("ConfigMap", "settings"), ("Namespace", "ns")]
    assert fake.objects == {}


def test_deletes_start_with_objects_that_own_others_of_the_plan(config):
    """The garbage collector removes a Service's EndpointSlices only after the Service is gone, and the delete waits
    for them: the Service goes first, so that wait runs alongside the other deletes."""
    fake = FakeCluster(DISCOVERY)
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {}}
    created = resources(config, *(configmap(f"c{i}") for i in range(4)), service)
    run(fake, config, created, wait=WaitOptions(wait=False))
    live = [{**obj, "metadata": {**obj["metadata"], "uid": f"uid-{obj['metadata']['name']}"}} for obj in created]
    owned = configmap("web-owned")  # stands for the EndpointSlice: any object the Service owns
    owned["metadata"] |= {"uid": "uid-owned", "ownerReferences": [{"kind": "Service", "name": "web", "uid": "uid-web"}]}
    live.append(resources(config, owned)[0] | {"metadata": owned["metadata"] | {"labels": APP}})
    run(fake, config, [], live, apply=ApplyOptions(concurrency=1))
    deletes = [(kind, name) for verb, kind, name in fake.log if verb == "delete"]
    assert deletes[0] == ("Service", "web")
    assert deletes[1:] == [("ConfigMap", f"c{i}") for i in range(4)] + [("ConfigMap", "web-owned")]
