"""The Deployment waiter, with and without kapp's minimum-replicas annotation."""

from kapply.apply.waiters import failed, ok, ongoing, wait_state
from tests.unit.waiter_objects import MINIMUM, REVISION, cond, obj, replica_set, revisioned_deployment


def deployment(status, replicas=3, generation=2, annotations=None):
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}}
    return obj("apps/v1", "Deployment", "web", generation=generation, annotations=annotations, spec=spec, status=status)


def rolled_out(replicas=3, **overrides):
    return {
        "observedGeneration": 2,
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [
            cond("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
            cond(
                "Progressing", "True", "NewReplicaSetAvailable", 'ReplicaSet "web-7c9d8" has successfully progressed.'
            ),
        ],
        **overrides,
    }


def test_rolled_out_deployment_is_ok():
    assert wait_state(deployment(rolled_out())) == ok()


def test_deployment_waits_for_its_generation():
    assert wait_state(deployment(rolled_out(observedGeneration=1))) == ongoing(
        "Waiting for generation 2 to be observed"
    )


def test_deployment_past_its_progress_deadline_fails():
    status = rolled_out(
        unavailableReplicas=1,
        conditions=[
            cond(
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                'ReplicaSet "web-7c9d8" has timed out progressing.',
            )
        ],
    )
    assert wait_state(deployment(status)) == failed(
        'Deployment is not progressing: ProgressDeadlineExceeded (message: ReplicaSet "web-7c9d8" has timed out '
        "progressing.)"
    )


def test_deployment_with_replica_failure_keeps_waiting():
    message = 'pods "web-7c9d8-" is forbidden: exceeded quota: compute'
    status = rolled_out(readyReplicas=0, conditions=[cond("ReplicaFailure", "True", "FailedCreate", message)])
    state = wait_state(deployment(status))
    assert state == ongoing(f"Deployment has encountered replica failure: FailedCreate (message: {message})")
    assert state.word == "ongoing"


def test_deployment_waits_for_unavailable_replicas():
    status = rolled_out(readyReplicas=1, availableReplicas=1, unavailableReplicas=2)
    assert wait_state(deployment(status)) == ongoing("Waiting for 2 unavailable replicas")


def test_deployment_waits_for_replicas_to_be_ready():
    status = rolled_out(readyReplicas=1, availableReplicas=1)
    assert wait_state(deployment(status)) == ongoing("Waiting for 2/3 replicas to be ready")


def test_minimum_replicas_annotation_is_ignored_without_children():
    annotated = deployment(
        rolled_out(unavailableReplicas=2),
        annotations={"kapp.k14s.io/apps-v1-deployment-wait-minimum-replicas-available": "1"},
    )
    assert wait_state(annotated) == ongoing("Waiting for 2 unavailable replicas")


# kapp.k14s.io/apps-v1-deployment-wait-minimum-replicas-available


def test_minimum_replicas_is_reached_on_the_latest_replica_set():
    parent = revisioned_deployment({"unavailableReplicas": 2, "availableReplicas": 1}, annotations={MINIMUM: "1"})
    children = [replica_set("web-7c9d8", "2", available=1), replica_set("web-5f6b7", "1", available=0)]
    assert wait_state(parent, children=children) == ok()


def test_minimum_replicas_waits_on_the_latest_replica_set_not_older_ones():
    parent = revisioned_deployment({"unavailableReplicas": 3}, replicas=4, annotations={MINIMUM: "2"})
    children = [replica_set("web-7c9d8", "2", available=0, replicas=4), replica_set("web-5f6b7", "1", available=4)]
    state = wait_state(parent, children=children)
    assert state == ongoing("Waiting for at least 2 available replicas (currently 0 available)")


def test_minimum_replicas_as_a_percentage_rounds_down_but_needs_at_least_one():
    children = [replica_set("web-7c9d8", "2", available=1, replicas=10)]
    half = revisioned_deployment({"unavailableReplicas": 9}, replicas=10, annotations={MINIMUM: "50%"})
    assert wait_state(half, children=children) == ongoing(
        "Waiting for at least 4 available replicas (currently 1 available)"
    )
    tiny = revisioned_deployment({"unavailableReplicas": 9}, replicas=10, annotations={MINIMUM: "5%"})
    assert wait_state(tiny, children=children) == ok()


def test_minimum_replicas_above_spec_replicas_is_capped():
    parent = revisioned_deployment({"unavailableReplicas": 1}, replicas=2, annotations={MINIMUM: "5"})
    state = wait_state(parent, children=[replica_set("web-7c9d8", "2", available=1, replicas=2)])
    assert state == ongoing("Waiting for at least 1 available replicas (currently 1 available)")


def test_minimum_replicas_waits_for_the_replica_set_generation():
    parent = revisioned_deployment({}, annotations={MINIMUM: "1"})
    children = [replica_set("web-7c9d8", "2", available=3, generation=2, observed=1)]
    assert wait_state(parent, children=children) == ongoing("Waiting for generation 2 to be observed")


def test_minimum_replicas_with_a_bad_value_fails():
    parent = revisioned_deployment({}, annotations={MINIMUM: "half"})
    state = wait_state(parent, children=[replica_set("web-7c9d8", "2", available=3)])
    assert state == failed(f'Error: Failed to parse {MINIMUM}: strconv.Atoi: parsing "half": invalid syntax')


def test_minimum_replicas_without_the_latest_replica_set_fails():
    parent = revisioned_deployment({}, revision="3", annotations={MINIMUM: "1"})
    state = wait_state(parent, children=[replica_set("web-7c9d8", "2", available=3)])
    assert state == failed(
        "Error: Failed to find latest replicaset: "
        "Expected to find replica set (rev 3) in associated resources but did not"
    )


def test_minimum_replicas_without_a_revision_annotation_fails():
    parent = revisioned_deployment({}, annotations={MINIMUM: "1"})
    del parent["metadata"]["annotations"][REVISION]
    state = wait_state(parent, children=[replica_set("web-7c9d8", "2", available=3)])
    assert state == failed(f"Error: Failed to find latest replicaset: Expected to find '{REVISION}' but did not")
