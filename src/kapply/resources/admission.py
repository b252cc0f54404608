"""Which mutating admission webhooks may have written a field of an object.

The API server records a request's fields in `metadata.managedFields` before mutating admission runs, so a webhook is
never a field manager: a field it adds has no recorded writer at all. What can be said is which webhooks the server
calls for the object: those of the MutatingWebhookConfigurations whose rules match its group, version, resource and
scope for a CREATE or UPDATE, and whose object selector matches its labels (namespace selectors are not evaluated:
a webhook with one counts as matching).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kapply import objects
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, ResourceType

MUTATING_WEBHOOK_CONFIGURATIONS = ResourceType(
    "admissionregistration.k8s.io",
    "v1",
    "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations",
    False,
    frozenset({"list"}),
)
_WRITES = {"CREATE", "UPDATE", "*"}


async def mutating_webhook_configurations(cluster: Cluster) -> list[Obj]:
    """The cluster's MutatingWebhookConfigurations; none when the caller may not list them."""
    try:
        return await cluster.list(MUTATING_WEBHOOK_CONFIGURATIONS)
    except ClusterError as e:
        if e.unauthorized or e.forbidden or e.not_found:
            return []
        raise


def webhooks_for(configurations: Sequence[Obj], rtype: ResourceType, obj: Obj) -> list[str]:
    """`configuration/webhook` names of the webhooks the server calls when `obj` (of `rtype`) is written."""
    found = []
    for config in configurations:
        for hook in config.get("webhooks") or []:
            if not isinstance(hook, dict):
                continue
            rules = [r for r in hook.get("rules") or [] if isinstance(r, dict)]
            if any(_rule_matches(r, rtype) for r in rules) and _selector_matches(hook.get("objectSelector"), obj):
                found.append(f"{objects.metadata(config).get('name', '')}/{hook.get('name', '')}")
    return found


def _has(values: Any, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def _rule_matches(rule: Mapping[str, Any], rtype: ResourceType) -> bool:
    scope = rule.get("scope") or "*"
    in_scope = scope == "*" or (scope == "Namespaced") == rtype.namespaced
    return (
        in_scope
        and bool(set(rule.get("operations") or []) & _WRITES)
        and _has(rule.get("apiGroups"), rtype.group)
        and _has(rule.get("apiVersions"), rtype.version)
        and _has(rule.get("resources"), rtype.plural)
    )


def _selector_matches(selector: Any, obj: Obj) -> bool:
    """A label selector (matchLabels, matchExpressions) against the object's labels; an empty one matches all."""
    if not isinstance(selector, dict):
        return True
    labels = objects.labels(obj)
    match_labels = selector.get("matchLabels") or {}
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True
