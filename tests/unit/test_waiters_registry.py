"""Which waiter applies to a resource, in kapp's order, and the children it names."""

import pytest

from kapply.apply.waiters import (
    apiservice,
    crd,
    cronjob,
    daemonset,
    deleting,
    deployment,
    job,
    kapp_controller,
    namespace,
    ok,
    pod,
    pvc,
    registry,
    replicaset,
    service,
    standard_conditions,
    statefulset,
    wait_rule,
    wait_state,
    which_children,
)
from kapply.config.config import parse_config
from tests.unit.waiter_objects import POD_READY_RULE, cond, obj, revisioned_deployment


def test_configmap_is_ok_at_once():
    assert wait_state({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}) == ok()


def test_which_children_follows_kapps_table():
    def kind(api_version, kind):
        return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "ns"}}

    assert which_children(kind("apps/v1", "Deployment")) == (("apps", "replicasets"), ("", "pods"))
    assert which_children(kind("apps/v1", "DaemonSet")) == (("apps", "replicasets"), ("", "pods"))
    assert which_children(kind("batch/v1", "Job")) == (("batch", "jobs"), ("", "pods"))
    assert which_children(kind("apps/v1", "StatefulSet")) == (("", "persistentvolumeclaims"), ("", "pods"))
    assert which_children(kind("batch/v1", "CronJob")) == ()
    assert which_children(kind("v1", "Pod")) == ()
    assert which_children(kind("v1", "ConfigMap")) == ()


def test_deleting_deployment_lists_no_children():
    deleting = revisioned_deployment({})
    deleting["metadata"]["deletionTimestamp"] = "2024-03-28T10:00:00Z"
    assert which_children(deleting) == ()


KINDS = [
    ("kappctrl.k14s.io/v1alpha1", "App", kapp_controller),
    ("packaging.carvel.dev/v1alpha1", "PackageInstall", kapp_controller),
    ("packaging.carvel.dev/v1alpha1", "PackageRepository", kapp_controller),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd),
    ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", crd),
    ("apiregistration.k8s.io/v1", "APIService", apiservice),
    ("apiregistration.k8s.io/v1beta1", "APIService", apiservice),
    ("v1", "Pod", pod),
    ("v1", "Service", service),
    ("apps/v1", "Deployment", deployment),
    ("apps/v1", "DaemonSet", daemonset),
    ("batch/v1", "Job", job),
    ("batch/v1", "CronJob", cronjob),
    ("batch/v1beta1", "CronJob", cronjob),
    ("apps/v1", "StatefulSet", statefulset),
    ("apps/v1", "ReplicaSet", replicaset),
    ("v1", "Namespace", namespace),
    ("v1", "PersistentVolumeClaim", pvc),
]


@pytest.mark.parametrize(("api_version", "kind", "module"), KINDS)
def test_each_kind_has_its_modules_waiter(api_version, kind, module):
    waiter = registry.find(obj(api_version, kind), ())
    assert waiter is not None
    assert waiter.check.func is module.check


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [("extensions/v1beta1", "Deployment"), ("batch/v1beta1", "Job"), ("v1", "ConfigMap"), ("example.com/v1", "Pod")],
)
def test_other_versions_and_kinds_have_no_waiter(api_version, kind):
    assert registry.find(obj(api_version, kind), ()) is None


def test_kapp_controller_kinds_come_before_the_deletion_check():
    app = obj("kappctrl.k14s.io/v1alpha1", "App")
    app["metadata"]["deletionTimestamp"] = "2024-03-28T10:00:00Z"
    assert registry.find(app, ()).check.func is kapp_controller.check


def test_deletion_comes_before_wait_rules_and_wait_rules_before_kinds():
    rules = parse_config(POD_READY_RULE, "test").wait_rules
    running = obj("v1", "Pod")
    assert registry.find(running, rules).check.func is wait_rule.check
    running["metadata"]["deletionTimestamp"] = "2024-03-28T10:00:00Z"
    assert registry.find(running, rules).check.func is deleting.check


def test_standard_conditions_come_last():
    ready = obj("example.com/v1", "Widget", status={"conditions": [cond("Ready", "True")]})
    assert registry.find(ready, ()).check.func is standard_conditions.check
    assert registry.find(obj("example.com/v1", "Widget", status={"conditions": [cond("Synced", "True")]}), ()) is None
