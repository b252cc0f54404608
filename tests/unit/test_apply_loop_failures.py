"""The apply loop with failures that do not stop it (kapp's --exit-early-on-apply-error=false and
--exit-early-on-wait-error=false), and with ignored changes (deletes of controller-made objects: --apply-ignored,
--wait-ignored), against the in-memory cluster double."""

from __future__ import annotations

import asyncio

import pytest

from kapply.apply.loop import ApplyLoop
from kapply.apply.options import ApplyOptions, WaitOptions
from kapply.apply.planning import WaitOp, cluster_changes, order
from kapply.config.config import Config
from kapply.diff.change import ApplyOp, calculate
from kapply.errors import ApplyError
from kapply.resources.labeled import is_transient
from tests.unit.fake_cluster import FakeCluster
from tests.unit.test_apply_loop import DISCOVERY, FAST, Lines, configmap, resources

APP = "kapp.k14s.io/app=1"


def run(
    fake: FakeCluster,
    config: Config,
    new: list[dict],
    existing: list[dict] = (),  # type: ignore[assignment]
    *,
    wait: WaitOptions = FAST,
    apply: ApplyOptions = ApplyOptions(),
    lines: Lines | None = None,
) -> tuple:
    """Plan and run the changes (ignored ones as the options say); the changes waited on."""
    changes = [calculate(n, None, config) for n in new]
    changes += [calculate(None, e, config, transient=is_transient(e)) for e in existing]
    planned = cluster_changes(changes, config, wait.wait, apply_ignored=apply.ignored, wait_ignored=wait.ignored)
    loop = ApplyLoop(fake, DISCOVERY, config, APP, apply, wait, lines or Lines())  # type: ignore[arg-type]
    return asyncio.run(loop.run(planned, order(planned, config)))


def taken(fake: FakeCluster, *names: str) -> None:
    """Objects that exist already (unknown to the app): creating them fails."""
    for name in names:
        fake.objects[("", "ConfigMap", "ns", name)] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}


def created(fake: FakeCluster) -> list[str]:
    return [name for verb, _, name in fake.log if verb == "create"]


NO_EXIT = ApplyOptions(exit_early=False)
AFTER_A = {"kapp.k14s.io/change-rule": "upsert after upserting example.com/a"}
IN_A = {"kapp.k14s.io/change-group": "example.com/a"}


def test_a_failed_apply_stops_the_run_by_default(config):
    fake = FakeCluster(DISCOVERY)
    taken(fake, "bad")
    with pytest.raises(ApplyError, match="create configmap/bad .*already exists") as failed:
        run(fake, config, resources(config, configmap("bad", **IN_A), configmap("later", **AFTER_A)))
    assert "later" not in created(fake)
    assert "\n\n  - " not in str(failed.value)


def test_without_exit_early_the_rest_is_applied_and_every_failure_reported_at_the_end(config):
    fake = FakeCluster(DISCOVERY)
    taken(fake, "bad-1", "bad-2")
    new = resources(
        config,
        configmap("bad-1", **IN_A),
        configmap("bad-2"),
        configmap("fine", **IN_A),
        configmap("later", **AFTER_A),  # waits for bad-1, which never converges
    )
    with pytest.raises(ApplyError) as failed:
        run(fake, config, new, apply=NO_EXIT)
    message = str(failed.value)
    assert message.startswith("\n\n  - ") and message.endswith("\n\n")
    items = message.strip("\n").split("\n\n")
    assert sorted(item.split(" (v1)")[0] for item in items) == [
        "  - create configmap/bad-1",
        "  - create configmap/bad-2",
    ]
    assert sorted(created(fake)) == ["bad-1", "bad-2", "fine"]
    assert fake.objects[("", "ConfigMap", "ns", "fine")]["metadata"]["name"] == "fine"


def test_a_failed_apply_is_printed_like_any_other_and_the_run_does_not_complete(config):
    fake = FakeCluster(DISCOVERY)
    taken(fake, "bad")
    lines = Lines()
    with pytest.raises(ApplyError):
        run(fake, config, resources(config, configmap("bad"), configmap("good")), apply=NO_EXIT, lines=lines)
    assert "create configmap/bad (v1) namespace: ns" in lines.lines
    assert "create configmap/good (v1) namespace: ns" in lines.lines
    assert not any("complete" in line for line in lines.lines)


def test_one_failure_without_exit_early_is_the_error_itself(config):
    fake = FakeCluster(DISCOVERY)
    taken(fake, "bad")
    with pytest.raises(ApplyError) as failed:
        run(fake, config, resources(config, configmap("bad"), configmap("good")), apply=NO_EXIT)
    assert str(failed.value).startswith("create configmap/bad (v1) namespace: ns: Creating resource")
    assert "good" in created(fake)


def failing_job(fake: FakeCluster, name: str) -> dict:
    def fails(obj: dict, seen: int) -> None:
        obj["status"] = {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}

    fake.evolve[("Job", name)] = fails
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {"template": {}}}


def test_without_exit_early_on_wait_errors_the_others_still_converge(config):
    fake = FakeCluster(DISCOVERY)
    jobs = [failing_job(fake, "migrate-1"), failing_job(fake, "migrate-2")]
    with pytest.raises(ApplyError) as failed:
        run(
            fake,
            config,
            resources(config, *jobs, configmap("fine")),
            wait=WaitOptions(check_interval=0.01, exit_early=False),
        )
    message = str(failed.value)
    assert message.count("\n\n  - waiting on reconcile job/migrate-") == 2
    assert message.count("Finished unsuccessfully (Failed with reason BackoffLimitExceeded") == 2


def test_a_wait_failure_blocks_its_dependents_and_the_run_does_not_complete(config):
    fake = FakeCluster(DISCOVERY)
    job = failing_job(fake, "migrate")
    job["metadata"]["annotations"] = IN_A
    lines = Lines()
    options = WaitOptions(check_interval=0.01, exit_early=False)
    with pytest.raises(ApplyError, match="^waiting on reconcile job/migrate"):
        run(fake, config, resources(config, job, configmap("after", **AFTER_A)), wait=options, lines=lines)
    assert "after" not in created(fake)
    assert not any("complete" in line for line in lines.lines)


def transient_pod(name: str) -> dict:
    """A Pod a controller made: labeled as the app's, without kapp's identity annotation."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {"kapp.k14s.io/app": "1"}},
    }


def test_ignored_changes_are_neither_applied_nor_waited_on_unless_asked(config):
    pod = transient_pod("web-1")
    changes = [calculate(None, pod, config, transient=True)]
    assert changes[0].ignored
    assert cluster_changes(changes, config) == []
    waited = cluster_changes(changes, config, wait_ignored=True)
    assert [(c.apply_op, c.wait) for c in waited] == [(ApplyOp.NOOP, WaitOp.DELETE)]
    applied = cluster_changes(changes, config, apply_ignored=True)
    assert [(c.apply_op, c.wait) for c in applied] == [(ApplyOp.DELETE, WaitOp.NOOP)]
    both = cluster_changes(changes, config, apply_ignored=True, wait_ignored=True)
    assert [(c.apply_op, c.wait) for c in both] == [(ApplyOp.DELETE, WaitOp.DELETE)]


def test_an_ignored_change_waited_on_is_not_deleted_but_seen_gone(config):
    fake = FakeCluster(DISCOVERY)
    pod = transient_pod("web-1")
    fake.objects[("", "Pod", "ns", "web-1")] = dict(pod)

    def goes_away(obj: dict, seen: int) -> None:
        if seen >= 2:
            fake.objects.pop(("", "Pod", "ns", "web-1"), None)

    fake.evolve[("Pod", "web-1")] = goes_away
    lines = Lines()
    waited = run(fake, config, [], [pod], wait=WaitOptions(check_interval=0.01, ignored=True), lines=lines)
    assert not any(verb == "delete" for verb, _, _ in fake.log)
    assert "noop pod/web-1 (v1) namespace: ns" in lines.lines
    assert [c.wait for c in waited] == [WaitOp.DELETE]


def test_an_ignored_change_is_deleted_only_with_apply_ignored(config):
    fake = FakeCluster(DISCOVERY)
    pod = transient_pod("web-1")
    fake.objects[("", "Pod", "ns", "web-1")] = dict(pod)
    run(fake, config, [], [pod], wait=WaitOptions(check_interval=0.01), apply=ApplyOptions(ignored=True))
    assert ("delete", "Pod", "web-1") in fake.log and fake.objects == {}
