"""Deployment (kapp's AppsV1Deployment): rolled out when every replica is updated and available; with
`kapp.k14s.io/apps-v1-deployment-wait-minimum-replicas-available`, once its latest ReplicaSet has that many."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from kapply import objects
from kapply.apply.waiters.reading import as_int, conditions, observed, status, text
from kapply.apply.waiters.state import State, failed, ok, ongoing
from kapply.objects import api_group

REVISION_ANNOTATION = "deployment.kubernetes.io/revision"

_GO_INT = re.compile(r"[+-]?[0-9]+")


def check(resource: dict[str, Any], associated: Sequence[dict[str, Any]]) -> State:
    if (waiting := observed(resource)) is not None:
        return waiting
    for cond in conditions(resource):
        reason, message = text(cond, "reason"), text(cond, "message")
        match (text(cond, "type"), text(cond, "status")):
            case ("Progressing", "False"):
                return failed(f"Deployment is not progressing: {reason} (message: {message})")
            case ("ReplicaFailure", "True"):
                return ongoing(f"Deployment has encountered replica failure: {reason} (message: {message})")
    annotations = objects.annotations(resource)
    # kapp only honours the annotation once it has found children.
    if associated and objects.DEPLOYMENT_MINIMUM_REPLICAS in annotations:
        return _minimum_available(resource, annotations[objects.DEPLOYMENT_MINIMUM_REPLICAS], associated)
    found = status(resource)
    unavailable = as_int(found.get("unavailableReplicas"))
    if unavailable > 0:
        return ongoing(f"Waiting for {unavailable} unavailable replicas")
    replicas = (resource.get("spec") or {}).get("replicas")
    ready = as_int(found.get("readyReplicas"))
    if isinstance(replicas, int) and ready < replicas:
        return ongoing(f"Waiting for {replicas - ready}/{replicas} replicas to be ready")
    return ok()


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
    if (waiting := observed(latest)) is not None:
        return waiting
    available = as_int(status(latest).get("availableReplicas"))
    if available < minimum:
        return ongoing(
            f"Waiting for at least {minimum - available} available replicas (currently {available} available)"
        )
    return ok()
