"""kapp's per-kind waiters, on statuses as the API server and controllers write them."""

from kapply.apply.waiters import Word, failed, ok, ongoing, wait_state


def obj(api_version, kind, name="x", namespace="default", *, generation=1, annotations=None, **fields):
    metadata = {"name": name, "uid": f"uid-{name}"}
    if namespace:
        metadata["namespace"] = namespace
    if generation is not None:
        metadata["generation"] = generation
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}


def cond(type_, status, reason="", message="", **extra):
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2024-03-28T10:00:00Z",
        **extra,
    }


# Resources with no waiter


def test_configmap_is_ok_at_once():
    assert wait_state({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}) == ok()


def test_custom_resource_without_a_wait_rule_follows_its_standard_conditions():
    """Beyond kapp (which is done at once here): kstatus' Ready / Failed / Stalled conditions."""
    not_ready = obj("stable.example.com/v1", "CronTab", status={"conditions": [cond("Ready", "False", "Broken")]})
    assert wait_state(not_ready).word == "ongoing"
    assert "Condition Ready is not True (False): Broken" in wait_state(not_ready).message
    ready = obj("stable.example.com/v1", "CronTab", status={"conditions": [cond("Ready", "True", "Done")]})
    assert wait_state(ready) == ok()
    stalled = obj("stable.example.com/v1", "CronTab", status={"conditions": [cond("Stalled", "True", "BadSpec")]})
    assert wait_state(stalled).word == "fail"
    other = obj("stable.example.com/v1", "CronTab", status={"conditions": [cond("Synced", "False", "x")]})
    assert wait_state(other) == ok()


def test_standalone_replicaset_waits_for_its_replicas():
    """Beyond kapp (which has no ReplicaSet waiter)."""
    rs = obj("apps/v1", "ReplicaSet", status={"replicas": 2, "availableReplicas": 0, "observedGeneration": 1})
    rs["spec"] = {"replicas": 2}
    assert wait_state(rs) == ongoing("Waiting for 2 replicas to be ready")
    rs["status"] |= {"readyReplicas": 2, "availableReplicas": 2}
    assert wait_state(rs) == ok()


def test_namespace_waits_while_terminating():
    assert wait_state(obj("v1", "Namespace", status={"phase": "Active"})) == ok()
    assert wait_state(obj("v1", "Namespace", status={"phase": "Terminating"})) == ongoing("Phase is Terminating")


def test_state_words_are_kapps():
    assert ok().word == Word.OK == "ok"
    assert failed("x").word == "fail"
    assert ongoing("x").word == "ongoing"


# Deletion


def test_resource_being_deleted_waits_on_its_finalizers():
    secret = obj("v1", "Secret")
    secret["metadata"] |= {"deletionTimestamp": "2024-03-28T10:00:00Z", "finalizers": ["a.io/x", "b.io/y"]}
    assert wait_state(secret) == ongoing("Waiting on finalizers: a.io/x, b.io/y")


def test_resource_being_deleted_without_finalizers_is_deleting():
    deployment = obj("apps/v1", "Deployment", status={"observedGeneration": 1})
    deployment["metadata"]["deletionTimestamp"] = "2024-03-28T10:00:00Z"
    assert wait_state(deployment) == ongoing("Deleting")


# kapp-controller


def app(generation=1, observed=1, conditions=(), useful=None, **metadata):
    status = {"observedGeneration": observed, "conditions": list(conditions), "friendlyDescription": "x"}
    if useful is not None:
        status["usefulErrorMessage"] = useful
    resource = obj("kappctrl.k14s.io/v1alpha1", "App", generation=generation, status=status)
    resource["metadata"] |= metadata
    return resource


def test_app_waits_for_its_generation_to_be_observed():
    assert wait_state(app(generation=3, observed=2)) == ongoing("Waiting for generation 3 to be observed")


def test_app_reconciling_is_ongoing():
    assert wait_state(app(conditions=[cond("Reconciling", "True")])) == ongoing("Reconciling")


def test_app_reconcile_failure_prefers_the_useful_error_message():
    state = wait_state(
        app(
            conditions=[cond("ReconcileFailed", "True", "", "Deploying: Error (see .status.usefulErrorMessage)")],
            useful="kapp: Error: Ownership errors",
        )
    )
    assert state == failed("Reconcile failed:  (message: kapp: Error: Ownership errors)")


def test_app_delete_failure_falls_back_to_the_condition_message():
    state = wait_state(app(conditions=[cond("DeleteFailed", "True", "Failed", "Deleting: Error")]))
    assert state == failed("Delete failed: Failed (message: Deleting: Error)")


def test_app_reconcile_succeeded_is_ok():
    assert wait_state(app(conditions=[cond("ReconcileSucceeded", "True")])) == ok()


def test_app_being_deleted_is_deleting_after_its_conditions():
    deleting = app(
        conditions=[cond("ReconcileSucceeded", "True")],
        deletionTimestamp="2024-03-28T10:00:00Z",
        finalizers=["finalizers.kapp-ctrl.k14s.io/delete"],
    )
    assert wait_state(deleting) == ongoing("Waiting on finalizers: finalizers.kapp-ctrl.k14s.io/delete")


def test_package_install_and_repository_wait_like_apps():
    for kind in ("PackageInstall", "PackageRepository"):
        resource = app(conditions=[cond("ReconcileFailed", "True", "", "Fetching resources: Error")])
        resource |= {"apiVersion": "packaging.carvel.dev/v1alpha1", "kind": kind}
        assert wait_state(resource) == failed("Reconcile failed:  (message: Fetching resources: Error)")


# CustomResourceDefinition and APIService


def crd(conditions):
    return obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", namespace="", status={"conditions": conditions})


def test_crd_is_ok_once_established_and_names_accepted():
    conditions = [
        cond("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        cond("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
    ]
    assert wait_state(crd(conditions)) == ok()


def test_crd_waits_for_a_missing_condition():
    state = wait_state(crd([cond("NamesAccepted", "True", "NoConflicts")]))
    assert state == ongoing("Condition Established is not set")


def test_crd_waits_for_a_condition_that_is_not_true():
    conditions = [cond("NamesAccepted", "False", "MultipleConflicts"), cond("Established", "True", "x")]
    assert wait_state(crd(conditions)) == ongoing("Condition NamesAccepted is not True (False)")


def api_service(version, available):
    status = {"conditions": [cond("Available", available, "FailedDiscoveryCheck", "failing or missing response")]}
    return obj(f"apiregistration.k8s.io/{version}", "APIService", "v1beta1.metrics.k8s.io", "", status=status)


def test_api_service_waits_until_available():
    assert wait_state(api_service("v1", "True")) == ok()
    assert wait_state(api_service("v1beta1", "False")) == ongoing("Condition Available is not True (False)")


def test_failing_api_service_can_be_ignored():
    state = wait_state(api_service("v1", "False"), ignore_failing_api_services=True)
    assert state == ok("Ignoring (Condition Available is not True (False))")


# Pod


def pod(phase, conditions=(), container_statuses=None, init_statuses=None):
    status = {"phase": phase, "conditions": list(conditions), "qosClass": "BestEffort"}
    if container_statuses is not None:
        status["containerStatuses"] = container_statuses
    if init_statuses is not None:
        status["initContainerStatuses"] = init_statuses
    return obj("v1", "Pod", "web-7c9d8-x2x7k", generation=None, status=status)


def waiting_container(name, reason, message=None):
    waiting = {"reason": reason} | ({"message": message} if message else {})
    return {
        "name": name,
        "ready": False,
        "restartCount": 0,
        "image": "nginx",
        "imageID": "",
        "state": {"waiting": waiting},
    }


def test_pending_pod_shows_the_waiting_container_reason():
    state = wait_state(pod("Pending", [cond("PodScheduled", "True")], [waiting_container("web", "ContainerCreating")]))
    assert state == ongoing("Pending: ContainerCreating")


def test_pending_pod_shows_image_pull_errors_with_their_message():
    message = 'Back-off pulling image "nginx:nope"'
    state = wait_state(pod("Pending", container_statuses=[waiting_container("web", "ImagePullBackOff", message)]))
    assert state == ongoing(f"Pending: ImagePullBackOff (message: {message})")


def test_pending_pod_shows_init_containers_first():
    state = wait_state(
        pod(
            "Pending",
            container_statuses=[waiting_container("web", "PodInitializing")],
            init_statuses=[waiting_container("init", "CrashLoopBackOff", "back-off 10s restarting failed container")],
        )
    )
    assert state == ongoing("Pending: CrashLoopBackOff (message: back-off 10s restarting failed container)")


def test_unschedulable_pod_says_why():
    message = "0/1 nodes are available: 1 Insufficient cpu."
    state = wait_state(pod("Pending", [cond("PodScheduled", "False", "Unschedulable", message)]))
    assert state == ongoing(f"Pending: Unschedulable (message: {message})")


def test_pending_pod_with_no_detail_is_just_pending():
    assert wait_state(pod("Pending")) == ongoing("Pending")


def test_running_pod_is_ok_once_initialized_ready_and_scheduled():
    conditions = [cond(t, "True") for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]
    assert wait_state(pod("Running", conditions)) == ok()


def test_running_pod_that_is_not_ready_is_ongoing():
    conditions = [
        cond("Initialized", "True"),
        cond("Ready", "False", "ContainersNotReady", "containers with unready status: [web]"),
        cond("PodScheduled", "True"),
    ]
    assert wait_state(pod("Running", conditions)) == ongoing("Condition Ready is not True (False)")


def test_finished_pods():
    assert wait_state(pod("Succeeded")) == ok()
    assert wait_state(pod("Failed")) == failed("Phase is failed")
    assert wait_state(pod("Unknown")) == failed("Phase is unknown")
    assert wait_state(pod("")) == ongoing("Undetermined phase")


# Service


def service(spec, status=None):
    return obj("v1", "Service", "web", generation=None, spec=spec, status=status or {"loadBalancer": {}})


def test_cluster_ip_service_is_ok_once_it_has_an_ip():
    assert wait_state(service({"type": "ClusterIP", "clusterIP": "10.96.12.4"})) == ok()
    assert wait_state(service({"type": "ClusterIP", "clusterIP": ""})) == ongoing("ClusterIP is empty")


def test_headless_and_external_name_services_are_ok():
    assert wait_state(service({"type": "ClusterIP", "clusterIP": "None"})) == ok()
    assert wait_state(service({"type": "ExternalName", "externalName": "example.com"})) == ok("External service")


def test_load_balancer_service_waits_for_an_ingress():
    spec = {"type": "LoadBalancer", "clusterIP": "10.96.12.4"}
    assert wait_state(service(spec)) == ongoing("Load balancer ingress is empty")
    assert wait_state(service(spec, {"loadBalancer": {"ingress": [{"ip": "172.18.0.5"}]}})) == ok()


# Deployment


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


# DaemonSet


def daemon_set(**status):
    base = {
        "observedGeneration": 1,
        "currentNumberScheduled": 3,
        "desiredNumberScheduled": 3,
        "numberReady": 3,
        "numberAvailable": 3,
        "updatedNumberScheduled": 3,
        "numberMisscheduled": 0,
    }
    return obj("apps/v1", "DaemonSet", "agent", status=base | status)


def test_rolled_out_daemon_set_is_ok():
    assert wait_state(daemon_set()) == ok()


def test_daemon_set_waits_for_updated_pods_to_be_scheduled_then_available():
    assert wait_state(daemon_set(observedGeneration=0)) == ongoing("Waiting for generation 1 to be observed")
    assert wait_state(daemon_set(updatedNumberScheduled=1)) == ongoing("Waiting for 2 updated pods to be scheduled")
    state = wait_state(daemon_set(numberAvailable=2, numberUnavailable=1))
    assert state == ongoing("Waiting for 1 unavailable pods")


# Job and CronJob


def job(**status):
    return obj("batch/v1", "Job", "migrate", status={"startTime": "2024-03-28T10:00:00Z", **status})


def test_running_job_reports_its_counts():
    assert wait_state(job(active=1)) == ongoing("Waiting to complete (1 active, 0 failed, 0 succeeded)")
    assert wait_state(job(active=1, failed=2)) == ongoing("Waiting to complete (1 active, 2 failed, 0 succeeded)")


def test_completed_job_is_ok():
    state = wait_state(job(succeeded=1, conditions=[cond("Complete", "True")], completionTime="2024-03-28T10:01:00Z"))
    assert state == ok("Completed")


def test_failed_job_fails_with_its_reason():
    conditions = [cond("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]
    state = wait_state(job(failed=7, conditions=conditions))
    assert state == failed("Failed with reason BackoffLimitExceeded: Job has reached the specified backoff limit")


def test_cron_job_of_any_version_is_ok_at_once():
    for version in ("batch/v1", "batch/v1beta1"):
        assert wait_state(obj(version, "CronJob", "nightly", status={"active": [{"name": "nightly-1"}]})) == ok()


# StatefulSet


def stateful_set(replicas=3, partition=None, **status):
    spec = {"replicas": replicas, "serviceName": "db", "updateStrategy": {"type": "RollingUpdate"}}
    if partition is not None:
        spec["updateStrategy"]["rollingUpdate"] = {"partition": partition}
    base = {
        "observedGeneration": 1,
        "replicas": replicas,
        "readyReplicas": replicas,
        "currentReplicas": replicas,
        "updatedReplicas": replicas,
        "availableReplicas": replicas,
    }
    return obj("apps/v1", "StatefulSet", "db", spec=spec, status=base | status)


def test_rolled_out_stateful_set_is_ok():
    assert wait_state(stateful_set()) == ok()


def test_stateful_set_waits_for_updates_then_readiness_then_deletions():
    assert wait_state(stateful_set(updatedReplicas=1)) == ongoing("Waiting for 2 replicas to be updated")
    assert wait_state(stateful_set(readyReplicas=2)) == ongoing("Waiting for 1 replicas to be ready")


def test_stateful_set_scaling_down_waits_for_deletions():
    scaling_down = stateful_set(replicas=1)
    scaling_down["status"]["replicas"] = 3
    assert wait_state(scaling_down) == ongoing("Waiting for 2 replicas to be deleted")


def test_stateful_set_partition_only_waits_for_the_replicas_it_updates():
    assert wait_state(stateful_set(replicas=5, partition=3, updatedReplicas=2)) == ok()
    state = wait_state(stateful_set(replicas=5, partition=3, updatedReplicas=1))
    assert state == ongoing("Waiting for 1 replicas to be updated (updating only 2 of 5 total)")


def test_stateful_set_without_replicas_fails():
    broken = stateful_set()
    del broken["spec"]["replicas"]
    assert wait_state(broken) == failed("Error: Failed to find spec.replicas")


def test_a_running_pod_that_is_not_ready_says_why():
    pod = obj(
        "v1",
        "Pod",
        generation=None,
        status={
            "phase": "Running",
            "conditions": [
                cond("Initialized", "True"),
                cond("Ready", "False", "ContainersNotReady"),
                cond("PodScheduled", "True"),
            ],
            "containerStatuses": [
                {
                    "name": "app",
                    "state": {
                        "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}
                    },
                }
            ],
        },
    )
    assert wait_state(pod) == ongoing(
        "Condition Ready is not True (False): CrashLoopBackOff (message: back-off 40s restarting failed container)"
    )


def test_claims_fail_when_lost_and_are_not_waited_on_while_pending():
    assert wait_state(obj("v1", "PersistentVolumeClaim", status={"phase": "Bound"})) == ok()
    assert wait_state(obj("v1", "PersistentVolumeClaim", status={"phase": "Lost"})) == failed("Phase is Lost")
    assert wait_state(obj("v1", "PersistentVolumeClaim", status={"phase": "Pending"})).done
