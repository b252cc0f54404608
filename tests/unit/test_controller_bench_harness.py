"""The pure parts of the controller benchmark (bench/controller_bench.py): the Apps it creates, the CRDs it installs
and removes (against a fake cluster), reading /proc and the controller's log, the statistics, the two identities' flow
schemas, and the controller_results.md rendering. No cluster."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import time

import pytest
import yaml
from bench import controller_bench as cb
from bench import identity, metrics

from kapply.controller.main import ControllerOptions
from kapply.controller.metrics import Kappctrl
from kapply.packaging.process import registrations
from kapply.packaging.settings import PackagingSettings

# ---------------------------------------------------------------- what the bench creates


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30.0), ("1m30s", 90.0), ("500ms", 0.5), ("2h", 7200.0), ("12", 12)]
)
def test_durations_read_as_go_writes_them(text, seconds):
    assert cb.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "30x", "s30", "1m 30s"])
def test_a_duration_that_is_not_one_is_refused(text):
    with pytest.raises(ValueError, match="not a duration"):
        cb.parse_duration(text)


def test_an_apps_resources_are_mostly_config_maps_with_names_unique_across_apps():
    docs = cb.resources(cb.app_name(7), 20)
    kinds = [d["kind"] for d in docs]
    assert (kinds.count("ConfigMap"), kinds.count("Secret")) == (18, 2)
    assert [d["kind"] for d in docs[9::10]] == ["Secret", "Secret"]
    names = {d["metadata"]["name"] for d in docs} | {d["metadata"]["name"] for d in cb.resources(cb.app_name(8), 20)}
    assert len(names) == 40
    assert docs[0]["metadata"]["name"] == "a007-r00"
    assert all("namespace" not in d["metadata"] for d in docs)  # the App's namespace


def test_an_app_deploys_its_inline_resources_through_ytt_with_the_deployer_account():
    app = cb.app_manifest("a001", "ns", 5, "30s")
    spec = app["spec"]
    assert app["metadata"] == {"name": "a001", "namespace": "ns", "labels": cb.LABELS}
    assert spec["serviceAccountName"] == cb.DEPLOYER
    assert spec["syncPeriod"] == "30s"
    assert spec["template"] == [{"ytt": {}}]  # required by the spec; the cheapest step
    assert spec["deploy"] == [{"kapp": {}}]
    (source,) = spec["fetch"]
    assert list(yaml.safe_load_all(source["inline"]["paths"]["resources.yml"])) == cb.resources("a001", 5)


def test_the_deployer_may_do_anything_in_its_namespace_only():
    sa, role, binding = cb.deployer_objects("ns")
    assert (sa["kind"], role["kind"], binding["kind"]) == ("ServiceAccount", "Role", "RoleBinding")
    assert {o["metadata"]["namespace"] for o in (sa, role, binding)} == {"ns"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": cb.DEPLOYER, "namespace": "ns"}]


def test_the_bench_installs_a_crd_for_every_kind_the_controller_watches():
    """A kind not served is answered 404 and LISTed again every minute: requests the steady state would count as
    the Apps' syncs'. The controller's watches: Apps, and the packaging kinds and triggers it registers."""
    kinds, triggers = registrations(None, ControllerOptions(namespace=cb.APPS_NS), PackagingSettings(), Kappctrl())
    watched = {(r.group, r.version, r.plural) for r in (*(k.rtype for k in kinds), *(t.rtype for t in triggers))}
    crds = cb.bench_crds()
    served = {
        (c["spec"]["group"], v["name"], c["spec"]["names"]["plural"]) for c in crds for v in c["spec"]["versions"]
    }
    assert ("packaging.kapply.dev", "v1alpha1", "packageinstalls") in watched
    assert watched <= served
    assert {c["metadata"]["name"] for c in crds} == {
        "apps.kapply.dev",
        "packagerepositories.packaging.kapply.dev",
        "packageinstalls.packaging.kapply.dev",
        "packages.data.packaging.kapply.dev",
        "packagemetadatas.data.packaging.kapply.dev",
    }
    assert all(c["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "kapply-cbench" for c in crds)


class _CrdCluster:
    """What the bench's CRD handling asks of a cluster: CRDs (established at once) and how many objects each LIST
    path finds."""

    def __init__(self, crds: set[str], objects: dict[str, int]) -> None:
        self.crds = crds
        self.objects = objects
        self.applied: list[str] = []
        self.deleted: list[str] = []

    def exists(self, path: str) -> bool:
        return path.removeprefix(cb.CRDS_PATH + "/") in self.crds

    def apply(self, path: str, obj: dict) -> dict:
        self.applied.append(obj["metadata"]["name"])
        self.crds.add(obj["metadata"]["name"])
        return obj

    def json(self, method: str, path: str, body: object = None, **kwargs: str) -> dict:
        if path.startswith(cb.CRDS_PATH):
            status = "True" if path.removeprefix(cb.CRDS_PATH + "/") in self.crds else "False"
            return {"status": {"conditions": [{"type": "Established", "status": status}]}}
        return {"items": [{}] * self.objects.get(path, 0)}

    def delete(self, path: str) -> bool:
        self.deleted.append(path)
        return True

    def wait_gone(self, paths: list[str], timeout: float) -> list[str]:
        return []


def test_the_crds_the_cluster_lacks_are_installed_and_removed_unless_objects_of_theirs_are_left():
    cluster = _CrdCluster({"apps.kapply.dev"}, {"/apis/packaging.kapply.dev/v1alpha1/packageinstalls?limit=1": 1})
    created = cb.install_crds(cluster)
    cb.wait_established(cluster, created)
    assert cluster.applied == [
        "packagerepositories.packaging.kapply.dev",
        "packageinstalls.packaging.kapply.dev",
        "packages.data.packaging.kapply.dev",
        "packagemetadatas.data.packaging.kapply.dev",
    ]
    assert [c["metadata"]["name"] for c in created] == cluster.applied
    cb.cleanup_cluster(cluster, wait=True, crds=created)
    assert [p for p in cluster.deleted if p.startswith(cb.CRDS_PATH)] == [
        f"{cb.CRDS_PATH}/packagerepositories.packaging.kapply.dev",
        f"{cb.CRDS_PATH}/packages.data.packaging.kapply.dev",
        f"{cb.CRDS_PATH}/packagemetadatas.data.packaging.kapply.dev",
    ]


def test_a_crd_that_is_not_established_in_time_fails_the_run():
    cluster = _CrdCluster(set(), {})
    (crd, *_) = cb.bench_crds()
    with pytest.raises(RuntimeError, match="not established after 0 s: apps.kapply.dev"):
        cb.wait_established(cluster, [crd], timeout=0)


def _app(kind: str, generation: int = 2, observed: int = 2, message: str = "") -> dict:
    return {
        "metadata": {"generation": generation},
        "status": {
            "observedGeneration": observed,
            "conditions": [{"type": kind, "status": "True", "message": message}],
        },
    }


def test_an_app_is_ready_when_reconciled_for_its_generation():
    assert cb.app_state(_app("ReconcileSucceeded")) == ("ready", "")
    assert cb.app_state(_app("ReconcileSucceeded", generation=3)) == ("pending", "")  # a newer spec
    assert cb.app_state(_app("ReconcileFailed", message="Deploying: boom")) == ("failed", "Deploying: boom")
    assert cb.app_state({"metadata": {"generation": 1}}) == ("pending", "")


# ---------------------------------------------------------------- the two identities


def test_controller_and_deploy_requests_are_counted_apart_and_apart_from_the_side_by_side_bench():
    prefixes = [cb.CTL_PREFIX, cb.DEP_PREFIX, identity.PREFIX]
    assert not any(a != b and b.startswith(a) for a in prefixes for b in prefixes)
    schemas = identity.flow_schemas(cb.DEP_PREFIX, [identity.subject(cb.APPS_NS, cb.DEPLOYER)], cb.LABELS)
    for schema in schemas:
        assert schema["metadata"]["name"].startswith(cb.DEP_PREFIX)  # type: ignore[index]
        assert schema["metadata"]["labels"] == cb.LABELS  # type: ignore[index]
        for rule in schema["spec"]["rules"]:  # type: ignore[index]
            assert rule["subjects"] == [
                {"kind": "ServiceAccount", "serviceAccount": {"name": cb.DEPLOYER, "namespace": cb.APPS_NS}}
            ]
    text = (
        f'{metrics.DISPATCHED}{{flow_schema="{cb.CTL_PREFIX}get",priority_level="exempt"}} 7\n'
        f'{metrics.DISPATCHED}{{flow_schema="{cb.DEP_PREFIX}get",priority_level="exempt"}} 5\n'
        f'{metrics.DISPATCHED}{{flow_schema="{cb.DEP_PREFIX}list",priority_level="exempt"}} 3\n'
        f'{metrics.DISPATCHED}{{flow_schema="{identity.PREFIX}get",priority_level="exempt"}} 100\n'
    )
    grew = metrics.delta({}, metrics.parse(text))
    assert metrics.client_requests(grew, cb.CTL_PREFIX) == {"GET": 7}
    assert metrics.client_requests(grew, cb.DEP_PREFIX) == {"GET": 5, "LIST": 3}


def test_the_side_by_side_identity_keeps_its_names():
    assert {s["metadata"]["name"] for s in identity.flow_schemas()} == {  # type: ignore[index]
        identity.PREFIX + suffix for suffix in metrics.CLIENT_VERBS
    }
    assert identity.BINDING_PATH.endswith("/kapply-bench-cluster-admin")


# ---------------------------------------------------------------- /proc and the controller's log


def test_proc_stat_and_status_give_cpu_seconds_and_memory():
    # fields after the command: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    stat = "4242 (python (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 30 20 20 0 5 0 99 1000 10\n"
    status = "Name:\tpython\nVmHWM:\t  51200 kB\nVmRSS:\t  40960 kB\nThreads:\t5\n"
    got = cb.parse_proc(stat, status, 100, 12.5)
    assert got == cb.ProcSample(t=12.5, cpu_s=3.0, children_cpu_s=0.5, rss_kb=40960, hwm_kb=51200)


def test_machine_cpu_is_busy_time_over_all_time_of_all_cores():
    text = "cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 50 2 25 400 20 1 1 0 0 0\nintr 1\n"
    assert cb.parse_cpu_times(text) == (160.0, 1000.0)


LOG = """\
2026-11-23 23:48:00,433 INFO kapply.controller: ns/a000: deployed 5 changes
2026-11-23 23:48:00,500 INFO kapply: delete configmap/a000-r00 (v1) namespace: ns
2026-11-23 23:48:10,433 INFO kapply.controller: ns/a000: no changes
2026-11-23 23:48:11,000 INFO kapply.controller: other/x: no changes
2026-11-23 23:48:12,000 WARNING kapply.controller: ns/a001: Deploying: boom: yes
2026-11-23 23:48:13,000 INFO kapply.controller: ns/a001: app a001.app is being deployed by someone else
2026-11-23 23:48:20,933 INFO kapply.controller: ns/a000: deployed 1 changes, 1 ghost diffs
Traceback (most recent call last):
"""


def test_the_log_gives_each_reconcile_of_the_namespaces_apps_with_its_outcome():
    syncs = cb.parse_log(LOG, "ns")
    assert [(s.app, s.outcome) for s in syncs] == [
        ("ns/a000", "deployed"),
        ("ns/a000", "unchanged"),
        ("ns/a001", "failed"),
        ("ns/a000", "deployed"),
    ]
    assert syncs[2].message == "Deploying: boom: yes"
    local = datetime.datetime(2026, 11, 23, 23, 48, 0, 433000).timestamp()  # asctime is local time
    assert syncs[0].t == pytest.approx(local)
    assert [s.t - local for s in cb.in_window(syncs, local + 1, local + 20)] == pytest.approx([10.0, 11.567])
    assert cb.sync_intervals(syncs) == pytest.approx([10.0, 10.5])  # per App: a000 twice, a001 once


# ---------------------------------------------------------------- numbers


def test_stats_median_p90_and_max():
    assert cb.stats([]) is None
    s = cb.stats([float(x) for x in range(10, 0, -1)])
    assert s == {"count": 10, "min": 1.0, "median": 5.5, "p90": 9.0, "max": 10.0}
    assert cb.stats([2.0]) == {"count": 1, "min": 2.0, "median": 2.0, "p90": 2.0, "max": 2.0}


def test_requests_per_sync_and_writes():
    counts = {"PUT": 2, "GET": 400, "LIST": 400, "WATCH": 1, "POST": 1}
    assert cb.per_sync(counts, 200) == {"LIST": 2.0, "GET": 2.0, "WATCH": 0.005, "POST": 0.005, "PUT": 0.01}
    assert list(cb.per_sync(counts, 200)) == ["LIST", "GET", "WATCH", "POST", "PUT"]
    assert cb.per_sync(counts, 0) == {}
    assert cb.writes(counts) == 3
    assert cb.writes({"GET": 5, "LIST": 1, "WATCH": 2, "DISCOVERY": 1}) == 0


def test_moved_objects_are_created_updated_and_deleted():
    before = {"apps/a": "1", "configmaps/x": "5", "configmaps/gone": "2"}
    after = {"apps/a": "7", "configmaps/x": "5", "configmaps/new": "9"}
    assert cb.moved(before, after) == {
        "created": ["configmaps/new"],
        "updated": ["apps/a"],
        "deleted": ["configmaps/gone"],
    }


# ---------------------------------------------------------------- controller_results.md


def _phase(wall: float, **more: object) -> dict:
    return {
        "wall_s": wall,
        "controller": {"GET": 400},
        "deploys": {"LIST": 400, "GET": 400},
        "server": {},
        "cpu_s": wall / 4,
        "children_cpu_s": 1.0,
        "rss_kb": 90 * 1024,
        "hwm_kb": 100 * 1024,
        "apiserver_cpu_s": 2.0,
        "etcd_cpu_s": None,
        "machine_busy": 0.755,
        **more,
    }


def _idle_steady(**more: object) -> dict:
    """A steady state of 4 periods in which each of the 200 Apps synced at each period, unchanged, and nothing moved."""
    return _phase(
        120.0,
        periods=4,
        syncs=800,
        expected_syncs=800,
        outcomes={"unchanged": 800},
        intervals=None,
        moved={"created": [], "updated": [], "deleted": []},
        events_created=0,
        **more,
    )


def _doc(**phases: dict) -> dict:
    return {
        "meta": {
            "command": "controller_bench --apps 200",
            "started": "2026-11-23T20:00:00+00:00",
            "finished": "2026-11-23T20:10:00+00:00",
            "note": "",
            "machine": {"cpu": "AMD EPYC", "cores": 2, "memory_gb": 23.5, "os": "Debian 12"},
            "versions": {"kubernetes": "v1.34.4", "kapply": "kapply version 0.1.0"},
            "config": {
                "apps": 200,
                "resources": 20,
                "sync_period": "30s",
                "sync_period_s": 30.0,
                "steady_periods": 4,
                "drift_trials": 2,
                "concurrency": 4,
            },
        },
        "phases": phases,
        "controller_exit": {
            "exit_code": -15,
            "cpu_user_s": 80.0,
            "cpu_sys_s": 5.0,
            "max_rss_kb": 120 * 1024,
            "hwm_kb": 110 * 1024,
            "problems": 1,
            "problem_lines": ["2026-11-23 20:01:00,000 WARNING kapply.controller: ns/a001: boom"],
        },
    }


def test_results_md_reports_every_phase():
    ready = {"count": 200, "min": 1.0, "median": 30.0, "p90": 50.0, "max": 60.0}
    doc = _doc(
        initial=_phase(
            61.0, create_s=2.0, all_ready_s=60.0, not_ready=0, ready_times=ready, outcomes={"deployed": 200}
        ),
        steady=_phase(
            120.0,
            periods=4,
            syncs=200,
            expected_syncs=800,
            outcomes={"unchanged": 200},
            intervals={"count": 100, "min": 30.0, "median": 95.0, "p90": 110.0, "max": 120.0},
            moved={"created": [], "updated": [], "deleted": []},
            events_created=0,
        ),
        drift=_phase(
            20.0,
            trials=[
                {"trial": 1, "app": "a000", "object": "a000-r00", "revert_s": 1.2},
                {"trial": 2, "app": "a100", "object": "a100-r00", "revert_s": None},
            ],
            revert={"count": 1, "min": 1.2, "median": 1.2, "p90": 1.2, "max": 1.2},
            not_reverted=1,
            outcomes={"deployed": 1},
        ),
        delete=_phase(90.0, all_gone_s=88.0, left=0, objects_left=0),
    )
    text = cb.render(doc)
    assert "**200 Apps x 20 resources**" in text
    assert "AMD EPYC, 2 cores" in text
    assert "The API server, etcd, kube-controller-manager and the controller all run on this machine" in text
    assert "| initial | 61.0 s | 15.2 s (25 % of a core) | 1.0 s | 2.0 s | - | 76 % | 100 MB |" in text
    assert "**All ReconcileSucceeded 60.0 s after the first create** (58.0 s after the last)." in text
    assert "Throughput: 3.3 Apps/s, 67 resources/s." in text
    assert "**200 reconciles logged** (unchanged 200), 800 expected" in text
    assert "median 95.0 s, p90 110.0 s, max 120.0 s (n = 100)" in text
    assert "controller GET 2.00; deploy LIST 2.00, GET 2.00" in text
    assert "**Writes in the window**: controller 0, deploys 0" in text
    assert "Secrets): **none**; Events created: 0." in text
    assert "**Reverted: median 1.20 s, p90 1.20 s, max 1.20 s (n = 1)**; not reverted in time: 1." in text
    assert "| 2 | a100 | a100-r00 | - |" in text
    assert "**all 200 gone after 88.0 s**." in text
    assert "peak RSS 120 MB (VmHWM of the controller itself: 110 MB), exit status -15" in text
    assert "  - `2026-11-23 20:01:00,000 WARNING kapply.controller: ns/a001: boom`" in text


def test_the_first_syncs_after_the_deploys_are_reported_apart_from_the_steady_state():
    first = _phase(35.0, syncs=200, outcomes={"unchanged": 200})
    first["deploys"] = {"LIST": 4}
    first["refused"] = [
        {"verb": "LIST", "resource": resource, "scope": "cluster", "code": "403", "count": 2}
        for resource in ("configmaps", "secrets")
    ]
    steady = _idle_steady()
    steady["cpu_s"] = 3.2
    doc = _doc(first=first, steady=steady)
    text = cb.render(doc)
    assert "| first | 35.0 s | 8.8 s (25 % of a core) |" in text
    assert (
        "- 200 reconciles logged (unchanged 200); controller CPU 43.8 ms per sync, sandbox (ytt included) 5.0 ms."
        in text
    )
    assert "- Requests per sync: controller GET 2.00; deploy LIST 0.02." in text
    assert "(403, every client's): LIST configmaps (cluster) 2, LIST secrets (cluster) 2." in text
    assert cb.summary(doc)["idle_cpu_ms"] == 4.0  # the steady state's only


def test_results_md_says_when_apps_never_became_ready_and_when_objects_moved():
    initial = _phase(100.0, create_s=2.0, all_ready_s=None, not_ready=3, ready_times=None, outcomes={"failed": 9})
    steady = _phase(
        30.0,
        periods=1,
        syncs=0,
        expected_syncs=200,
        outcomes={},
        intervals=None,
        moved={"created": [], "updated": [f"apps/a{i:03d}" for i in range(7)], "deleted": []},
        events_created=7,
    )
    steady["deploys"] = {"LIST": 10, "PUT": 7}
    text = cb.render(_doc(initial=initial, steady=steady))
    assert "**not all ready** after 100.0 s: 3 left" in text
    assert "Throughput" not in text
    assert "deploys 7 (PUT, PATCH, POST, DELETE)" in text
    assert "7 updated (`apps/a000`, `apps/a001`, `apps/a002`, `apps/a003`, `apps/a004` and 2 more)" in text
    assert "## 3. Drift" not in text


def test_the_controllers_cache_reports_are_read_from_its_log():
    text = (
        "2026-11-26 20:00:00,000 INFO kapply.controller: cache: 4229 objects, 6.2 MB of JSON, in 3 stores; "
        "120 events in 60s\n"
        "2026-11-26 20:01:00,000 INFO kapply.controller: cache: 10 objects, 0.0 MB of JSON, in 1 stores\n"
        "2026-11-26 20:02:00,000 INFO kapply.controller: kapply-cbench-apps/a000: no changes\n"
    )
    first, second = cb.parse_cache_log(text)
    assert (first["objects"], first["json_mb"], first["stores"], first["events_per_min"]) == (4229, 6.2, 3, 120)
    assert second["objects"] == 10 and second["events_per_min"] == 0
    assert second["t"] - first["t"] == 60


def test_results_md_shows_the_run_against_the_goals_beside_the_baseline():
    steady = _idle_steady(
        cache={"objects": 4000, "json_mb": 6.0, "stores": 3, "events_per_min": 0},
    )
    steady["controller"], steady["deploys"], steady["cpu_s"] = {}, {"LIST": 2}, 4.0
    doc = _doc(steady=steady)
    before = _doc(steady=_phase(120.0, syncs=800))
    doc["baseline"] = {"command": "controller_bench", "started": "2026-11-24T00:00:00", "commit": "abc"}
    doc["baseline"]["summary"] = cb.summary(before)
    text = cb.render(doc)
    assert "|  | this run (1 process, 200 Apps) | before (2026-11-24, abc, 1 process, 200 Apps) | goal |" in text
    assert "| requests per App per idle sync | LIST 0.00 | LIST 0.50, GET 1.00 | no LIST, no GET |" in text
    assert "| LIST per App per idle sync | 0.00 (met) | 0.50 | 0 |" in text
    assert "| controller CPU per idle sync (ms) | 5.00 (met) | 37.50 | 5 |" in text
    assert "| the cache, end of steady state | 4000 objects, 6.0 MB of JSON, 3 stores | - |  |" in text
    assert "| Lease requests per minute (sharding's, no App sync) | - | - |  |" in text  # no `leases`: an old run


# ---------------------------------------------------------------- several replicas


def test_lease_requests_are_counted_apart_from_the_controllers_other_requests():
    schemas = cb.lease_flow_schemas()
    assert [s["metadata"]["name"] for s in schemas] == [cb.LEASE_PREFIX + v for v in cb.LEASE_VERBS]  # type: ignore[index]
    controller = identity.flow_schemas(cb.CTL_PREFIX, precedence=cb.CTL_PRECEDENCE)
    first = max(s["spec"]["matchingPrecedence"] for s in schemas)  # type: ignore[index]
    assert first == 2  # only `exempt` may have 1
    assert first < min(s["spec"]["matchingPrecedence"] for s in controller)  # type: ignore[index]
    (rule,) = schemas[1]["spec"]["rules"]  # type: ignore[index]
    assert rule["subjects"] == [identity.subject(cb.IDENTITY_NS, cb.CONTROLLER_SA)]
    assert rule["resourceRules"] == [
        {
            "verbs": ["list"],
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "namespaces": [cb.IDENTITY_NS],
        }
    ]
    prefixes = [cb.CTL_PREFIX, cb.DEP_PREFIX, cb.LEASE_PREFIX, identity.PREFIX]
    assert not any(a != b and b.startswith(a) for a in prefixes for b in prefixes)
    text = (
        f'{metrics.DISPATCHED}{{flow_schema="{cb.LEASE_PREFIX}update",priority_level="exempt"}} 36\n'
        f'{metrics.DISPATCHED}{{flow_schema="{cb.CTL_PREFIX}update",priority_level="exempt"}} 2\n'
    )
    grew = metrics.delta({}, metrics.parse(text))
    assert metrics.client_requests(grew, cb.LEASE_PREFIX) == {"PUT": 36}
    assert metrics.client_requests(grew, cb.CTL_PREFIX) == {"PUT": 2}


def test_the_side_by_side_bench_keeps_its_precedence():
    assert {s["spec"]["matchingPrecedence"] for s in identity.flow_schemas()} == {2, 3}  # type: ignore[index]


def test_one_process_runs_without_a_lease_and_several_share_the_apps_by_shards(tmp_path):
    common = {"sync_period": "30s", "concurrency": 4, "debug": False, "profile": None}
    one = cb.controller_argv(tmp_path / "k", replicas=1, **common)
    assert one[1:5] == ["-m", "kapply", "controller", "--kubeconfig"]
    assert "--leader-elect=false" in one and not any(a.startswith("--shards") for a in one)
    assert "--metrics-bind-address=127.0.0.1:0" in one  # a free port each: several on one machine
    three = cb.controller_argv(tmp_path / "k", replicas=3, **common | {"debug": True})
    assert "--leader-elect=false" not in three  # sharding needs leader election
    assert {"--shards=3", f"--lease-namespace={cb.IDENTITY_NS}", f"--lease-name={cb.LEASE_NAME}"} <= set(three)
    assert three[-1] == "--debug"
    profiled = cb.controller_argv(tmp_path / "k", replicas=3, **common | {"profile": tmp_path / "p-1.prof"})
    assert profiled[1:5] == ["-c", cb.PROFILE_STEADY, str(tmp_path / "p-1.prof"), "controller"]
    assert cb.profile_path(tmp_path / "p.prof", 1, 3) == tmp_path / "p-1.prof"
    assert cb.profile_path(tmp_path / "p.prof", 0, 1) == tmp_path / "p.prof"
    assert (cb.output_stem(1), cb.output_stem(3)) == ("controller_results", "controller_results_replicas3")


def test_a_controllers_endpoints_and_shards_are_read_from_its_log_and_metrics():
    log = (
        "2026-11-26 20:45:24,100 DEBUG asyncio: Using selector: EpollSelector\n"
        "2026-11-26 20:45:24,200 INFO kapply.controller: serving /metrics, /healthz and /readyz on "
        "http://127.0.0.1:41237, http://[::1]:41237\n"
    )
    assert cb.metrics_url(log) == "http://127.0.0.1:41237"
    assert cb.metrics_url("nothing yet\n") is None
    text = "# HELP kapply_shards_held Shards held\n# TYPE kapply_shards_held gauge\nkapply_shards_held 2.0\n"
    assert cb.shards_held(text) == 2
    assert cb.shards_held("kapply_shards 3.0\n") is None


def test_replicas_cpu_is_summed_and_memory_is_the_largest_ones():
    before = [cb.ProcSample(0, 1.0, 0.5, 100, 100), cb.ProcSample(0, 2.0, 0.0, 100, 100)]
    after = [cb.ProcSample(9, 3.0, 1.5, 300, 400), cb.ProcSample(9, 2.5, 0.5, 200, 500)]
    got = cb.combine(before, after)
    assert (got["cpu_s"], got["children_cpu_s"]) == (2.5, 1.5)
    assert (got["rss_kb"], got["hwm_kb"]) == (300, 500)
    assert got["replicas"][1] == {"cpu_s": 0.5, "children_cpu_s": 0.5, "rss_kb": 200, "hwm_kb": 500}
    ends = [
        {"exit_code": 0, "cpu_user_s": 5.0, "cpu_sys_s": 1.0, "max_rss_kb": 900, "hwm_kb": 800}
        | {"problems": 1, "problem_lines": ["a"]},
        {"exit_code": -9, "cpu_user_s": 4.0, "cpu_sys_s": 2.0, "max_rss_kb": 700, "hwm_kb": 850}
        | {"problems": 2, "problem_lines": ["b", "c"]},
    ]
    end = cb.combine_exits(ends)
    assert (end["exit_code"], end["cpu_user_s"], end["cpu_sys_s"]) == (-9, 9.0, 3.0)
    assert (end["max_rss_kb"], end["hwm_kb"], end["problems"], end["problem_lines"]) == (900, 850, 3, ["a", "b", "c"])
    assert end["replicas"] == ends


def _sharded() -> dict:
    steady = _idle_steady(
        leases={"LIST": 72, "PUT": 144},
        syncs_per_replica=[250, 280, 270],
        caches=[{"objects": 4000}, {"objects": 4001}, None],
    )
    steady["controller"], steady["deploys"], steady["cpu_s"] = {}, {}, 3.0
    steady["replicas"] = [{"cpu_s": 1.0}, {"cpu_s": 1.2}, {"cpu_s": 0.8}]
    doc = _doc(steady=steady)
    doc["meta"]["config"]["replicas"] = 3
    ends = [dict(doc["controller_exit"], max_rss_kb=kb * 1024, problems=0) for kb in (100, 120, 110)]
    doc["controller_exit"] = cb.combine_exits(ends)
    return doc


def _add_old_baseline(doc: dict) -> None:
    """An earlier run (`old`, abc) as the baseline: half the syncs in its steady state."""
    doc["baseline"] = {"command": "old", "started": "2026-11-24T00:00:00", "commit": "abc"}
    doc["baseline"]["summary"] = cb.summary(_doc(steady=_phase(120.0, syncs=400)))


def test_a_sharded_run_reports_its_replicas_and_lease_requests_apart():
    doc = _sharded()
    s = cb.summary(doc)
    assert (s["replicas"], s["apps"], s["peak_rss_mb"], s["peak_rss_total_mb"]) == (3, 200, 120, 330)
    assert s["leases_per_min"] == 108  # 216 in 120 s
    assert s["idle_list"] == 0  # Lease requests are no App sync's
    text = cb.render(doc)
    assert "**3 controller processes**, each `--shards=3 --lease-namespace=kapply-cbench-identity" in text
    assert "| none; Leases LIST 72, PUT 144 | none |" in text
    assert "| controller peak RSS (MB), all processes | 330 |  |" in text
    assert "| 1 | 280 | 1.2 s | 85.0 s | 120 MB | 4001 objects | 0 |" in text
    assert "| 2 | 270 | 0.8 s | 85.0 s | 110 MB | - | 0 |" in text


def test_the_run_beside_is_a_column_of_its_own_and_a_bar_of_its_own():
    single = _doc(steady=_phase(120.0, syncs=800, leases={}))
    doc = _sharded()
    doc["beside"] = {"command": "controller_bench", "started": "2026-11-26T21:00:00+00:00", "commit": "f7b4"}
    doc["beside"]["summary"] = cb.summary(single)
    _add_old_baseline(doc)
    text = cb.render(doc)
    header = (
        "|  | this run (3 replicas, 200 Apps) | 1 process, 200 Apps (2026-11-26T21:00) | "
        "before (2026-11-24, abc, 1 process, 200 Apps) | goal |"
    )
    assert header in text
    assert "| drift set back, p90 (s) | - | - | - | 2 |" in text
    assert "| Lease requests per minute (sharding's, no App sync) | 108 | 0 | - |  |" in text
    assert "Beside: `controller_bench`, 2026-11-26T21:00:00+00:00." in text
    bars = cb.plot_bars(doc)
    assert [label for label, _ in bars] == ["before\n200 Apps", "1 process\n200 Apps", "3 replicas\n200 Apps"]
    assert bars[0][1]["idle_requests"] == 3.0  # the controller's GET 400, the deploys' LIST 400 and GET 400
    assert bars[1][1]["idle_requests"] == 1.5  # the same over 800 syncs
    assert bars[2][1]["drift_p90_s"] is None


def test_the_plot_is_drawn_when_matplotlib_is_there(tmp_path):
    pytest.importorskip("matplotlib")
    doc = _sharded()
    _add_old_baseline(doc)
    assert cb.plot(doc, tmp_path / "p.png") is None
    assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")


def test_what_limits_a_timed_phase_is_where_the_cpu_went():
    def phase(**more: object) -> dict:
        return {"wall_s": 10.0, "cpu_s": 3.0, "children_cpu_s": 1.0, "apiserver_cpu_s": 9.0, "etcd_cpu_s": 3.0} | more

    assert "**the local control plane**, not the controller, is the limit" in cb.limit(phase(machine_busy=0.95), 2, 1)
    assert "API server and etcd 1.20 cores, the controller 0.40 with ytt (0.30 of one core without)" in cb.limit(
        phase(machine_busy=0.95), 2, 1
    )
    assert "**the controller's event loop**" in cb.limit(phase(cpu_s=9.5, machine_busy=0.5), 2, 1)
    sharded = phase(cpu_s=12.0, machine_busy=0.99, replicas=[{"cpu_s": 4.0}, {"cpu_s": 5.0}, {"cpu_s": 3.0}])
    assert "its busiest process 0.50 of one core" in cb.limit(sharded, 2, 3)
    assert "**the controller** is the limit" in cb.limit(sharded, 2, 3)  # 1.3 cores against the plane's 1.2
    assert "**other load on the machine**" in cb.limit(phase(apiserver_cpu_s=2.0, machine_busy=0.95), 2, 1)
    assert "nothing saturated" in cb.limit(phase(machine_busy=0.6), 2, 1)


SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\ntime.sleep(30)"


def test_the_cpu_of_a_controllers_running_children_counts_as_its_childrens():
    spinner = subprocess.Popen([sys.executable, "-c", SPIN])  # a child that has used 0.3 s of CPU, still running
    try:
        deadline = time.monotonic() + 20
        while cb.live_children_cpu(os.getpid()) < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cb.live_children_cpu(os.getpid()) >= 0.3
    finally:
        spinner.kill()
        spinner.wait()
