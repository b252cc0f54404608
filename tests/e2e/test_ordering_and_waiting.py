"""Changes are applied in kapp's order, concurrently, and waited on until they converge."""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import ConfigMap, Pod

from tests.e2e.harness import WAIT_INTERVAL

pytestmark = pytest.mark.e2e


def position(output: str, pattern: str) -> int:
    match = re.search(pattern, output, re.M)
    assert match, f"{pattern!r} not in:\n{output}"
    return match.start()


def crontab_crd(group: str) -> str:
    return f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.{group}
spec:
  group: {group}
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"""


def test_a_custom_resource_is_created_after_its_crd_is_established(kapply, namespace):
    group = f"{namespace}.example.test"
    manifest = (
        crontab_crd(group)
        + f"""---
apiVersion: {group}/v1
kind: CronTab
metadata:
  name: my-new-cron-object
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
"""
    )
    result = kapply.deploy(namespace, manifest, app="order", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    established = position(result.stdout, rf"ok: reconcile customresourcedefinition/crontabs\.{group}")
    created = position(result.stdout, r"create crontab/my-new-cron-object")
    assert established < created
    assert kapply("delete", "-a", "order", "-n", namespace, "-y", WAIT_INTERVAL).returncode == 0


def test_a_namespace_comes_first_and_goes_last(kapply, kube: Client, namespace):
    extra = f"{namespace}-app"
    manifest = f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: {extra}
data:
  a: "1"
---
apiVersion: v1
kind: Namespace
metadata:
  name: {extra}
"""
    created = kapply.deploy(namespace, manifest, app="order", check=False)
    assert created.returncode == 0, created.stdout + created.stderr
    assert position(created.stdout, rf"create namespace/{extra}") < position(
        created.stdout, r"create configmap/settings"
    )
    deleted = kapply("delete", "-a", "order", "-n", namespace, "-y", WAIT_INTERVAL)
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    assert position(deleted.stdout, r"delete configmap/settings") < position(
        deleted.stdout, rf"delete namespace/{extra}"
    )
    with pytest.raises(ApiError):
        kube.get(ConfigMap, "settings", namespace=extra)


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: {image}
"""


def test_a_deployment_is_waited_on_until_its_pods_are_ready(kapply, kube: Client, namespace):
    # kwok makes Pods Ready within milliseconds: without minReadySeconds the Deployment could be done by the
    # first poll that finds its ReplicaSet, and a done parent shows no children. With it, the Deployment stays
    # unavailable for a second after its Pods are Ready, so polls (every 0.2 s) find the ReplicaSet meanwhile.
    manifest = DEPLOYMENT.format(image="registry.invalid/web:1").replace(
        "  replicas: 2\n", "  replicas: 2\n  minReadySeconds: 1\n"
    )
    assert "minReadySeconds: 1" in manifest
    result = kapply.deploy(namespace, manifest, app="order", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(rf"ongoing: reconcile deployment/web \(apps/v1\) namespace: {namespace}", result.stdout)
    assert re.search(r" L (ok|ongoing): waiting on replicaset/web-\w+ \(apps/v1\)", result.stdout), result.stdout
    assert re.search(rf"ok: reconcile deployment/web \(apps/v1\) namespace: {namespace}", result.stdout)
    assert result.stdout.index("---- waiting complete [1/1 done] ----") > result.stdout.index("ok: reconcile")
    # Read right after kapply returned: it waited until both Pods were Ready on the kwok node.
    assert kube.get(Deployment, "web", namespace=namespace).status.readyReplicas == 2
    pods = list(kube.list(Pod, namespace=namespace, labels={"app": "web"}))
    assert len(pods) == 2 and all(p.spec.nodeName for p in pods)
    assert all(any(c.type == "Ready" and c.status == "True" for c in p.status.conditions) for p in pods)


def test_a_wait_ends_when_a_watch_sees_the_change_not_at_its_check_interval(kapply, namespace):
    """With a minute between looks, only a watch of the Deployment's place (kapply.apply.observe.Wakes) can end the
    wait within the 30 s the test allows: minReadySeconds keeps the Deployment unavailable for 2 s after its Pods
    are Ready, so the first look never finds it done, and its status changes when it becomes available."""
    manifest = DEPLOYMENT.format(image="registry.invalid/web:1").replace(
        "  replicas: 2\n", "  replicas: 2\n  minReadySeconds: 2\n"
    )
    result = kapply.deploy(namespace, manifest, "--wait-check-interval=60s", app="wake", timeout=30)
    assert re.search(rf"ongoing: reconcile deployment/web \(apps/v1\) namespace: {namespace}", result.stdout)
    assert re.search(rf"ok: reconcile deployment/web \(apps/v1\) namespace: {namespace}", result.stdout)


@pytest.mark.parametrize(
    ("image", "reason"),
    [
        ("image-pull-backoff", "Pending: ImagePullBackOff"),
        ("crash-loop-backoff", "Condition Ready is not True (False): CrashLoopBackOff"),
    ],
)
def test_a_deployment_whose_pods_fail_times_out_naming_it_and_why(kapply, namespace, image, reason):
    result = kapply.deploy(
        namespace,
        DEPLOYMENT.format(image=f"registry.invalid/kapply-test:{image}"),
        "--wait-timeout=3s",
        app="order",
        check=False,
    )
    assert result.returncode == 1
    assert (
        f"Timed out waiting after 3s for resources: [deployment/web (apps/v1) namespace: {namespace}]" in result.stderr
    )
    assert re.search(
        rf" L ongoing: waiting on pod/web-\S+ \(v1\) namespace: \S+\n.*\^ {re.escape(reason)}", result.stdout
    ), result.stdout


def job(image: str) -> str:
    return json.dumps(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "migrate", "annotations": {"kapp.k14s.io/update-strategy": "fallback-on-replace"}},
            "spec": {
                "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "migrate", "image": image}]}},
            },
        }
    )


def test_a_failing_job_fails_the_deploy_and_a_fixed_one_succeeds(kapply, kube: Client, namespace):
    failed = kapply.deploy(namespace, job("registry.invalid/kapply-test:exit-1"), app="job", check=False)
    assert failed.returncode == 1
    assert (  # laid out as kapp lays errors out
        f"waiting on reconcile job/migrate (batch/v1) namespace: {namespace}:\n  Finished unsuccessfully "
        "(Failed with reason BackoffLimitExceeded: Job has reached the specified backoff limit)"
    ) in failed.stderr
    [change] = kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/is-app-change": ""})
    assert json.loads(change.data["spec"])["successful"] is False

    fixed = kapply.deploy(namespace, job("registry.invalid/migrate:2"), app="job", check=False)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert re.search(r"ok: reconcile job/migrate", fixed.stdout)


def configmaps(*specs: tuple[str, dict[str, str]]) -> str:
    return "\n---\n".join(
        json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "annotations": annotations}})
        for name, annotations in specs
    )


def test_change_rules_order_changes_by_group(kapply, namespace):
    manifest = configmaps(
        ("second", {"kapp.k14s.io/change-rule": "upsert after upserting group.example.test/first"}),
        ("first", {"kapp.k14s.io/change-group": "group.example.test/first"}),
    )
    result = kapply.deploy(namespace, manifest, app="order", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert position(result.stdout, r"ok: reconcile configmap/first") < position(
        result.stdout, r"create configmap/second"
    )


def test_change_group_and_rule_bindings_from_config(kapply, namespace):
    config = json.dumps(
        {
            "apiVersion": "kapp.k14s.io/v1alpha1",
            "kind": "Config",
            "changeGroupBindings": [
                {
                    "name": "group.example.test/db",
                    "resourceMatchers": [
                        {"kindNamespaceNameMatcher": {"kind": "ConfigMap", "namespace": namespace, "name": "db"}}
                    ],
                }
            ],
            "changeRuleBindings": [
                {
                    "rules": ["upsert after upserting group.example.test/db"],
                    "resourceMatchers": [
                        {"kindNamespaceNameMatcher": {"kind": "ConfigMap", "namespace": namespace, "name": "api"}}
                    ],
                }
            ],
        }
    )
    result = kapply.deploy(
        namespace, configmaps(("api", {}), ("db", {})) + "\n---\n" + config, app="order", check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert position(result.stdout, r"ok: reconcile configmap/db") < position(result.stdout, r"create configmap/api")


def test_a_cycle_is_an_error_before_anything_is_applied(kapply, kube: Client, namespace):
    manifest = configmaps(
        (
            "a",
            {
                "kapp.k14s.io/change-group": "group.example.test/a",
                "kapp.k14s.io/change-rule": "upsert after upserting group.example.test/b",
            },
        ),
        (
            "b",
            {
                "kapp.k14s.io/change-group": "group.example.test/b",
                "kapp.k14s.io/change-rule": "upsert after upserting group.example.test/a",
            },
        ),
    )
    result = kapply.deploy(namespace, manifest, app="order", check=False)
    assert result.returncode == 1
    assert "Detected cycle while ordering changes" in result.stderr
    assert "configmap/a (v1)" in result.stderr and "configmap/b (v1)" in result.stderr
    assert "Traceback" not in result.stderr
    assert [cm.metadata.name for cm in kube.list(ConfigMap, namespace=namespace)] == ["kube-root-ca.crt"]


def crontab(name: str, conditions: list[dict]) -> str:
    return json.dumps(
        {
            "apiVersion": "{group}/v1",
            "kind": "CronTab",
            "metadata": {"name": name},
            "status": {"conditions": conditions},
        }
    )


def test_wait_rules_decide_success_and_failure_from_conditions(kapply, namespace):
    """The CRD has no status subresource, so the status given in the manifest is what the server stores."""
    group = f"{namespace}.example.test"
    config = json.dumps(
        {
            "apiVersion": "kapp.k14s.io/v1alpha1",
            "kind": "Config",
            "waitRules": [
                {
                    "resourceMatchers": [{"apiVersionKindMatcher": {"apiVersion": f"{group}/v1", "kind": "CronTab"}}],
                    "conditionMatchers": [
                        {"type": "Failed", "status": "True", "failure": True},
                        {"type": "Ready", "status": "True", "success": True},
                    ],
                }
            ],
        }
    )
    ready = crontab("ready", [{"type": "Ready", "status": "True", "reason": "Done", "message": "all good"}])
    manifest = "\n---\n".join([crontab_crd(group), config, ready.replace("{group}", group)])
    result = kapply.deploy(namespace, manifest, app="order", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Encountered successful condition Ready == True: Done (message: all good)" in result.stdout

    broken = crontab("broken", [{"type": "Failed", "status": "True", "reason": "Boom", "message": "bad spec"}])
    failed = kapply.deploy(
        namespace, "\n---\n".join([manifest, broken.replace("{group}", group)]), app="order", check=False
    )
    assert failed.returncode == 1
    assert (
        "Finished unsuccessfully (Encountered failure condition Failed == True: Boom (message: bad spec))"
        in failed.stderr
    )
    assert kapply("delete", "-a", "order", "-n", namespace, "-y", WAIT_INTERVAL).returncode == 0


def test_wait_can_be_turned_off_per_resource_and_per_deploy(kapply, namespace):
    manifest = DEPLOYMENT.format(image="registry.invalid/kapply-test:image-pull-backoff")
    disabled = manifest.replace("  name: web\n", '  name: web\n  annotations:\n    kapp.k14s.io/disable-wait: ""\n', 1)
    result = kapply.deploy(namespace, disabled, app="order", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Wait to: 0 reconcile, 0 delete, 1 noop" in result.stdout
    no_wait = kapply.deploy(
        namespace, manifest.replace("name: web", "name: web2"), "--wait=false", app="other", check=False
    )
    assert no_wait.returncode == 0, no_wait.stdout + no_wait.stderr
    assert "Wait to: 0 reconcile, 0 delete, 1 noop" in no_wait.stdout


def test_a_resource_that_disappears_while_waited_on_fails_with_not_found(kapply, namespace, kube: Client):
    """A resource deleted while kapply waits on it (e.g. a Job with `ttlSecondsAfterFinished: 0`, as in
    ingress-nginx): kapp fails with NotFound at once; kapply must not wait for it until the wait timeout. The Job is
    suspended so that it cannot complete first, and the test deletes it once it exists."""
    manifest = """apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: registry.k8s.io/pause:3.10}]
"""
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(kapply.deploy, namespace, manifest, "--wait-timeout=60s", app="ttl", check=False)
        deadline = time.monotonic() + 30
        while not running.done() and time.monotonic() < deadline:
            try:
                kube.delete(Job, "once", namespace=namespace)
                break
            except ApiError as e:
                if e.status.code != 404:
                    raise
                time.sleep(0.1)
        result = running.result()
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'jobs.batch "once" not found (reason: NotFound)' in result.stderr
    assert "timed out" not in result.stderr
