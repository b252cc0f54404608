"""The App status shapes: stages, the one condition and its counters, paused, writes skipped when only times change,
kapply's reports (ghostDiffs, drift) and their messages."""

from __future__ import annotations

import re

import pytest
import yaml

from kapply import objects
from kapply.api import DriftPolicy, FieldPath, FieldReport
from kapply.controller import status as app_status
from kapply.controller.ghosts import Ghost
from kapply.diff.fields import Named
from kapply.objects import Obj

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def deployment(name: str = "web", namespace: str = "ns") -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace}}


def secret(name: str = "creds") -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "ns"}}


def outside(
    resource: Obj, path: FieldPath, desired: str, live: str, written_by: str = "kubectl (Update)"
) -> FieldReport:
    """A field as kapply.api reports it (its values already shown: tests/unit/test_api_controller_seam.py)."""
    return FieldReport(objects.describe(resource), str(path), desired, live, written_by, resource, path)


REPLICAS = FieldPath(("spec", "replicas"))
IMAGE = FieldPath(("spec", "template", "spec", "containers", Named("app"), "image"))


# Stages and output.


def test_a_stage_says_its_exit_code_and_when() -> None:
    out = app_status.Stage(0).to_status()
    assert out.keys() == {"exitCode", "updatedAt"}
    assert out["exitCode"] == 0
    assert TIME.fullmatch(out["updatedAt"])


def test_a_stage_carries_what_it_has() -> None:
    stage = app_status.Stage(
        1, stdout="out\n", stderr="err  \n", error="Fetching: failed", started_at="2026-01-01T00:00:00Z"
    )
    out = app_status.Stage.to_status(stage, finished=True)
    assert {k: v for k, v in out.items() if k != "updatedAt"} == {
        "exitCode": 1,
        "startedAt": "2026-01-01T00:00:00Z",
        "stdout": "out",
        "stderr": "err",
        "error": "Fetching: failed",
        "finished": True,
    }


def test_a_stage_without_stdout_leaves_it_out() -> None:
    out = app_status.Stage(0, stdout="the lock file").to_status(with_stdout=False)
    assert "stdout" not in out
    assert app_status.Stage(0, stdout="x").to_status(finished=False)["finished"] is False


def test_output_loses_spaces_before_line_ends_and_around_it() -> None:
    assert app_status.trimmed("\n  a  \nb\t\n\nc   \n\n") == "a\nb\n\nc"


def test_long_output_keeps_its_tail() -> None:
    text = "x" * 50 + "y" * app_status.MAX_OUTPUT
    assert app_status.trimmed(text) == "...\n" + "y" * app_status.MAX_OUTPUT
    exact = "z" * app_status.MAX_OUTPUT
    assert app_status.trimmed(exact) == exact


def test_long_stage_output_is_stored_trimmed() -> None:
    out = app_status.Stage(0, stdout="a" * (app_status.MAX_OUTPUT + 10) + "END").to_status()
    assert out["stdout"].startswith("...\n")
    assert out["stdout"].endswith("END")
    assert len(out["stdout"]) == app_status.MAX_OUTPUT + 4


# Conditions and counters.


def test_with_condition_keeps_exactly_one_condition() -> None:
    before = {"conditions": [{"type": "Reconciling", "status": "True"}, {"type": "Other"}], "fetch": {"exitCode": 0}}
    out = app_status.with_condition(before, app_status.Condition.RECONCILE_FAILED, "Fetching: boom")
    assert out["conditions"] == [{"type": "ReconcileFailed", "status": "True", "message": "Fetching: boom"}]
    assert out["friendlyDescription"] == "Reconcile failed: Fetching: boom"
    assert out["fetch"] == {"exitCode": 0}
    assert len(before["conditions"]) == 2  # not changed in place


def test_a_condition_without_message_has_none() -> None:
    out = app_status.with_condition({}, app_status.Condition.DELETING)
    assert out["conditions"] == [{"type": "Deleting", "status": "True"}]
    assert out["friendlyDescription"] == "Deleting"


def test_reconciling_replaces_the_condition_and_keeps_the_rest() -> None:
    out = app_status.reconciling({"conditions": [{"type": "ReconcileSucceeded"}], "consecutiveReconcileSuccesses": 3})
    assert out["conditions"] == [{"type": "Reconciling", "status": "True"}]
    assert out["friendlyDescription"] == "Reconciling"
    assert out["consecutiveReconcileSuccesses"] == 3


def test_success_counts_up_and_resets_failures() -> None:
    before = {"consecutiveReconcileSuccesses": 2, "consecutiveReconcileFailures": 4, "usefulErrorMessage": "old"}
    out = app_status.succeeded(before)
    assert out["consecutiveReconcileSuccesses"] == 3
    assert out["consecutiveReconcileFailures"] == 0
    assert "usefulErrorMessage" not in out
    assert out["friendlyDescription"] == "Reconcile succeeded"
    assert before["usefulErrorMessage"] == "old"
    assert app_status.succeeded({})["consecutiveReconcileSuccesses"] == 1


def test_failure_counts_up_resets_successes_and_says_what_is_useful() -> None:
    out = app_status.failed(
        {"consecutiveReconcileSuccesses": 5}, app_status.Condition.RECONCILE_FAILED, "Deploying: x", "stderr"
    )
    assert out["consecutiveReconcileFailures"] == 1
    assert out["consecutiveReconcileSuccesses"] == 0
    assert out["usefulErrorMessage"] == "stderr"
    again = app_status.failed(out, app_status.Condition.RECONCILE_FAILED, "Deploying: x", "")
    assert again["consecutiveReconcileFailures"] == 2
    assert again["usefulErrorMessage"] == "Deploying: x"  # the message when nothing more useful is known


def test_a_failed_delete_says_so() -> None:
    out = app_status.failed({}, app_status.Condition.DELETE_FAILED, "Deleting: forbidden", "forbidden")
    assert out["conditions"] == [{"type": "DeleteFailed", "status": "True", "message": "Deleting: forbidden"}]
    assert out["friendlyDescription"] == "Delete failed: Deleting: forbidden"


@pytest.mark.parametrize("condition", list(app_status.Condition))
def test_every_condition_has_a_description(condition: app_status.Condition) -> None:
    assert app_status.with_condition({}, condition)["friendlyDescription"]


def test_paused_sets_the_generation_and_description_only() -> None:
    before = {"conditions": [{"type": "ReconcileSucceeded", "status": "True"}], "observedGeneration": 1}
    out = app_status.paused(before, 4)
    assert out == {**before, "observedGeneration": 4, "friendlyDescription": "Canceled/paused"}
    assert before["observedGeneration"] == 1


# Writes skipped when only times change.


def test_statuses_differing_only_in_update_and_start_times_are_the_same() -> None:
    a = {"deploy": {"exitCode": 0, "updatedAt": "t1", "startedAt": "s1"}, "items": [{"updatedAt": "t1", "x": 1}]}
    b = {"deploy": {"exitCode": 0, "updatedAt": "t2", "startedAt": "s2"}, "items": [{"updatedAt": "t2", "x": 1}]}
    assert app_status.same_but_times(a, b)
    assert app_status.same_but_times({"fetch": {"exitCode": 0}}, {"fetch": {"exitCode": 0, "updatedAt": "t"}})


@pytest.mark.parametrize(
    "b",
    [
        {"deploy": {"exitCode": 1, "updatedAt": "t"}},
        {"deploy": {"exitCode": 0, "updatedAt": "t", "stdout": "x"}},
        {"deploy": {"exitCode": 0, "updatedAt": "t"}, "friendlyDescription": "Reconciling"},
        {"deploy": {"exitCode": 0, "updatedAt": "t", "finished": True}},
    ],
)
def test_any_other_difference_counts(b: Obj) -> None:
    assert not app_status.same_but_times({"deploy": {"exitCode": 0, "updatedAt": "t"}}, b)


def test_other_times_count_as_differences() -> None:
    a = {"ghostDiffs": {"diffs": [{"lastSeen": "t1", "firstSeen": "t0"}]}}
    b = {"ghostDiffs": {"diffs": [{"lastSeen": "t2", "firstSeen": "t0"}]}}
    assert not app_status.same_but_times(a, b)


# Reports.


def test_reports_are_set_when_there_is_something_to_report_and_dropped_otherwise() -> None:
    before = {"friendlyDescription": "Reconcile succeeded", "drift": {"policy": "warn"}, "ghostDiffs": {"diffs": []}}
    out = app_status.with_reports(before, {"drift": {}, "ghostDiffs": {"diffs": [1]}})
    assert out == {"friendlyDescription": "Reconcile succeeded", "ghostDiffs": {"diffs": [1]}}
    assert before["drift"] == {"policy": "warn"}


def test_an_entry_names_resource_path_values_and_writer() -> None:
    item = outside(deployment(), REPLICAS, "2", "5", "kube-controller-manager (Update, scale)")
    assert app_status.entry(item) == {
        "resource": "deployment/web (apps/v1) namespace: ns",
        "path": "spec.replicas",
        "desired": "2",
        "live": "5",
        "writtenBy": "kube-controller-manager (Update, scale)",
    }


def test_drift_lists_the_kept_fields_with_the_policy() -> None:
    kept = [outside(deployment(), REPLICAS, "2", "5"), outside(deployment("api"), IMAGE, "a:1", "a:2")]
    out = app_status.drift(kept, DriftPolicy.PRESERVE)
    assert out["policy"] == "preserve"
    assert [(f["resource"], f["path"]) for f in out["fields"]] == [
        ("deployment/web (apps/v1) namespace: ns", "spec.replicas"),
        ("deployment/api (apps/v1) namespace: ns", "spec.template.spec.containers[name=app].image"),
    ]
    assert app_status.drift([], DriftPolicy.WARN) == {}


def ghost(resource: Obj, path: FieldPath, recurrences: int = 1, *, sourced: bool = True) -> Ghost:
    entry = {"resource": objects.describe(resource), "path": str(path), "writtenBy": "hpa"}
    source = (resource, path) if sourced else None
    return Ghost(entry, "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", recurrences, 0, source)


def rules_of(suggested: str) -> list[Obj]:
    doc = yaml.safe_load(suggested)
    assert doc["kind"] == "Config"
    return list(doc["rebaseRules"])


def test_no_ghost_diffs_is_no_report() -> None:
    assert app_status.ghost_diffs({}, {"ghostDiffs": {"diffs": [], "suggestedConfig": "old"}}) == {}


def test_ghost_diffs_list_each_entry_with_its_counts_and_times() -> None:
    g = ghost(deployment(), REPLICAS, 3)
    out = app_status.ghost_diffs({("deployment/web", "spec.replicas"): g}, {})
    assert out["diffs"] == [
        {
            "resource": "deployment/web (apps/v1) namespace: ns",
            "path": "spec.replicas",
            "writtenBy": "hpa",
            "recurrences": 3,
            "firstSeen": "2026-01-01T00:00:00Z",
            "lastSeen": "2026-01-02T00:00:00Z",
        }
    ]


def test_the_suggested_config_keeps_the_live_value_of_every_ghost_field() -> None:
    web = deployment()
    ghosts = {("web", "replicas"): ghost(web, REPLICAS), ("web", "image"): ghost(web, IMAGE)}
    out = app_status.ghost_diffs(ghosts, {})
    assert out["suggestedConfig"].startswith("---\n")
    [rule] = rules_of(out["suggestedConfig"])  # one resource: one rule with both paths
    assert rule["type"] == "copy"
    assert rule["sources"] == ["existing", "new"]
    assert rule["paths"] == [
        ["spec", "replicas"],
        ["spec", "template", "spec", "containers", {"allIndexes": True}, "image"],
    ]
    assert rule["resourceMatchers"] == [
        {"kindNamespaceNameMatcher": {"kind": "Deployment", "namespace": "ns", "name": "web"}}
    ]


def test_entries_read_back_keep_the_previous_suggestion() -> None:
    previous = {"ghostDiffs": {"diffs": [], "suggestedConfig": "---\nthe suggestion before the restart\n"}}
    out = app_status.ghost_diffs({("web", "replicas"): ghost(deployment(), REPLICAS, sourced=False)}, previous)
    assert out["suggestedConfig"] == "---\nthe suggestion before the restart\n"
    fresh = app_status.ghost_diffs({("web", "replicas"): ghost(deployment(), REPLICAS, sourced=False)}, {})
    assert fresh["suggestedConfig"] == ""


def test_an_entry_read_back_keeps_its_rule_when_a_new_ghost_is_found() -> None:
    old = deployment("old")
    previous_rules = app_status.ghost_diffs({("old", "replicas"): ghost(old, REPLICAS)}, {})
    read_back = ghost(old, REPLICAS, sourced=False)
    found = ghost(deployment("new"), IMAGE)
    out = app_status.ghost_diffs(
        {("old", "replicas"): read_back, ("new", "image"): found}, {"ghostDiffs": previous_rules}
    )
    assert len(out["diffs"]) == 2
    matched = {str(m) for rule in rules_of(out["suggestedConfig"]) for m in rule["resourceMatchers"]}
    assert any("'old'" in m for m in matched)


# Messages.


def test_messages_list_five_fields_and_count_the_rest() -> None:
    kept = [outside(deployment(f"d{i}"), REPLICAS, "1", "2", "kubectl") for i in range(7)]
    message = app_status.drift_message(kept, DriftPolicy.WARN)
    assert message.startswith("7 field(s) changed on the cluster, left as they are (drift policy warn): ")
    assert message.count("(written by kubectl)") == 5
    assert "deployment/d4 " in message and "deployment/d5 " not in message
    assert message.endswith(" and 2 more")


def test_five_fields_are_listed_without_more() -> None:
    kept = [outside(deployment(f"d{i}"), REPLICAS, "1", "2") for i in range(5)]
    message = app_status.drift_message(kept, DriftPolicy.PRESERVE)
    assert "more" not in message
    assert message.count("; ") == 4


def test_now_is_a_utc_timestamp_in_seconds() -> None:
    assert TIME.fullmatch(app_status.now())
