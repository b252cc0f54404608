"""The Pod waiter: by phase; a pending or not-ready Pod says why."""

from kapply.apply.waiters import failed, ok, ongoing, wait_state
from tests.unit.waiter_objects import cond, obj


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
