"""The Deployment `web` that the drift and ghost-diff tests deploy, the actors that change it behind the deployer's
back (`kubectl scale`, an HPA that keeps scaling it), and what those tests read of the controller's Apps and Events
(test_controller_drift, test_controller_drift_record, test_controller_drift_owners, test_packaging_ghost_diffs)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
from lightkube import ApiError, Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Event
from lightkube.types import PatchType

from tests.e2e.controller_harness import App, condition, status

PAUSE = "registry.k8s.io/pause:3.10"


def deployment(replicas: int, image: str = PAUSE) -> str:
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: web, image: {image}}}]}}
"""


def replicas(kube: Client, namespace: str) -> int:
    return int(kube.get(Deployment, "web", namespace=namespace).spec.replicas)


def scale(kube: Client, namespace: str, count: int) -> None:
    """What `kubectl scale` does: a write of the scale subresource by the field manager `kubectl`."""
    kube.patch(
        Deployment.Scale,
        "web",
        {"spec": {"replicas": count}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
        field_manager="kubectl",
    )


@contextmanager
def keeps_scaling(kube: Client, namespace: str, count: int) -> Iterator[None]:
    """Another actor (an HPA, say) that scales the replicas back to `count` whenever they differ (`kubectl scale`).
    Like an HPA it tries again after a failed request (a timeout on a loaded machine, a conflict with the controller's
    write): a thread that died of one would leave the replicas alone, and the controller would rightly find nothing to
    set back."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                if replicas(kube, namespace) != count:
                    scale(kube, namespace, count)
            except (ApiError, httpx2.HTTPError) as e:
                print(f"keeps_scaling: {e!r}; again")  # shown with the test's output when it fails
            stop.wait(0.2)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def set_files(kube: Client, namespace: str, name: str, files: dict[str, str]) -> int:
    """Replace the App's inline files; returns the new generation."""
    app = kube.patch(
        App, name, {"spec": {"fetch": [{"inline": {"paths": files}}]}}, namespace=namespace, patch_type=PatchType.MERGE
    )
    return int(app.metadata.generation)


def deployed(kube: Client, namespace: str, name: str, generation: int) -> bool:
    """Whether the App's `generation` was reconciled, and succeeded."""
    reported = status(kube, namespace, name)
    return reported.get("observedGeneration") == generation and condition(kube, namespace, name) == (
        "ReconcileSucceeded"
    )


def events(kube: Client, namespace: str, reason: str) -> list[Event]:
    return [e for e in kube.list(Event, namespace=namespace) if e.reason == reason]
