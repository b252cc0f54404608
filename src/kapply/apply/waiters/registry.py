"""Which waiter applies to a resource: the first of a fixed list by kind, in kapp's order, with the Config's
waitRules after the deletion check; beyond kapp, any resource with standard conditions. Workloads also name the types
of their children, the resources carrying their association label."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from kapply import objects
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
    pod,
    pvc,
    replicaset,
    service,
    standard_conditions,
    statefulset,
    wait_rule,
)
from kapply.apply.waiters.reading import is_deleting
from kapply.apply.waiters.state import State
from kapply.objects import api_group

if TYPE_CHECKING:  # the Config's modules are imported only for a wait rule: `inspect` shows states without them
    from kapply.config.config import WaitRule

# (API group, resource plural) of the children a waiter reports on.
ChildType = tuple[str, str]

_REPLICA_SETS_AND_PODS: tuple[ChildType, ...] = (("apps", "replicasets"), ("", "pods"))
_JOBS_AND_PODS: tuple[ChildType, ...] = (("batch", "jobs"), ("", "pods"))
_CLAIMS_AND_PODS: tuple[ChildType, ...] = (("", "persistentvolumeclaims"), ("", "pods"))
_PODS: tuple[ChildType, ...] = (("", "pods"),)


@dataclass(frozen=True, slots=True)
class Waiter:
    check: Callable[[], State]
    children: tuple[ChildType, ...] = ()


def find(
    resource: dict[str, Any],
    wait_rules: Sequence[WaitRule],
    associated: Sequence[dict[str, Any]] = (),
    ignore_failing_api_services: bool = False,
) -> Waiter | None:
    """The first waiter that applies to the resource, in kapp's order; None when none does (done at once)."""
    api_version = objects.api_version(resource)
    if (api_version, objects.kind(resource)) in kapp_controller.KINDS:
        return Waiter(partial(kapp_controller.check, resource))
    if is_deleting(resource):
        return Waiter(partial(deleting.check, resource))
    rule = _wait_rule(resource, wait_rules) if wait_rules else None
    if rule is not None:
        return Waiter(partial(wait_rule.check, resource, rule))
    by_kind = _by_kind(resource, associated, ignore_failing_api_services)
    if by_kind is not None:
        return by_kind
    if standard_conditions.applies(resource):
        return Waiter(partial(standard_conditions.check, resource))
    return None


def _wait_rule(resource: dict[str, Any], wait_rules: Sequence[WaitRule]) -> WaitRule | None:
    from kapply.config.matchers import matches_any

    return next((rule for rule in wait_rules if matches_any(rule.resource_matchers, resource)), None)


def _by_kind(
    resource: dict[str, Any], associated: Sequence[dict[str, Any]], ignore_failing_api_services: bool
) -> Waiter | None:
    api_version = objects.api_version(resource)
    match (api_group(api_version), api_version, objects.kind(resource)):
        case ("apiextensions.k8s.io", _, "CustomResourceDefinition"):
            return Waiter(partial(crd.check, resource))
        case (_, "apiregistration.k8s.io/v1" | "apiregistration.k8s.io/v1beta1", "APIService"):
            return Waiter(partial(apiservice.check, resource, ignore_failing_api_services))
        case (_, "v1", "Pod"):
            return Waiter(partial(pod.check, resource))
        case (_, "v1", "Service"):
            return Waiter(partial(service.check, resource))
        case (_, "apps/v1", "Deployment"):
            return Waiter(partial(deployment.check, resource, associated), _REPLICA_SETS_AND_PODS)
        case (_, "apps/v1", "DaemonSet"):
            return Waiter(partial(daemonset.check, resource), _REPLICA_SETS_AND_PODS)
        case (_, "batch/v1", "Job"):
            return Waiter(partial(job.check, resource), _JOBS_AND_PODS)
        case ("batch", _, "CronJob"):
            return Waiter(partial(cronjob.check, resource))
        case (_, "apps/v1", "StatefulSet"):
            return Waiter(partial(statefulset.check, resource), _CLAIMS_AND_PODS)
        case (_, "apps/v1", "ReplicaSet"):
            return Waiter(partial(replicaset.check, resource), _PODS)
        case (_, "v1", "Namespace"):
            return Waiter(partial(namespace.check, resource))
        case (_, "v1", "PersistentVolumeClaim"):
            return Waiter(partial(pvc.check, resource))
    return None


def which_children(resource: dict[str, Any], wait_rules: Sequence[WaitRule] = ()) -> tuple[ChildType, ...]:
    """The (API group, resource plural) types to list, by association label, as the resource's children."""
    waiter = find(resource, wait_rules)
    return waiter.children if waiter else ()
