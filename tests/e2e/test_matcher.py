"""kapply.matcher against the real API server: for every kind, an object created from its desired state and
read back matches it; a one-field change gives a patch of exactly that field which the server applies; and
an outside change to a field desired never set is ignored in three-way mode and reverted in two-way mode."""

from __future__ import annotations

import asyncio
import base64
import copy
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from lightkube import Client, codecs
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.types import PatchType as LightkubePatchType

from kapply.matcher import (
    Matcher,
    Mode,
    PatchResult,
    PatchType,
    Schema,
    annotate,
    calculate,
    fetch_schema,
    fetch_schema_sync,
    schema_from_kubeconfig,
)
from kapply.resources.cluster import Cluster as KapplyCluster
from kapply.resources.kubeconfig import KubeconfigFlags, load
from tests.e2e.harness import Cluster, eventually

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
GROUP = "matcher.kapply.test"
Widget = create_namespaced_resource(GROUP, "v1", "Widget", "widgets")


def crd_manifest(group: str, kind: str) -> str:
    """A namespaced CRD with a keyed list (`parts`, by name) and a defaulted field in its items."""
    plural = kind.lower() + "s"
    return f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.{group}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: {plural}, singular: {kind.lower()}, kind: {kind}, listKind: {kind}List}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {{type: integer}}
              color: {{type: string}}
              parts:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {{type: string}}
                    count: {{type: integer, default: 1}}
"""


CRD = crd_manifest(GROUP, "Widget")

POD_SPEC = """
      containers:
      - name: app
        image: registry.invalid/app:1
        ports:
        - containerPort: 8080
          name: http
        resources:
          limits: {cpu: 1000m, memory: 1024Mi}
          requests: {cpu: 0.1, memory: 64Mi}
        env:
        - {name: MODE, value: production}
        - {name: EMPTY, value: ""}
        volumeMounts:
        - {name: cache, mountPath: /cache}
      volumes:
      - name: cache
        emptyDir: {}
"""


def _indent(text: str, spaces: int) -> str:
    return "\n".join((" " * spaces + line[6:]) if line.strip() else line for line in text.strip("\n").splitlines())


WORKLOAD_TEMPLATE = f"""
    metadata:
      labels: {{app: NAME}}
    spec:
{_indent(POD_SPEC, 6)}
"""


def _image(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]["containers"][0]


@dataclass(frozen=True)
class Case:
    manifest: str
    edit: Callable[[dict], None]
    expected_patch: dict
    settled: Callable[[dict], bool] = lambda obj: True


IMAGE_PATCH = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "registry.invalid/app:2"}]}}}}


def _set_image(obj: dict) -> None:
    _image(obj)["image"] = "registry.invalid/app:2"


def _observed(obj: dict) -> bool:
    return (obj.get("status") or {}).get("observedGeneration", 0) >= 1


CASES = {
    "service": Case(
        """
apiVersion: v1
kind: Service
metadata: {name: web, labels: {app: web}}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: metrics, port: 9090, targetPort: metrics}
""",
        lambda o: o["spec"]["ports"][0].update(targetPort=8081),
        {"spec": {"ports": [{"port": 80, "targetPort": 8081}]}},
    ),
    "deployment": Case(
        f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, labels: {{app: web}}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  strategy: {{type: RollingUpdate, rollingUpdate: {{maxSurge: 1}}}}
  template:{WORKLOAD_TEMPLATE.replace("NAME", "web")}
""",
        _set_image,
        IMAGE_PATCH,
        _observed,
    ),
    "statefulset": Case(
        f"""
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db, labels: {{app: db}}}}
spec:
  serviceName: db
  replicas: 1
  selector: {{matchLabels: {{app: db}}}}
  template:{WORKLOAD_TEMPLATE.replace("NAME", "db")}
  volumeClaimTemplates:
  - metadata: {{name: data}}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {{requests: {{storage: 1Gi}}}}
""",
        _set_image,
        IMAGE_PATCH,
        _observed,
    ),
    "daemonset": Case(
        f"""
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, labels: {{app: agent}}}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:{WORKLOAD_TEMPLATE.replace("NAME", "agent")}
""",
        _set_image,
        IMAGE_PATCH,
        _observed,
    ),
    "pod": Case(
        f"""
apiVersion: v1
kind: Pod
metadata: {{name: one, labels: {{app: one}}}}
spec:
  tolerations:
  - {{key: dedicated, operator: Equal, value: batch, effect: NoSchedule}}
{_indent(POD_SPEC, 2)}
""",
        lambda o: o["spec"]["containers"][0].update(image="registry.invalid/app:2"),
        {"spec": {"containers": [{"name": "app", "image": "registry.invalid/app:2"}]}},
        lambda o: (o.get("status") or {}).get("phase") == "Running",
    ),
    "configmap": Case(
        """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, labels: {app: web}}
data: {a: "1", b: text, empty: ""}
""",
        lambda o: o["data"].update(b="other"),
        {"data": {"b": "other"}},
    ),
    "secret": Case(
        """
apiVersion: v1
kind: Secret
metadata: {name: creds, labels: {app: web}}
type: Opaque
data: {user: YWRtaW4=}
stringData: {password: hunter2}
""",
        lambda o: o["stringData"].update(password="hunter3"),
        {"data": {"password": base64.b64encode(b"hunter3").decode()}},
    ),
    "ingress": Case(
        """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, labels: {app: web}}
spec:
  defaultBackend:
    service: {name: web, port: {number: 80}}
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {service: {name: web, port: {name: http}}}
""",
        lambda o: o["spec"]["defaultBackend"]["service"]["port"].update(number=8080),
        {"spec": {"defaultBackend": {"service": {"port": {"number": 8080}}}}},
    ),
    "cronjob": Case(
        f"""
apiVersion: batch/v1
kind: CronJob
metadata: {{name: nightly, labels: {{app: nightly}}}}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
{_indent(POD_SPEC, 10)}
""",
        lambda o: o["spec"].update(schedule="*/5 * * * *"),
        {"spec": {"schedule": "*/5 * * * *"}},
    ),
    "hpa": Case(
        """
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, labels: {app: web}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
""",
        lambda o: o["spec"].update(maxReplicas=6),
        {"spec": {"maxReplicas": 6}},
    ),
    "pdb": Case(
        """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, labels: {app: web}}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web, tier: front}}
""",
        lambda o: o["spec"]["selector"]["matchLabels"].update(tier="back"),
        # The server replaces a PDB's selector whole: the patch carries all of it.
        {"spec": {"selector": {"matchLabels": {"app": "web", "tier": "back"}}}},
    ),
    "custom-resource": Case(
        f"""
apiVersion: {GROUP}/v1
kind: Widget
metadata: {{name: gear, labels: {{app: web}}}}
spec:
  size: 1
  color: ""
  parts:
  - {{name: cog}}
  - {{name: axle, count: 2}}
""",
        lambda o: o["spec"].update(size=2),
        {"spec": {"size": 2}},
    ),
}


def _establish(kube: Client, manifest: str) -> str:
    """Creates a CRD (or finds it there) and waits until its kind is served; its name."""
    crd = codecs.from_dict(yaml.safe_load(manifest))
    try:
        kube.create(crd)
    except ApiError as e:
        if e.status.code != 409:
            raise
    eventually(
        lambda: any(
            c.type == "Established" and c.status == "True"
            for c in (kube.get(CustomResourceDefinition, crd.metadata.name).status.conditions or [])
        ),
        what=f"the CRD {crd.metadata.name} to be established",
    )
    return str(crd.metadata.name)


@pytest.fixture(scope="module")
def widget_crd(kube: Client) -> Iterator[None]:
    name = _establish(kube, CRD)
    yield
    kube.delete(CustomResourceDefinition, name)


@pytest.fixture(scope="module")
def schema(cluster: Cluster, widget_crd: None) -> Schema:
    """The cluster's own schemas, once the Widget CRD's has been published."""

    def fetch() -> Schema | None:
        schema = schema_from_kubeconfig(str(cluster.kubeconfig))
        return schema if (f"{GROUP}/v1", "Widget") in schema.kinds() else None

    return eventually(fetch, what="the Widget schema in the cluster's OpenAPI")


def _resource(desired: dict) -> type:
    return type(codecs.from_dict(desired))


def _create(kube: Client, desired: dict) -> None:
    # A new namespace gets its default ServiceAccount, which pods need, a moment after it is created.
    def create() -> bool:
        try:
            kube.create(codecs.from_dict(annotate(desired)))
        except ApiError as e:
            if e.status.code == 403 and "serviceaccount" in (e.status.message or ""):
                return False
            raise
        return True

    eventually(create, what=f"{desired['kind']} to be created")


def _read(kube: Client, desired: dict) -> dict:
    meta = desired["metadata"]
    return kube.get(_resource(desired), meta["name"], namespace=meta["namespace"]).to_dict()


def _patch(kube: Client, desired: dict, patch: dict, patch_type: PatchType) -> None:
    kind = LightkubePatchType.STRATEGIC if patch_type is PatchType.STRATEGIC else LightkubePatchType.MERGE
    meta = desired["metadata"]
    kube.patch(_resource(desired), meta["name"], patch, namespace=meta["namespace"], patch_type=kind)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_object_read_back_matches_one_field_change_patches_that_field_and_outside_changes_depend_on_mode(
    kube: Client, namespace: str, schema: Schema, case: Case
) -> None:
    desired = yaml.safe_load(case.manifest)
    desired["metadata"]["namespace"] = namespace
    _create(kube, desired)

    current = eventually(
        lambda: case.settled(obj := _read(kube, desired)) and obj,
        what=f"{desired['kind']} to be settled by its controllers",
    )
    created = calculate(current, desired, schema=schema)
    assert created.is_empty, created.patch
    assert created.patch_type is (PatchType.MERGE if desired["kind"] == "Widget" else PatchType.STRATEGIC)

    changed = copy.deepcopy(desired)
    case.edit(changed)
    result = calculate(current, changed, schema=schema)
    assert result.patch == case.expected_patch
    _patch(kube, desired, result.patch, result.patch_type)
    patched = _read(kube, desired)
    assert calculate(patched, changed, schema=schema).is_empty
    assert not calculate(patched, desired, schema=schema).is_empty

    _patch(kube, desired, {"metadata": {"labels": {"touched-by": "someone-else"}}}, PatchType.MERGE)
    touched = _read(kube, desired)
    assert calculate(touched, changed, schema=schema).is_empty
    two_way = calculate(touched, changed, schema=schema, mode=Mode.TWO_WAY)
    assert two_way.patch == {"metadata": {"labels": {"touched-by": None}}}
    _patch(kube, desired, two_way.patch, two_way.patch_type)
    assert calculate(_read(kube, desired), changed, schema=schema, mode=Mode.TWO_WAY).is_empty


def test_deleting_a_field_from_desired_removes_it_from_the_object(kube: Client, namespace: str, schema: Schema) -> None:
    desired = yaml.safe_load(CASES["deployment"].manifest)
    desired["metadata"]["namespace"] = namespace
    _create(kube, desired)
    changed = copy.deepcopy(desired)
    del _image(changed)["env"][0]
    del changed["spec"]["template"]["spec"]["volumes"][0]["emptyDir"]
    changed["spec"]["template"]["spec"]["volumes"][0]["configMap"] = {"name": "settings"}

    result = calculate(_read(kube, desired), changed, schema=schema, record=True)
    _patch(kube, desired, result.patch, result.patch_type)

    after = _read(kube, desired)
    pod_spec = after["spec"]["template"]["spec"]
    assert [e["name"] for e in pod_spec["containers"][0]["env"]] == ["EMPTY"]
    assert pod_spec["volumes"][0]["configMap"]["name"] == "settings" and "emptyDir" not in pod_spec["volumes"][0]
    assert calculate(after, changed, schema=schema).is_empty


def test_objects_of_the_official_kubernetes_client_are_compared_like_dicts(
    kube: Client, namespace: str, cluster: Cluster
) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    desired = yaml.safe_load(CASES["deployment"].manifest)
    desired["metadata"]["namespace"] = namespace
    _create(kube, desired)

    api = kubernetes.client.AppsV1Api(kubernetes.config.new_client_from_config(str(cluster.kubeconfig)))
    current = api.read_namespaced_deployment("web", namespace)
    assert calculate(current, desired).is_empty
    assert calculate(current, kubernetes.client.ApiClient().sanitize_for_serialization(current)).is_empty


def test_example_operator_loop_makes_no_updates_when_nothing_changes(cluster: Cluster, namespace: str) -> None:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    run = subprocess.run(
        [
            sys.executable,
            str(REPO / "examples" / "operator_loop.py"),
            namespace,
            "--iterations",
            "100",
            "--assert-no-updates",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "first pass: created 3, updated 0" in run.stdout
    assert "updated 0 in 100 iterations (300 objects unchanged)" in run.stdout


def test_schema_is_fetched_once_and_then_read_from_the_file_cache(
    cluster: Cluster, tmp_path: Path, schema: Schema
) -> None:
    paths: list[str] = []

    class CountingCluster(KapplyCluster):
        async def request(self, method: str, path: str, **kwargs: object) -> object:
            paths.append(path)
            return await super().request(method, path, **kwargs)

    async def fetch_twice() -> tuple[Schema, int, Schema]:
        async with CountingCluster(load(KubeconfigFlags(str(cluster.kubeconfig)))) as client:
            fetched = await fetch_schema(client, cache_dir=tmp_path)
            requests = len(paths)
            return fetched, requests, await fetch_schema(client, cache_dir=tmp_path)

    fetched, requests, cached = asyncio.run(fetch_twice())
    assert requests > 10  # the index, then every group-version
    assert paths[requests:] == ["/openapi/v3"]
    assert len(list(tmp_path.iterdir())) == 1
    assert cached.kinds() == fetched.kinds()
    desired = yaml.safe_load(CASES["custom-resource"].manifest)
    current = copy.deepcopy(annotate(desired))
    current["spec"]["parts"].reverse()
    assert calculate(current, desired, schema=cached).is_empty
    assert not calculate(current, desired, schema=Schema.builtin()).is_empty  # no list keys without the CRD's schema


def test_fields_an_autoscaler_writes_are_left_alone_when_ignored(kube: Client, namespace: str) -> None:
    desired = yaml.safe_load(CASES["deployment"].manifest)
    desired["metadata"]["namespace"] = namespace
    _create(kube, desired)
    _patch(kube, desired, {"spec": {"replicas": 5}}, PatchType.MERGE)  # as a HorizontalPodAutoscaler scales it
    scaled = _read(kube, desired)
    assert calculate(scaled, desired).patch == {"spec": {"replicas": 2}}
    assert calculate(scaled, desired, ignore_fields=["spec.replicas"]).is_empty


def test_an_object_annotated_with_its_namespace_matches_desired_without_one(kube: Client, namespace: str) -> None:
    desired = yaml.safe_load(CASES["configmap"].manifest)
    desired["metadata"]["namespace"] = namespace
    _create(kube, desired)  # annotated with the namespace
    unnamespaced = copy.deepcopy(desired)
    del unnamespaced["metadata"]["namespace"]
    assert calculate(_read(kube, desired), unnamespaced).is_empty


def _openapi_paths(kubeconfig: Path) -> set[str]:
    async def index() -> dict:
        async with KapplyCluster(load(KubeconfigFlags(str(kubeconfig)))) as client:
            return await client.request("GET", "/openapi/v3")

    return set(asyncio.run(index())["paths"])


def test_a_crd_created_after_the_matcher_is_built_is_compared_by_its_own_schema(
    kube: Client, namespace: str, cluster: Cluster
) -> None:
    """Matchers from a kubeconfig, the official client and kapply's Cluster, all built (and used) inside a running
    event loop, as an async operator handler would: each fetches the new kind on first use."""
    kubernetes = pytest.importorskip("kubernetes")
    group = f"late-{uuid.uuid4().hex[:6]}.{GROUP}"
    gizmos = create_namespaced_resource(group, "v1", "Gizmo", "gizmos")
    desired = {
        "apiVersion": f"{group}/v1",
        "kind": "Gizmo",
        "metadata": {"name": "g", "namespace": namespace},
        "spec": {"size": 1, "parts": [{"name": "cog"}, {"name": "axle", "count": 2}]},
    }
    reordered = copy.deepcopy(desired)
    reordered["spec"]["parts"].reverse()

    def create_crd_and_object() -> dict:
        _establish(kube, crd_manifest(group, "Gizmo"))
        eventually(lambda: f"apis/{group}/v1" in _openapi_paths(cluster.kubeconfig), what="the CRD's OpenAPI")
        kube.create(codecs.from_dict(annotate(desired)))
        return kube.get(gizmos, "g", namespace=namespace).to_dict()

    async def operator() -> tuple[dict, list[PatchResult]]:
        from_kubeconfig = Matcher(schema_from_kubeconfig(str(cluster.kubeconfig)))
        official_client = kubernetes.config.new_client_from_config(str(cluster.kubeconfig))
        from_official_client = Matcher(fetch_schema_sync(official_client))
        async with KapplyCluster(load(KubeconfigFlags(str(cluster.kubeconfig)))) as client:
            from_cluster = Matcher(await fetch_schema(client))
            matchers = [from_kubeconfig, from_official_client, from_cluster]
            assert all((f"{group}/v1", "Gizmo") not in matcher.schema.kinds() for matcher in matchers)
            current = await asyncio.to_thread(create_crd_and_object)
            return current, [matcher.calculate(current, reordered) for matcher in matchers]

    try:
        current, results = asyncio.run(operator())
    finally:
        try:
            kube.delete(CustomResourceDefinition, f"gizmos.{group}")
        except ApiError as e:
            if e.status.code != 404:
                raise
    assert [(result.patch, result.patch_type) for result in results] == [({}, PatchType.MERGE)] * 3
    assert not calculate(current, reordered).is_empty  # without the kind's schema its list compares by position
