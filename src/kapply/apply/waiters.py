"""Whether a resource has converged: kapp's waiters, as pure functions.

kapp asks the first *specific waiter* that applies to a resource whether it is done: a fixed list by
kind, with the Config's waitRules after the deletion check. Beyond kapp, kapply also waits on
ReplicaSets, Namespaces, and any other resource whose status has standard `Ready`, `Failed` or
`Stalled` conditions (kstatus' convention, as Flux reads it). A resource no waiter applies to
(ConfigMap, Secret, ...) is done at once. Workloads also name the types of their
children, the resources carrying their association label; the caller lists those
(`which_children`) and `converge` reports on each of them next to the parent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Any

from kapply import objects
from kapply.config.config import ConditionMatcher, WaitRule
from kapply.config.matchers import matches_any
from kapply.config.ytt import is_done
from kapply.errors import ConfigError
from kapply.objects import api_group, describe, key_of

REVISION_ANNOTATION = "deployment.kubernetes.io/revision"

# (API group, resource plural) of the children a waiter reports on.
ChildType = tuple[str, str]

_REPLICA_SETS_AND_PODS: tuple[ChildType, ...] = (("apps", "replicasets"), ("", "pods"))
_JOBS_AND_PODS: tuple[ChildType, ...] = (("batch", "jobs"), ("", "pods"))
_CLAIMS_AND_PODS: tuple[ChildType, ...] = (("", "persistentvolumeclaims"), ("", "pods"))
_PODS: tuple[ChildType, ...] = (("", "pods"),)
_STANDARD_CONDITIONS = frozenset({"Ready", "Failed", "Stalled"})

_KAPP_CONTROLLER_KINDS = frozenset(
    {
        ("kappctrl.k14s.io/v1alpha1", "App"),
        ("packaging.carvel.dev/v1alpha1", "PackageInstall"),
        ("packaging.carvel.dev/v1alpha1", "PackageRepository"),
    }
)


class Word(StrEnum):
    """How kapp names a state in its wait output (`ok: reconcile ...`)."""

    OK = "ok"
    FAIL = "fail"
    ONGOING = "ongoing"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class State:
    done: bool
    successful: bool = False
    message: str = ""
    unblock: bool = False  # not done, but changes waiting on this one may proceed

    @property
    def word(self) -> Word:
        if not self.done:
            return Word.ONGOING
        return Word.OK if self.successful else Word.FAIL

    @property
    def terminally_failed(self) -> bool:
        return self.done and not self.successful


def ok(message: str = "") -> State:
    return State(done=True, successful=True, message=message)


def ongoing(message: str = "", *, unblock: bool = False) -> State:
    return State(done=False, message=message, unblock=unblock)


def failed(message: str) -> State:
    return State(done=True, successful=False, message=message)


@dataclass(frozen=True, slots=True)
class ChildState:
    resource: dict[str, Any]
    state: State


@dataclass(frozen=True, slots=True)
class Convergence:
    """One poll of a waited resource: the state of the change and what kapp shows about it."""

    resource: dict[str, Any]
    state: State  # of the change: decides whether the wait is over
    parent: State | None  # the resource's own waiter's verdict; None when no waiter applies
    children: tuple[ChildState, ...] = ()
    error: str = ""  # kapp fails the wait with `Errored: <error>` instead of looking at the state

    @property
    def word(self) -> Word:
        return Word.ERROR if self.error else self.state.word


def which_children(resource: dict[str, Any], wait_rules: Sequence[WaitRule] = ()) -> tuple[ChildType, ...]:
    """The (API group, resource plural) types to list, by association label, as the resource's children."""
    waiter = _waiter(resource, wait_rules)
    return waiter.children if waiter else ()


def converge(
    resource: dict[str, Any],
    wait_rules: Sequence[WaitRule] = (),
    children: Sequence[dict[str, Any]] = (),
    *,
    ignore_failing_api_services: bool = False,
) -> Convergence:
    """The resource's state, given its children listed over `which_children` (in any order).

    A resource whose own waiter is not done still shows its children, but its state is the
    waiter's; only a resource with no waiter takes its state from the children."""
    children = _ordered_children(resource, children)
    waiter = _waiter(resource, wait_rules, children, ignore_failing_api_services)
    parent = waiter.check() if waiter else None
    if parent is not None and parent.done:
        return Convergence(resource, parent, parent)

    annotations = objects.annotations(resource)
    if objects.DISABLE_ASSOCIATED_RESOURCES_WAIT in annotations:
        if annotations[objects.DISABLE_ASSOCIATED_RESOURCES_WAIT] != "":
            error = (
                f"Expected annotation '{objects.DISABLE_ASSOCIATED_RESOURCES_WAIT}' on resource "
                f"'{describe(resource)}' to have value ''"
            )
            return Convergence(resource, failed(error), parent, error=error)
        return Convergence(resource, parent if parent is not None else ok(), parent)

    child_states = tuple(
        ChildState(child, _state(child, wait_rules, children, ignore_failing_api_services)) for child in children
    )
    if parent is not None:
        return Convergence(resource, parent, parent, child_states)
    states = [child.state for child in child_states]
    state = next((s for s in states if s.terminally_failed), None) or next((s for s in states if not s.done), ok())
    return Convergence(resource, state, parent, child_states)


def wait_state(
    resource: dict[str, Any],
    wait_rules: Sequence[WaitRule] = (),
    children: Sequence[dict[str, Any]] = (),
    *,
    ignore_failing_api_services: bool = False,
) -> State:
    """The state of waiting on the resource; see `converge`."""
    return converge(resource, wait_rules, children, ignore_failing_api_services=ignore_failing_api_services).state


def wait_lines(convergence: Convergence, wait_op: str = "reconcile") -> list[str]:
    """The lines kapp prints for one poll of a waited change, without time prefixes:

    ongoing: reconcile deployment/web (apps/v1) namespace: ns
     ^ Waiting for 1 unavailable replicas
     L ok: waiting on replicaset/web-abc (apps/v1) namespace: ns
     L ongoing: waiting on pod/web-abc-x (v1) namespace: ns
        ^ Pending: ContainerCreating
    """
    lines = [f"{convergence.word}: {wait_op} {describe(convergence.resource)}"]
    if convergence.parent is not None and convergence.parent.message:
        lines.append(f" ^ {convergence.parent.message}")
    for child in convergence.children:
        lines.append(f" L {child.state.word}: waiting on {describe(child.resource)}")
        if child.state.message:
            lines.append(f"    ^ {child.state.message}")
    return lines


@dataclass(frozen=True, slots=True)
class _Waiter:
    check: Callable[[], State]
    children: tuple[ChildType, ...] = ()


def _waiter(
    resource: dict[str, Any],
    wait_rules: Sequence[WaitRule],
    associated: Sequence[dict[str, Any]] = (),
    ignore_failing_api_services: bool = False,
) -> _Waiter | None:
    """The first waiter that applies to the resource, in kapp's order."""
    api_version = objects.api_version(resource)
    kind = objects.kind(resource)
    group = api_group(api_version)
    if (api_version, kind) in _KAPP_CONTROLLER_KINDS:
        return _Waiter(partial(_kapp_controller, resource))
    if _is_deleting(resource):
        return _Waiter(partial(_deleting, resource))
    rule = next((rule for rule in wait_rules if matches_any(rule.resource_matchers, resource)), None)
    if rule is not None:
        return _Waiter(partial(_wait_rule, resource, rule))
    match (group, api_version, kind):
        case ("apiextensions.k8s.io", _, "CustomResourceDefinition"):
            return _Waiter(partial(_selected_true, resource, ("Established", "NamesAccepted")))
        case (_, "apiregistration.k8s.io/v1" | "apiregistration.k8s.io/v1beta1", "APIService"):
            return _Waiter(partial(_api_service, resource, ignore_failing_api_services))
        case (_, "v1", "Pod"):
            return _Waiter(partial(_pod, resource))
        case (_, "v1", "Service"):
            return _Waiter(partial(_service, resource))
        case (_, "apps/v1", "Deployment"):
            return _Waiter(partial(_deployment, resource, associated), _REPLICA_SETS_AND_PODS)
        case (_, "apps/v1", "DaemonSet"):
            return _Waiter(partial(_daemon_set, resource), _REPLICA_SETS_AND_PODS)
        case (_, "batch/v1", "Job"):
            return _Waiter(partial(_job, resource), _JOBS_AND_PODS)
        case ("batch", _, "CronJob"):
            # Done at once, so that failed Pods of earlier runs are not waited on.
            return _Waiter(ok)
        case (_, "apps/v1", "StatefulSet"):
            return _Waiter(partial(_stateful_set, resource), _CLAIMS_AND_PODS)
        case (_, "apps/v1", "ReplicaSet"):
            return _Waiter(partial(_replica_set, resource), _PODS)
        case (_, "v1", "Namespace"):
            return _Waiter(partial(_namespace, resource))
        case (_, "v1", "PersistentVolumeClaim"):
            return _Waiter(partial(_claim, resource))
    if any(c.get("type") in _STANDARD_CONDITIONS for c in _conditions(resource)):
        return _Waiter(partial(_standard_conditions, resource))
    return None


def _state(
    resource: dict[str, Any],
    wait_rules: Sequence[WaitRule],
    associated: Sequence[dict[str, Any]],
    ignore_failing_api_services: bool,
) -> State:
    waiter = _waiter(resource, wait_rules, associated, ignore_failing_api_services)
    return waiter.check() if waiter else ok()


def _ordered_children(resource: dict[str, Any], children: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """By description, descending, as kapp shows them; without the parent itself if it was listed."""
    ordered = sorted(children, key=describe, reverse=True)
    parent_key = key_of(resource)
    for i, child in enumerate(ordered):
        if key_of(child) == parent_key:
            del ordered[i]
            break
    return ordered


# Reading objects the way Go's typed structs do: a missing or mistyped field is its zero value.


def _status(resource: dict[str, Any]) -> dict[str, Any]:
    return resource.get("status") or {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _generation(resource: dict[str, Any]) -> int:
    return _int(objects.metadata(resource).get("generation"))


def _observed(resource: dict[str, Any]) -> State | None:
    """Not done while the controller has not seen the latest spec."""
    generation = _generation(resource)
    if generation != _int(_status(resource).get("observedGeneration")):
        return ongoing(f"Waiting for generation {generation} to be observed")
    return None


def _conditions(resource: dict[str, Any]) -> list[dict[str, Any]]:
    conditions = _status(resource).get("conditions")
    return [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []


def _selected_true(resource: dict[str, Any], types: Sequence[str]) -> State:
    """Done when each condition type is present with status True (the last of a repeated type counts)."""
    statuses = {
        c["type"]: c["status"]
        for c in _conditions(resource)
        if isinstance(c.get("type"), str) and isinstance(c.get("status"), str)
    }
    for type_ in types:
        if type_ not in statuses:
            return ongoing(f"Condition {type_} is not set")
        if statuses[type_] != "True":
            return ongoing(f"Condition {type_} is not True ({statuses[type_]})")
    return ok()


def _is_deleting(resource: dict[str, Any]) -> bool:
    return bool(objects.metadata(resource).get("deletionTimestamp"))


# The waiters, in kapp's order.


def _kapp_controller(resource: dict[str, Any]) -> State:
    """kapp-controller's App, PackageInstall and PackageRepository."""
    if (waiting := _observed(resource)) is not None:
        return waiting
    useful_error = _text(_status(resource), "usefulErrorMessage")
    for cond in _conditions(resource):
        if _text(cond, "status") != "True":
            continue
        error = useful_error or _text(cond, "message")
        match _text(cond, "type"):
            case "Reconciling":
                return ongoing("Reconciling")
            case "ReconcileFailed":
                return failed(f"Reconcile failed: {_text(cond, 'reason')} (message: {error})")
            case "DeleteFailed":
                return failed(f"Delete failed: {_text(cond, 'reason')} (message: {error})")
    if _is_deleting(resource):
        return _deleting(resource)
    return ok()


def _deleting(resource: dict[str, Any]) -> State:
    finalizers = objects.metadata(resource).get("finalizers") or []
    if finalizers:
        return ongoing(f"Waiting on finalizers: {', '.join(finalizers)}")
    return ongoing("Deleting")


def _ytt_wait_rule(resource: dict[str, Any], resource_star: str) -> State:
    """kapp's ytt wait rule: the verdict of `is_done(data.values)`."""
    try:
        verdict = is_done(resource_star, resource)
    except ConfigError as e:
        return failed(f"Error: Applying ytt wait rule: {e}")
    message = str(verdict.get("message") or "")
    if verdict.get("done"):
        return ok(message) if verdict.get("successful") else failed(message)
    if verdict.get("unblockChanges"):
        return ongoing(f"Allowing blocked changes to proceed: {message}", unblock=True)
    return ongoing(message)


def _wait_rule(resource: dict[str, Any], rule: WaitRule) -> State:
    """A Config waitRule: failure conditions first, then success ones, then those that unblock changes."""
    supports_observed = rule.supports_observed_generation
    if supports_observed and (waiting := _observed(resource)) is not None:
        return waiting
    if rule.ytt_resource_star is not None:
        return _ytt_wait_rule(resource, rule.ytt_resource_star)
    generation = _generation(resource)
    matches = [
        (matcher, cond)
        for matcher in rule.condition_matchers
        for cond in _conditions(resource)
        if _text(cond, "type") == matcher.type and _text(cond, "status") == matcher.status
    ]

    def observed(matcher: ConditionMatcher, cond: dict[str, Any]) -> bool:
        return not matcher.supports_observed_generation or _int(cond.get("observedGeneration")) == generation

    def described(cond: dict[str, Any], matcher: ConditionMatcher) -> str:
        return f"{_text(cond, 'type')} == {matcher.status}: {_text(cond, 'reason')}"

    for matcher, cond in matches:
        if matcher.failure and observed(matcher, cond):
            return failed(
                f"Encountered failure condition {described(cond, matcher)} (message: {_text(cond, 'message')})"
            )
    unblock_message = ""
    for matcher, cond in matches:
        if not observed(matcher, cond):
            continue
        if matcher.success:
            return ok(
                f"Encountered successful condition {described(cond, matcher)} (message: {_text(cond, 'message')})"
            )
        if matcher.unblock_changes:
            unblock_message = f"Allowing blocked changes to proceed: Encountered condition {described(cond, matcher)}"
    if any(not observed(matcher, cond) for matcher, cond in matches):
        return ongoing(f"Waiting for generation {generation} to be observed by status condition(s)")
    if unblock_message:
        return ongoing(unblock_message, unblock=True)
    return ongoing("No failing or successful conditions found")


def _api_service(resource: dict[str, Any], ignore_failing: bool) -> State:
    state = _selected_true(resource, ("Available",))
    if not state.done and ignore_failing:
        return ok(f"Ignoring ({state.message})")
    return state


def _pod(resource: dict[str, Any]) -> State:
    status = _status(resource)
    match status.get("phase"):
        case "Pending":
            reason = _pending_reason(resource)
            return ongoing(f"Pending: {reason}" if reason else "Pending")
        case "Running":
            state = _selected_true(resource, ("Initialized", "Ready", "PodScheduled"))
            reason = _pending_reason(resource) if not state.done else ""
            # Beyond kapp: say why a running Pod is not ready (CrashLoopBackOff, ...).
            return ongoing(f"{state.message}: {reason}") if reason else state
        case "Succeeded":
            return ok()
        case "Failed":
            return failed("Phase is failed")
        case "Unknown":
            return failed("Phase is unknown")
    return ongoing("Undetermined phase")


def _pending_reason(resource: dict[str, Any]) -> str:
    """The first waiting container's reason (init containers first), else why the Pod is unschedulable."""
    status = _status(resource)
    statuses = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    for container in statuses:
        waiting = (container.get("state") or {}).get("waiting")
        if isinstance(waiting, dict):
            return _with_message(_text(waiting, "reason"), _text(waiting, "message"))
    for cond in _conditions(resource):
        if _text(cond, "type") == "PodScheduled" and _text(cond, "reason") == "Unschedulable":
            return _with_message("Unschedulable", _text(cond, "message"))
    return ""


def _with_message(reason: str, message: str) -> str:
    return f"{reason} (message: {message})" if message else reason


def _service(resource: dict[str, Any]) -> State:
    spec = resource.get("spec") or {}
    service_type = _text(spec, "type")
    if service_type == "ExternalName":
        return ok("External service")
    if not _text(spec, "clusterIP"):
        return ongoing("ClusterIP is empty")
    ingress = (_status(resource).get("loadBalancer") or {}).get("ingress")
    if service_type == "LoadBalancer" and not ingress:
        return ongoing("Load balancer ingress is empty")
    return ok()


def _deployment(resource: dict[str, Any], associated: Sequence[dict[str, Any]]) -> State:
    if (waiting := _observed(resource)) is not None:
        return waiting
    for cond in _conditions(resource):
        reason, message = _text(cond, "reason"), _text(cond, "message")
        match (_text(cond, "type"), _text(cond, "status")):
            case ("Progressing", "False"):
                return failed(f"Deployment is not progressing: {reason} (message: {message})")
            case ("ReplicaFailure", "True"):
                return ongoing(f"Deployment has encountered replica failure: {reason} (message: {message})")
    annotations = objects.annotations(resource)
    # kapp only honours the annotation once it has found children.
    if associated and objects.DEPLOYMENT_MINIMUM_REPLICAS in annotations:
        return _minimum_available(resource, annotations[objects.DEPLOYMENT_MINIMUM_REPLICAS], associated)
    status = _status(resource)
    unavailable = _int(status.get("unavailableReplicas"))
    if unavailable > 0:
        return ongoing(f"Waiting for {unavailable} unavailable replicas")
    replicas = (resource.get("spec") or {}).get("replicas")
    ready = _int(status.get("readyReplicas"))
    if isinstance(replicas, int) and ready < replicas:
        return ongoing(f"Waiting for {replicas - ready}/{replicas} replicas to be ready")
    return ok()


_GO_INT = re.compile(r"[+-]?[0-9]+")


def _minimum_available(resource: dict[str, Any], value: str, associated: Sequence[dict[str, Any]]) -> State:
    """Done once the Deployment's latest ReplicaSet has the minimum (`N` or `N%` of spec.replicas) available."""
    number = value.removesuffix("%")
    if not _GO_INT.fullmatch(number):
        return failed(
            f"Error: Failed to parse {objects.DEPLOYMENT_MINIMUM_REPLICAS}: "
            f"strconv.Atoi: parsing {json.dumps(number, ensure_ascii=False)}: invalid syntax"
        )
    replicas = (resource.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int):
        return failed("Error: Failed to find spec.replicas")
    minimum = replicas * int(number) // 100 if value.endswith("%") else int(number)
    minimum = min(minimum, replicas)
    if replicas > 0 and minimum <= 0:
        minimum = 1

    revision = (objects.annotations(resource)).get(REVISION_ANNOTATION)
    if revision is None:
        return failed(f"Error: Failed to find latest replicaset: Expected to find '{REVISION_ANNOTATION}' but did not")
    latest = next(
        (
            rs
            for rs in associated
            if rs.get("kind") == "ReplicaSet"
            and api_group(rs.get("apiVersion", "")) in ("apps", "extensions")
            and objects.annotations(rs).get(REVISION_ANNOTATION, "") == revision
        ),
        None,
    )
    if latest is None:
        return failed(
            "Error: Failed to find latest replicaset: "
            f"Expected to find replica set (rev {revision}) in associated resources but did not"
        )
    if (waiting := _observed(latest)) is not None:
        return waiting
    available = _int(_status(latest).get("availableReplicas"))
    if available < minimum:
        return ongoing(
            f"Waiting for at least {minimum - available} available replicas (currently {available} available)"
        )
    return ok()


def _daemon_set(resource: dict[str, Any]) -> State:
    if (waiting := _observed(resource)) is not None:
        return waiting
    status = _status(resource)
    # Updated pods must be scheduled before the unavailable count means anything.
    unscheduled = _int(status.get("desiredNumberScheduled")) - _int(status.get("updatedNumberScheduled"))
    if unscheduled > 0:
        return ongoing(f"Waiting for {unscheduled} updated pods to be scheduled")
    unavailable = _int(status.get("numberUnavailable"))
    if unavailable > 0:
        return ongoing(f"Waiting for {unavailable} unavailable pods")
    return ok()


def _job(resource: dict[str, Any]) -> State:
    for cond in _conditions(resource):
        if _text(cond, "status") != "True":
            continue
        match _text(cond, "type"):
            case "Complete":
                return ok("Completed")
            case "Failed":
                return failed(f"Failed with reason {_text(cond, 'reason')}: {_text(cond, 'message')}")
    status = _status(resource)
    active, failures, successes = (_int(status.get(key)) for key in ("active", "failed", "succeeded"))
    return ongoing(f"Waiting to complete ({active} active, {failures} failed, {successes} succeeded)")


def _stateful_set(resource: dict[str, Any]) -> State:
    if (waiting := _observed(resource)) is not None:
        return waiting
    spec = resource.get("spec") or {}
    replicas = spec.get("replicas")
    if not isinstance(replicas, int):
        return failed("Error: Failed to find spec.replicas")
    status = _status(resource)
    to_update, clarification = replicas, ""
    partition = _int(((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition"))
    if partition > 0:
        to_update -= partition
        clarification = f" (updating only {to_update} of {replicas} total)"
    not_updated = to_update - _int(status.get("updatedReplicas"))
    if not_updated > 0:
        return ongoing(f"Waiting for {not_updated} replicas to be updated{clarification}")
    not_ready = replicas - _int(status.get("readyReplicas"))
    if not_ready > 0:
        return ongoing(f"Waiting for {not_ready} replicas to be ready")
    not_deleted = _int(status.get("replicas")) - replicas
    if not_deleted > 0:
        return ongoing(f"Waiting for {not_deleted} replicas to be deleted")
    return ok()


def _replica_set(resource: dict[str, Any]) -> State:
    """Beyond kapp: a ReplicaSet is done when its replicas are ready and available."""
    if (waiting := _observed(resource)) is not None:
        return waiting
    wanted = _int((resource.get("spec") or {}).get("replicas", 1))
    status = _status(resource)
    ready, available = _int(status.get("readyReplicas")), _int(status.get("availableReplicas"))
    if ready < wanted:
        return ongoing(f"Waiting for {wanted - ready} replicas to be ready")
    if available < wanted:
        return ongoing(f"Waiting for {wanted - available} replicas to be available")
    return ok()


def _namespace(resource: dict[str, Any]) -> State:
    """Beyond kapp: a Namespace is done when Active (a Terminating one cannot take new resources)."""
    phase = _text(_status(resource), "phase")
    return ok() if phase in ("", "Active") else ongoing(f"Phase is {phase}")


def _standard_conditions(resource: dict[str, Any]) -> State:
    """Beyond kapp: kstatus' reading of `Ready`, `Failed` and `Stalled` conditions, for resources with no
    specific waiter and no wait rule (custom resources of operators that follow the convention)."""
    if "observedGeneration" in _status(resource) and (waiting := _observed(resource)) is not None:
        return waiting
    by_type = {c.get("type"): c for c in _conditions(resource)}
    for failing in ("Failed", "Stalled"):
        condition = by_type.get(failing)
        if condition and condition.get("status") == "True":
            return failed(
                f"Encountered failure condition {failing} == True: {_text(condition, 'reason')} "
                f"(message: {_text(condition, 'message')})"
            )
    ready = by_type.get("Ready")
    if ready is None:
        return ok()
    if ready.get("status") == "True":
        return ok()
    return ongoing(
        f"Condition Ready is not True ({_text(ready, 'status')}): {_text(ready, 'reason')} "
        f"(message: {_text(ready, 'message')})"
    )


def _claim(resource: dict[str, Any]) -> State:
    """Beyond kapp: a lost claim fails. A pending one is not waited on: with a WaitForFirstConsumer storage
    class it binds only once a Pod uses it, and that Pod's workload is ordered after the claim."""
    phase = _text(_status(resource), "phase")
    if phase == "Lost":
        return failed("Phase is Lost")
    if phase == "Bound":
        return ok()
    return ok(f"Phase is {phase or 'Pending'} (not waited on: binding may wait for a Pod)")
