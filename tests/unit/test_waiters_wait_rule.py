"""Config waitRules: observed generation and conditionMatchers, as kapp evaluates them."""

from kapply.apply.waiters import converge, failed, ok, ongoing, wait_lines, wait_state, which_children
from kapply.config.config import parse_config
from tests.e2e.harness import external_tool


def rules(*wait_rules):
    doc = {"apiVersion": "kapp.k14s.io/v1alpha1", "kind": "Config", "waitRules": list(wait_rules)}
    return parse_config(doc, "test").wait_rules


def crontab_rule(condition_matchers, supports_observed_generation=False):
    return {
        "supportsObservedGeneration": supports_observed_generation,
        "conditionMatchers": condition_matchers,
        "resourceMatchers": [{"apiVersionKindMatcher": {"apiVersion": "stable.example.com/v1", "kind": "CronTab"}}],
    }


READY_RULE = crontab_rule(
    [
        {"type": "Failed", "status": "True", "failure": True},
        {"type": "Ready", "status": "True", "success": True},
        {"type": "Progressing", "status": "True", "unblockChanges": True},
    ]
)


def crontab(conditions=(), generation=2, observed=2):
    return {
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "x", "namespace": "ns", "generation": generation},
        "spec": {"cronSpec": "* * * * */5"},
        "status": {"observedGeneration": observed, "conditions": list(conditions)},
    }


def cond(type_, status, reason, message="", **extra):
    return {"type": type_, "status": status, "reason": reason, "message": message, **extra}


def test_success_condition_makes_the_resource_ok():
    state = wait_state(crontab([cond("Ready", "True", "Reconciled", "all good")]), rules(READY_RULE))
    assert state == ok("Encountered successful condition Ready == True: Reconciled (message: all good)")


def test_failure_condition_wins_over_a_success_condition():
    conditions = [cond("Ready", "True", "Reconciled"), cond("Failed", "True", "BadSpec", "cronSpec is invalid")]
    state = wait_state(crontab(conditions), rules(READY_RULE))
    assert state == failed("Encountered failure condition Failed == True: BadSpec (message: cronSpec is invalid)")


def test_condition_with_another_status_does_not_match():
    state = wait_state(crontab([cond("Ready", "False", "Pending")]), rules(READY_RULE))
    assert state == ongoing("No failing or successful conditions found")


def test_unblocking_condition_lets_blocked_changes_proceed_without_finishing():
    state = wait_state(crontab([cond("Progressing", "True", "Started", "ignored")]), rules(READY_RULE))
    assert state == ongoing(
        "Allowing blocked changes to proceed: Encountered condition Progressing == True: Started", unblock=True
    )
    assert state.word == "ongoing"


def test_unblock_message_appears_in_the_wait_output():
    convergence = converge(crontab([cond("Progressing", "True", "")]), rules(READY_RULE))
    assert wait_lines(convergence) == [
        "ongoing: reconcile crontab/x (stable.example.com/v1) namespace: ns",
        " ^ Allowing blocked changes to proceed: Encountered condition Progressing == True: ",
    ]


def test_success_beats_unblocking():
    conditions = [cond("Progressing", "True", "Started"), cond("Ready", "True", "Reconciled")]
    assert wait_state(crontab(conditions), rules(READY_RULE)).successful


def test_rule_observed_generation_is_checked_first():
    rule = crontab_rule([{"type": "Failed", "status": "True", "failure": True}], supports_observed_generation=True)
    stale = crontab([cond("Failed", "True", "Old")], generation=3, observed=2)
    assert wait_state(stale, rules(rule)) == ongoing("Waiting for generation 3 to be observed")


def test_condition_observed_generation_must_match_the_resource_generation():
    rule = crontab_rule([{"type": "Ready", "status": "True", "success": True, "supportsObservedGeneration": True}])
    stale = crontab([cond("Ready", "True", "Reconciled", observedGeneration=1)], generation=2)
    assert wait_state(stale, rules(rule)) == ongoing("Waiting for generation 2 to be observed by status condition(s)")
    fresh = crontab([cond("Ready", "True", "Reconciled", observedGeneration=2)], generation=2)
    assert wait_state(fresh, rules(rule)).successful


def test_stale_failure_condition_is_not_a_failure():
    rule = crontab_rule(
        [
            {"type": "Ready", "status": "False", "failure": True, "supportsObservedGeneration": True},
            {"type": "Synced", "status": "True", "success": True},
        ]
    )
    conditions = [cond("Ready", "False", "Old", observedGeneration=1), cond("Synced", "True", "Done")]
    assert wait_state(crontab(conditions), rules(rule)) == ok(
        "Encountered successful condition Synced == True: Done (message: )"
    )


def test_first_matching_rule_wins():
    first = crontab_rule([{"type": "Ready", "status": "True", "success": True}])
    second = crontab_rule([{"type": "Ready", "status": "True", "failure": True}])
    assert wait_state(crontab([cond("Ready", "True", "Reconciled")]), rules(first, second)).successful


def test_wait_rule_replaces_the_built_in_waiter_and_its_children():
    rule = {
        "conditionMatchers": [{"type": "Available", "status": "True", "success": True}],
        "resourceMatchers": [{"apiGroupKindMatcher": {"apiGroup": "apps", "kind": "Deployment"}}],
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "generation": 1},
        "spec": {"replicas": 3},
        "status": {
            "observedGeneration": 1,
            "unavailableReplicas": 2,
            "conditions": [
                cond("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
            ],
        },
    }
    assert wait_state(deployment, rules(rule)) == ok(
        "Encountered successful condition Available == True: MinimumReplicasAvailable "
        "(message: Deployment has minimum availability.)"
    )
    assert which_children(deployment, rules(rule)) == ()
    assert which_children(deployment) == (("apps", "replicasets"), ("", "pods"))


def test_resource_being_deleted_ignores_wait_rules():
    deleting = crontab([cond("Ready", "True", "Reconciled")])
    deleting["metadata"]["deletionTimestamp"] = "2024-03-28T10:00:00Z"
    assert wait_state(deleting, rules(READY_RULE)) == ongoing("Deleting")


IS_DONE = """
def is_done(resource):
  state = resource.spec.state
  if state == "ready":
    return {"done": True, "successful": True, "message": "ready at " + resource.metadata.name}
  elif state == "broken":
    return {"done": True, "successful": False, "message": "broken"}
  elif state == "partly":
    return {"done": False, "unblockChanges": True, "message": "partly there"}
  end
  return {"done": False, "message": "not yet"}
end
"""


def ytt_rule(star: str) -> dict:
    return {"resourceMatchers": READY_RULE["resourceMatchers"], "ytt": {"funcContractV1": {"resource.star": star}}}


def with_state(state: str) -> dict:
    resource = crontab()
    resource["spec"] = {"state": state}
    return resource


def test_a_ytt_wait_rule_decides_through_ytt(monkeypatch):
    monkeypatch.setenv("KAPPLY_YTT", str(external_tool("ytt", "KAPPLY_YTT")))
    rule = rules(ytt_rule(IS_DONE))
    assert wait_state(with_state("ready"), rule) == ok(f"ready at {crontab()['metadata']['name']}")
    assert wait_state(with_state("broken"), rule) == failed("broken")
    assert wait_state(with_state("partly"), rule) == ongoing(
        "Allowing blocked changes to proceed: partly there", unblock=True
    )
    assert wait_state(with_state(""), rule) == ongoing("not yet")


def test_a_ytt_wait_rule_without_ytt_fails_clearly(monkeypatch, tmp_path):
    monkeypatch.setenv("KAPPLY_YTT", str(tmp_path / "no-ytt"))
    state = wait_state(crontab(), rules(ytt_rule(IS_DONE)))
    assert state.terminally_failed
    assert state.message.startswith("Error: Applying ytt wait rule: A ytt rule needs ytt: ytt is not available")


def test_a_ytt_wait_rule_that_does_not_compile_fails_with_what_ytt_said(monkeypatch):
    monkeypatch.setenv("KAPPLY_YTT", str(external_tool("ytt", "KAPPLY_YTT")))
    state = wait_state(crontab(), rules(ytt_rule("def is_done(resource):\n  return {\n")))
    assert state.terminally_failed
    assert state.message.startswith("Error: Applying ytt wait rule: ytt failed: ")
