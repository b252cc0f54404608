"""controller/owners.py: the workloads an HPA owns the replicas of (in the manifests or on the cluster), the writer
seen again that makes a field held, the rules appended to the manifests, and what a sync leaves in memory and status."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from kapply.api import FieldReport
from kapply.controller import owners
from kapply.controller.owners import Hold, Known, Owners, Workload
from kapply.diff.fields import FieldPath
from kapply.errors import ClusterError
from kapply.objects import Obj

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 2}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: data}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
"""
HPA = """apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web-hpa}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 3
  maxReplicas: 5
"""
WEB = Workload("Deployment", "ns", "web")


def hpa(name: str, kind: str, target: str, namespace: str = "") -> Obj:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta,
        "spec": {"scaleTargetRef": {"kind": kind, "name": target}},
    }


def report(written_by: str, path: str = "data.a", resource: str = "configmap/cm (v1) namespace: ns") -> FieldReport:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}}
    return FieldReport(resource, path, "1", "2", written_by, obj, FieldPath(tuple(path.split("."))))


def test_the_scalable_workloads_of_the_manifests_take_the_default_namespace() -> None:
    found = owners.workloads(owners.documents(DEPLOYMENT), "ns")
    assert found == [WEB, Workload("StatefulSet", "data", "db")]


def test_invalid_yaml_has_no_workloads_the_deploy_reports_it() -> None:
    assert owners.documents("a: [") == []


def test_an_hpa_of_the_manifests_owns_the_replicas_of_the_workload_it_targets() -> None:
    documents = owners.documents(DEPLOYMENT + "---\n" + HPA)
    found = owners.known(owners.workloads(documents, "ns"), owners.hpas(documents), "ns")
    assert found == (Known(WEB, "ns/web-hpa"),)
    assert found[0].rule() == {
        "path": ["spec", "replicas"],
        "type": "copy",
        "sources": ["existing", "new"],
        "resourceMatchers": [{"kindNamespaceNameMatcher": {"kind": "Deployment", "namespace": "ns", "name": "web"}}],
    }
    assert found[0].to_status() == {
        "resource": "deployment/web (apps/v1) namespace: ns",
        "path": "spec.replicas",
        "owner": "HorizontalPodAutoscaler ns/web-hpa",
        "rule": "hpa-deployment-rebase",
    }


def test_an_hpa_of_another_kind_name_or_namespace_owns_nothing() -> None:
    autoscalers = [
        hpa("a", "StatefulSet", "web"),
        hpa("b", "Deployment", "other"),
        hpa("c", "Deployment", "web", "elsewhere"),
        {"kind": "HorizontalPodAutoscaler", "metadata": {"name": "d"}, "spec": "nonsense"},
        {**hpa("e", "Deployment", "web"), "spec": {"scaleTargetRef": {"apiVersion": "x/v1", "kind": "Deployment"}}},
    ]
    assert owners.known([WEB], autoscalers, "ns") == ()


def test_the_hpas_on_the_cluster_are_listed_once_per_namespace_and_a_refused_list_has_none() -> None:
    asked: list[str | None] = []

    async def listed(rtype: Any, *, namespace: str | None = None) -> list[Obj]:
        asked.append(namespace)
        if namespace == "data":
            raise ClusterError("forbidden")
        return [hpa("web-hpa", "Deployment", "web")]

    client: Any = SimpleNamespace(cluster=SimpleNamespace(list=listed))
    found = asyncio.run(
        owners.on_cluster(client, [WEB, Workload("ReplicaSet", "ns", "rs"), Workload("X", "data", "y")])
    )
    assert asked == ["data", "ns"]
    assert owners.known([WEB], found, "ignored") == (Known(WEB, "ns/web-hpa"),)


def test_the_writer_leaves_out_the_time_and_a_field_no_manager_wrote_has_none() -> None:
    assert owners.writer(report("kube-controller-manager (Update, scale) at 2026-12-05T10:00:00Z")) == (
        "kube-controller-manager (Update, scale)"
    )
    assert owners.writer(report("drift-bot (Update)")) == "drift-bot (Update)"
    assert owners.writer(report("a mutating admission webhook (w/x); no recorded field manager")) == ""


def test_a_field_set_again_by_the_same_writer_within_the_period_is_seen_again() -> None:
    reverted = {("configmap/cm (v1) namespace: ns", "data.a"): ("drift-bot (Update)", 100.0)}
    same = report("drift-bot (Update) at 2026-12-05T10:00:00Z")
    assert owners.seen_again([same], reverted, 130.0, 60.0) == [same]
    assert owners.seen_again([same], reverted, 162.5, 60.0) == []  # slower than a period (and its slack): a sync's pace
    assert owners.seen_again([report("kubectl-edit (Update)")], reverted, 130.0, 60.0) == []  # another writer
    assert owners.seen_again([report("drift-bot (Update)", "data.b")], reverted, 130.0, 60.0) == []  # another field
    assert owners.seen_again([same], {}, 130.0, 60.0) == []  # never set back: a person's edit, reverted


def test_a_writer_as_fast_as_a_short_sync_period_is_seen_again_by_the_next_sync() -> None:
    reverted = {("configmap/cm (v1) namespace: ns", "data.a"): ("drift-bot (Update)", 100.0)}
    same = report("drift-bot (Update)")
    assert owners.seen_again([same], reverted, 101.4, 1.0) == [same]  # the next sync of a 1 s period, a sync later
    assert owners.seen_again([same], reverted, 101.6, 1.0) == []  # more than half a period late: not the next sync
    assert owners.seen_again([same], reverted, 161.5, 60.0) == [same]  # at most 2 s late at a longer period
    assert owners.seen_again([same], reverted, 162.5, 60.0) == []


@pytest.mark.parametrize(
    ("written_by", "resource", "path", "held"),
    [
        ("keda-operator (Update, scale)", "deployment/web (apps/v1) namespace: ns", "spec.replicas", True),
        (
            "kube-controller-manager (Update, scale) at 2026-12-05T10:00:00Z",
            "statefulset/db (apps/v1) namespace: ns",
            "spec.replicas",
            True,
        ),
        ("kubectl (Update, scale)", "deployment/web (apps/v1) namespace: ns", "spec.replicas", False),  # a person
        ("keda-operator (Update)", "deployment/web (apps/v1) namespace: ns", "spec.replicas", False),  # not scale
        ("keda-operator (Update, scale)", "deployment/web (apps/v1) namespace: ns", "spec.paused", False),
        ("keda-operator (Update, scale)", "configmap/cm (v1) namespace: ns", "spec.replicas", False),
    ],
)
def test_replicas_an_autoscaler_wrote_through_the_scale_subresource_are_held_at_first_sight(
    written_by: str, resource: str, path: str, held: bool
) -> None:
    found = report(written_by, path, resource)
    assert owners.seen_again([found], {}, 10.0, 60.0) == ([found] if held else [])


def test_a_held_field_gets_a_copy_rule_for_its_one_object_and_path() -> None:
    assert owners.hold_rule(report("drift-bot (Update)")) == {
        "path": ["data", "a"],
        "type": "copy",
        "sources": ["existing", "new"],
        "resourceMatchers": [{"kindNamespaceNameMatcher": {"kind": "ConfigMap", "namespace": "ns", "name": "cm"}}],
    }


def test_the_rules_are_appended_to_the_manifests_as_a_kapp_config_in_a_stable_order() -> None:
    assert owners.with_rules(DEPLOYMENT, ()) == DEPLOYMENT
    held = [Hold("b", "p", "w", "t", "d", {"path": ["b"]}), Hold("a", "p", "w", "t", "d", {"path": ["a"]})]
    rules = owners.rules([Known(WEB, "ns/h"), Known(WEB, "ns/h")], held)
    assert [r["path"] for r in rules] == [["spec", "replicas"], ["a"], ["b"]]
    documents = list(yaml.safe_load_all(owners.with_rules(DEPLOYMENT, rules)))
    assert documents[:3] == list(yaml.safe_load_all(DEPLOYMENT))
    assert documents[3] == {"apiVersion": "kapp.k14s.io/v1alpha1", "kind": "Config", "rebaseRules": list(rules)}


def test_a_sync_keeps_the_holds_of_its_desired_state_and_the_writers_it_set_back() -> None:
    old = Hold("r", "p", "w", "t", "d1", {"path": ["p"]})
    memory = Owners(held={old.key: old})
    new = Hold("r", "q", "w", "t", "d2", {"path": ["q"]})
    owners.after_sync(
        memory,
        "d2",
        (Known(WEB, "ns/h"),),
        [new],
        [report("bot (Update)"), report("x; no recorded field manager", "data.b")],
        5.0,
    )
    assert memory.cluster == (Known(WEB, "ns/h"),)
    assert memory.held == {new.key: new}  # a new desired state ended the old hold
    assert memory.reverted == {("configmap/cm (v1) namespace: ns", "data.a"): ("bot (Update)", 5.0)}


def test_holds_are_reported_in_status_and_read_back_after_a_restart() -> None:
    rule = owners.hold_rule(report("bot (Update)"))
    hold = Hold("configmap/cm (v1) namespace: ns", "data.a", "bot (Update)", "2026-12-05T10:00:00Z", "d", rule)
    status = {"fieldOwners": owners.to_status([Known(WEB, "ns/h")], [hold])}
    assert status["fieldOwners"]["knownOwners"][0]["owner"] == "HorizontalPodAutoscaler ns/h"
    assert status["fieldOwners"]["held"] == [hold.to_status()]
    assert yaml.safe_load(status["fieldOwners"]["suggestedConfig"])["rebaseRules"] == [rule]
    assert owners.read_back(status).held == {hold.key: hold}
    assert owners.read_back({"fieldOwners": {"held": [{"resource": "x"}, "junk"]}}).held == {}
    assert owners.read_back({"fieldOwners": "junk"}).held == {}


@pytest.mark.parametrize(
    "change",
    [
        {"type": "remove"},
        {"sources": [{"path": ["x"]}]},
        {"ytt": {"overlayContractV1": {"overlay.yml": "#@ load('@ytt:data', 'data')"}}},
        {"path": ["spec", {"regex": ".*"}]},
        {"path": []},
        {"path": ["spec", {"index": True}]},
        {"resourceMatchers": [{"allMatcher": {}}]},
        {"resourceMatchers": [{"kindNamespaceNameMatcher": {"kind": "Secret", "namespace": "ns", "name": 1}}]},
        {"resourceMatchers": []},
    ],
)
def test_a_rule_written_into_the_status_by_someone_else_is_not_taken(change: dict[str, Any]) -> None:
    """Anyone who may write the App's status may write `fieldOwners`: only a copy rule of the shape hold_rule makes is
    read back, never a ytt rule, a regex, or a rule matching more than one named object."""
    rule = {**owners.hold_rule(report("bot (Update)")), **change}
    item = {"resource": "r", "path": "p", "writtenBy": "bot (Update)", "since": "t", "desiredDigest": "d", "rule": rule}
    assert owners.read_back({"fieldOwners": {"held": [item]}}).held == {}
    fine = {**item, "rule": owners.hold_rule(report("bot (Update)"))}
    assert list(owners.read_back({"fieldOwners": {"held": [fine]}}).held) == [("r", "p")]
    assert owners.to_status([], []) == {}


def test_the_held_message_is_stable_so_kubectl_counts_it_on_one_event() -> None:
    hold = Hold("deployment/web (apps/v1) namespace: ns", "spec.replicas", "bot (Update)", "t1", "d", {})
    message = owners.held_message(hold)
    assert message == owners.held_message(Hold(hold.resource, hold.path, hold.writer, "t2", "d", {}))
    assert "bot (Update)" in message and "spec.replicas" in message
