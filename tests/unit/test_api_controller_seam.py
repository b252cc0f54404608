"""What kapply.api gives the controller and the packaging layer (docs/api.md, "For controllers"): manifests as text,
the plan's resource types, the "still current" check, drift and ghost diffs from one call (values masked as kapp
masks them), the suggested rebase rules, the app record read and its names."""

from __future__ import annotations

import asyncio
import io
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from kapply import deploy as deploy_pipeline
from kapply import objects
from kapply.api import AsyncClient, FieldReport, Transcript, ghost_diffs, rebase_config, record_names
from kapply.config.config import Config
from kapply.diff import ghost
from kapply.diff.attribution import OutsideField
from kapply.diff.change import Change, Op
from kapply.diff.drift import DriftPolicy
from kapply.diff.fields import ABSENT, FieldOwnership, FieldPath, Named, Operation
from kapply.diff.ghost import FieldDrift
from kapply.errors import ManifestError
from kapply.objects import Obj
from kapply.resources.cluster import Discovery, ResourceType
from tests.unit.controller_changes import change, cm, plan
from tests.unit.fake_cluster import FakeCluster

CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True, frozenset({"get", "list"}))
DEPLOYMENTS = ResourceType("apps", "v1", "Deployment", "deployments", True, frozenset({"get", "list"}))
REPLICAS = FieldPath(("spec", "replicas"))
IMAGE = FieldPath(("spec", "template", "spec", "containers", Named("app"), "image"))


def client(cluster: Any) -> AsyncClient:
    """An AsyncClient whose requests go to `cluster` (a FakeCluster)."""
    cluster = cluster or SimpleNamespace()
    cluster.namespace = "ns"
    made = AsyncClient.__new__(AsyncClient)
    made.cluster, made._namespace, made._target = cluster, "ns", None
    return made


# Manifests as text.


def test_manifests_given_as_text_are_read_as_kapp_reads_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    sources: list[deploy_pipeline.Source] = []

    async def planned(cluster: Any, app: str, source: deploy_pipeline.Source, *args: Any, **kwargs: Any) -> str:
        sources.append(source)
        return "the plan"

    monkeypatch.setattr(deploy_pipeline, "plan", planned)
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: é\n---\nkind: List\nitems: [{kind: Secret}]\n"
    assert asyncio.run(client(None).plan_deploy("web", manifests=text)) == "the plan"  # type: ignore[comparison-overlap]
    [source] = sources
    docs = source.documents()
    assert [(d.obj.get("kind"), d.origin) for d in docs] == [
        ("ConfigMap", "stdin doc 1"),
        ("Secret", "stdin doc 2 item 0"),
    ]  # the names kapp-controller's `kapp deploy -f -` gives them
    assert docs[0].obj["metadata"]["name"] == "é"  # read as the bytes YAML decodes, as a file's


def test_manifests_as_text_and_stdin_both_are_refused() -> None:
    with pytest.raises(ManifestError, match="either manifests or stdin"):
        asyncio.run(client(None).plan_deploy("web", manifests="", stdin=io.StringIO("")))


# The plan's resource types.


def test_a_plans_types_are_each_at_its_groups_preferred_version_once() -> None:
    v1beta1 = ResourceType("apps", "v1beta1", "Deployment", "deployments", True, frozenset({"list"}))
    discovery = Discovery((CONFIGMAPS, DEPLOYMENTS, v1beta1))
    used = frozenset({("", "v1", "ConfigMap"), ("apps", "v1beta1", "Deployment"), ("apps", "v1", "Deployment")})
    types = client(None).resource_types(plan(discovery=discovery, used=used))
    assert sorted(t.kind + "/" + t.version for t in types) == ["ConfigMap/v1", "Deployment/v1"]


# Still current.


def live(name: str, version: str, uid: str = "") -> Obj:
    obj = cm("2", name)
    obj["metadata"].update(uid=uid or f"uid-{name}", resourceVersion=version)
    return obj


def changed(name: str, version: str, op: Op = Op.UPDATE) -> Change:
    return Change(op, objects.key_of(cm("1", name)), cm("1", name), live(name, version), None, None, None)


def still_current(planned: Any, stored: list[Obj]) -> tuple[bool, list[tuple[str, str, str]]]:
    cluster = FakeCluster(Discovery((CONFIGMAPS,)))
    for obj in stored:
        cluster.objects[("", "ConfigMap", "ns", obj["metadata"]["name"])] = obj
    planned.discovery = cluster._discovery
    return asyncio.run(client(cluster).still_current(planned)), cluster.log


def test_a_plan_stands_when_each_object_it_changes_is_still_the_version_it_saw() -> None:
    current, requests = still_current(plan(changed("a", "7"), drifted=()), [live("a", "7")])
    assert current and requests == [("get", "ConfigMap", "a")]  # one confirming read


def test_the_objects_checked_are_those_updated_deleted_or_drifted_once_each() -> None:
    added = Change(Op.ADD, objects.key_of(cm("1", "new")), cm("1", "new"), None, None, None, None)
    planned = plan(changed("a", "1"), changed("b", "2", Op.DELETE), added, drifted=(changed("a", "1"),))
    current, requests = still_current(planned, [live("a", "1"), live("b", "2")])
    assert current and sorted(requests) == [("get", "ConfigMap", "a"), ("get", "ConfigMap", "b")]


@pytest.mark.parametrize(
    "stored",
    [[live("a", "8")], [], [live("a", "7", uid="made-anew")]],
    ids=["changed since", "deleted since", "deleted and made anew"],
)
def test_a_plan_from_a_cache_that_lagged_does_not_stand(stored: list[Obj]) -> None:
    assert still_current(plan(changed("a", "7"), drifted=()), stored)[0] is False


def test_a_plan_that_touches_nothing_existing_stands_without_a_request() -> None:
    added = Change(Op.ADD, objects.key_of(cm("1", "new")), cm("1", "new"), None, None, None, None)
    assert still_current(plan(added, drifted=()), []) == (True, [])


# Ghost diffs in a plan.


def test_ghost_diffs_are_the_updates_of_a_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    explained: list[tuple[Obj, Obj, Obj, Obj | None]] = []

    def explain(left: Obj, right: Obj, live: Obj, desired: Obj | None = None) -> list[str]:
        explained.append((left, right, live, desired))
        return [f"field of {objects.name(desired or right)}"]

    monkeypatch.setattr(ghost, "explain", explain)
    update = change(Op.UPDATE, "updated")
    found = ghost_diffs(
        plan(
            change(Op.ADD, "added", left=False, existing=False),
            update,
            change(Op.DELETE, "deleted", right=False),
            change(Op.KEEP, "kept"),
            change(Op.NOOP, "noop"),
            change(Op.EXISTS, "exists"),
        )
    )
    assert found == [(update, ("field of updated",))]  # type: ignore[comparison-overlap]
    assert explained == [(update.left, update.right, update.existing, update.new)]


@pytest.mark.parametrize(("left", "right", "existing"), [(False, True, True), (True, False, True), (True, True, False)])
def test_an_update_missing_a_side_is_no_ghost_diff(left: bool, right: bool, existing: bool) -> None:
    assert ghost_diffs(plan(change(Op.UPDATE, left=left, right=right, existing=existing))) == []


def test_a_ghost_diff_names_the_fields_the_update_sets_back() -> None:
    [(_, fields)] = ghost_diffs(plan(change(Op.UPDATE)))
    assert [str(f.path) for f in fields] == ["data.a"]
    assert (fields[0].desired, fields[0].live) == ("1", "2")


def test_a_plan_without_updates_has_no_ghost_diffs() -> None:
    assert ghost_diffs(plan()) == []
    assert ghost_diffs(plan(change(Op.ADD, left=False, existing=False))) == []


# Drift and ghost diffs from one call.

KUBECTL = FieldOwnership("kubectl-edit", Operation.UPDATE, None, "", "v1", frozenset({FieldPath(("data", "a"))}))


def drifted(name: str) -> tuple[Change, tuple[FieldDrift, ...]]:
    c = change(Op.KEEP, name)
    return c, (FieldDrift(FieldPath(("data", "a")), "1", "2", KUBECTL),)


def outside_fields(policy: DriftPolicy, *, ghosts: bool, config: Config) -> tuple[Any, list[str]]:
    new, existing = cm("1", "updated"), cm("2", "updated")
    existing["metadata"]["managedFields"] = [
        {
            "manager": "kubectl-edit",
            "operation": "Update",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}}},
        }
    ]
    update = Change(Op.UPDATE, objects.key_of(new), new, existing, new, cm("2", "updated"), new)
    planned = plan(
        update,
        options=SimpleNamespace(drift_policy=policy),
        config=config,
        discovery=Discovery((CONFIGMAPS,)),
        outside_changes=lambda: [drifted("kept")],
    )
    cluster = FakeCluster(Discovery((CONFIGMAPS,)))
    found = asyncio.run(client(cluster).outside_fields(planned, ghosts=ghosts))
    return found, [verb for verb, _, _ in cluster.log]


def test_drift_and_ghost_diffs_come_from_one_call_each_with_its_writer(config: Config) -> None:
    found, requests = outside_fields(DriftPolicy.WARN, ghosts=True, config=config)
    assert [(f.resource, f.path, f.desired, f.live, f.written_by) for f in found.drift] == [
        ("configmap/kept (v1) namespace: ns", "data.a", '"1"', '"2"', "kubectl-edit (Update)")
    ]
    assert [(f.resource, f.path, f.written_by) for f in found.ghosts] == [
        ("configmap/updated (v1) namespace: ns", "data.a", "kubectl-edit (Update)")
    ]
    assert found.ghosts[0].obj["metadata"]["name"] == "updated" and found.ghosts[0].field == FieldPath(("data", "a"))
    assert requests == []  # each field has a manager: no webhook to look for


def test_enforce_leaves_no_drift_and_ghosts_are_found_only_when_asked(config: Config) -> None:
    found, _ = outside_fields(DriftPolicy.ENFORCE, ghosts=False, config=config)
    assert (found.drift, found.ghosts) == ((), ())
    found, _ = outside_fields(DriftPolicy.PRESERVE, ghosts=False, config=config)
    assert (len(found.drift), found.ghosts) == (1, ())


def secret() -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "ns"}}


def reported(resource: Obj, path: FieldPath, desired: Any, live: Any, config: Config) -> FieldReport:
    c = Change(Op.UPDATE, objects.key_of(resource), resource, resource, resource, resource, resource)
    return FieldReport.of(OutsideField(c, FieldDrift(path, desired, live, None), "kubectl (Update)"), config)


def test_a_reported_field_never_shows_a_secrets_values(config: Config) -> None:
    out = reported(secret(), FieldPath(("data", "password")), "c2VjcmV0", "b3RoZXI=", config)
    assert out.desired == out.live == "<-- value not shown"


def test_a_reported_value_is_json_cut_at_80_characters_and_an_absent_one_none(config: Config) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"}}
    out = reported(deployment, REPLICAS, "x" * 100, ABSENT, config)
    assert (len(out.desired), out.desired[-3:], out.live) == (80, "...", "(none)")
    assert (out.resource, out.path, out.written_by) == (
        "deployment/web (apps/v1) namespace: ns",
        "spec.replicas",
        "kubectl (Update)",
    )


# The suggested rebase rules.


def test_the_rebase_config_keeps_the_live_value_of_each_field_and_adds_the_rules_given() -> None:
    web = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"}}
    old_rule = {"path": ["data"], "type": "copy", "sources": ["existing", "new"], "resourceMatchers": []}
    text = rebase_config([(web, [REPLICAS, IMAGE])], [old_rule])
    assert text.startswith("---\n")
    doc = yaml.safe_load(text)
    assert doc["kind"] == "Config"
    [rule, kept] = doc["rebaseRules"]
    assert rule["paths"] == [
        ["spec", "replicas"],
        ["spec", "template", "spec", "containers", {"allIndexes": True}, "image"],
    ]
    assert kept == old_rule
    assert yaml.safe_load(rebase_config([(web, [REPLICAS, IMAGE])], [rule]))["rebaseRules"] == [rule]  # not twice


# The app record.


def test_an_apps_record_has_kapps_two_names() -> None:
    assert record_names("repo.pkgr") == {"repo.pkgr", "repo.pkgr.apps.k14s.io"}


def test_find_app_is_none_without_a_record_and_the_record_with_one() -> None:
    configmaps = ResourceType("", "v1", "ConfigMap", "configmaps", True, frozenset({"get", "list"}))
    cluster = FakeCluster(Discovery((configmaps,)))
    assert asyncio.run(client(cluster).find_app("web")) is None
    cluster.objects[("", "ConfigMap", "ns", "web")] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"kapp.k14s.io/is-app": ""}},
        "data": {"spec": '{"labelKey":"kapp.k14s.io/app","labelValue":"1"}'},
    }
    app = asyncio.run(client(cluster).find_app("web"))
    assert app is not None and (app.name, app.namespace, app.meta.label_value) == ("web", "ns", "1")


# kapp's output as text.


def test_a_transcript_holds_kapps_output_as_it_grows() -> None:
    out = Transcript()
    out.line("Target cluster 'https://127.0.0.1:1'")
    progress = out.progress()
    progress.section("applying 1 changes [0/1 done]")
    so_far = out.text
    progress.line("create configmap/cm (v1) namespace: ns")
    assert out.text.startswith(so_far) and out.text != so_far  # a long deploy reports it while it grows
    out.finish()
    lines = out.text.splitlines()
    assert lines[0] == "Target cluster 'https://127.0.0.1:1'"
    assert [line.split(": ", 1)[1] for line in lines if ": " in line and line[0].isdigit()] == [
        "---- applying 1 changes [0/1 done] ----",
        "create configmap/cm (v1) namespace: ns",
    ]
    assert lines[-1] == "Succeeded"
