"""A delete that did not happen is reported: kapply deletes with the UID of the object it planned to delete as a
precondition, and an object that replaced it under the same name survives and fails the run (issue 11, "reports
success for a delete that did not happen")."""

from __future__ import annotations

import json
import re

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap

from tests.e2e.faults import KapplyProcess
from tests.e2e.harness import Cluster, KapplyRunner

pytestmark = pytest.mark.e2e

APP = "replaced"


def test_an_object_replaced_after_the_plan_survives_the_delete_and_fails_it(
    cluster: Cluster, kapply: KapplyRunner, kube: Client, namespace: str
):
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: doomed\ndata:\n  v: ours\n"
    kapply.deploy(namespace, manifest, app=APP)
    with KapplyProcess(
        cluster.kubeconfig, "delete", "-a", APP, "-n", namespace, "--wait-check-interval=0.5s"
    ) as delete:
        delete.wait_for_output(r"Continue\? \[yN\]: $")
        assert re.search(r"^\S+\s+doomed\s+ConfigMap\s+\S+\s+delete\b", delete.stdout, re.M), delete.stdout
        planned_uid = kube.get(ConfigMap, "doomed", namespace=namespace).metadata.uid
        kube.delete(ConfigMap, "doomed", namespace=namespace)
        replacement = kube.create(
            ConfigMap.from_dict({"metadata": {"name": "doomed"}, "data": {"v": "someone else's"}}), namespace=namespace
        )
        delete.answer("y\n")
        assert delete.finish() == 1, delete.stdout + delete.stderr
    assert "Traceback" not in delete.stderr and "ok: delete" not in delete.stdout, delete.stdout + delete.stderr
    assert "delete configmap/doomed (v1) namespace: " + namespace in delete.stderr, delete.stderr
    assert f"the UID in the precondition ({planned_uid}) does not match" in delete.stderr, delete.stderr
    survivor = kube.get(ConfigMap, "doomed", namespace=namespace)
    assert survivor.metadata.uid == replacement.metadata.uid and survivor.data == {"v": "someone else's"}
    record = kube.get(ConfigMap, APP, namespace=namespace)
    last_change = json.loads(record.data["spec"])["lastChange"]
    assert last_change["description"] == "delete" and last_change["successful"] is False, last_change


def test_a_delete_starts_with_the_objects_whose_dependents_it_waits_for(
    kapply: KapplyRunner, kube: Client, namespace: str
):
    """The controller-manager removes a Service's EndpointSlices only once the Service is gone, and the delete waits
    for them (kapp's transient resources): with one delete at a time, the Service is still deleted first."""
    from lightkube.resources.discovery_v1 import EndpointSlice

    from tests.e2e.harness import eventually

    configmaps = "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n" for i in range(4))
    service = (
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}], selector: {a: b}}\n"
    )
    kapply.deploy(namespace, configmaps + service, app="owners")
    eventually(lambda: list(kube.list(EndpointSlice, namespace=namespace)), what="the Service's EndpointSlice")
    result = kapply("delete", "-a", "owners", "-n", namespace, "-y", "--apply-concurrency=1")
    assert result.returncode == 0, result.stderr
    applied = re.findall(r"^\S*\s*delete (\w+)/(\S+)", result.stdout + result.stderr, re.M)
    assert applied[:1] == [("service", "web")], result.stdout
    assert sorted(applied[1:]) == [("configmap", f"c{i}") for i in range(4)], result.stdout
    assert re.search(r"ok: delete endpointslice/web-", result.stdout + result.stderr), result.stdout


def test_a_delete_removes_the_garbage_of_what_it_deleted_without_waiting_for_the_collector(
    cluster: Cluster, kube: Client, namespace: str
):
    """The controller-manager's garbage collector deletes a deleted Service's EndpointSlices at ~20 a second (its
    client's rate limit): with 100 Services it lags seconds behind. kapply deletes, itself, what the delete waits
    on whose every owner it deleted and saw gone, each with the UID precondition of the object it saw."""
    import asyncio
    from typing import Any

    from lightkube.resources.discovery_v1 import EndpointSlice

    import kapply as api
    from tests.e2e.harness import eventually

    count = 100
    services = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": f"s{i}"},
            "spec": {"ports": [{"port": 80}], "selector": {"a": f"b{i}"}},
        }
        for i in range(count)
    ]

    def slices() -> dict[str, str]:
        return {s.metadata.name: s.metadata.uid for s in kube.list(EndpointSlice, namespace=namespace)}

    before: dict[str, str] = {}

    async def scenario() -> list[tuple[str, Any]]:
        async with api.AsyncClient(cluster.kubeconfig, namespace=namespace) as k:
            await k.deploy("garbage", resources=services)
            eventually(lambda: len(slices()) == count, what=f"{count} EndpointSlices")
            before.update(slices())
            sent: list[tuple[str, Any]] = []
            request = k.cluster.request

            async def recorded(method: str, path: str, **kwargs: Any) -> Any:
                if method == "DELETE" and "/endpointslices/" in path:
                    sent.append((path, kwargs.get("body")))
                return await request(method, path, **kwargs)

            k.cluster.request = recorded  # type: ignore[method-assign]
            assert await k.delete("garbage")
            return sent

    sent = asyncio.run(scenario())
    assert slices() == {}
    assert len(sent) >= count // 2, f"kapply deleted {len(sent)} of {count} EndpointSlices itself"
    for path, body in sent:
        name = path.rsplit("/", 1)[1]
        assert body["preconditions"] == {"uid": before[name]}, (path, body)
