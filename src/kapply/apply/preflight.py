"""kapp's preflight checks (`--preflight=PermissionValidation,CRDUpgradeSafety`): run on the planned changes after
the diff is shown and before anything is applied (or confirmed); a failed check stops the deploy with nothing applied.

- PermissionValidation asks the API server, with a SelfSubjectAccessReview per question, whether the user may make
  each change: `create` and `update` for a resource created or updated, `delete` for one deleted. A Role or ClusterRole
  needs `escalate` on it, or else every permission it grants (RBAC refuses a role that grants more than its author
  has); a RoleBinding or ClusterRoleBinding needs `bind`, or else every permission of the role it refers to, read from
  the cluster.
- CRDUpgradeSafety compares each CustomResourceDefinition that is updated with the one on the cluster: its scope may
  not change, and no version the cluster has stored objects in (`status.storedVersions`) may go. These are the checks
  of the kapp release kapply follows (later kapp releases also refuse removed fields and changed enums).

The checks run are those `--preflight` names; without the flag, those the Config's `preflightRules` name (as kapp).
Errors read as kapp's (`preflight checks failed: running preflight check "PermissionValidation": not permitted to
"create" /v1, Resource=resourcequotas`). Beyond kapp: a rule of non-resource URLs (`/healthz`) in a role is checked as
a non-resource permission (kapp crashes on it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kapply import objects
from kapply.apply.planning import ClusterChange
from kapply.diff.change import ApplyOp
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, Discovery, ResourceType

PERMISSION_VALIDATION = "PermissionValidation"
CRD_UPGRADE_SAFETY = "CRDUpgradeSafety"
CHECKS = (PERMISSION_VALIDATION, CRD_UPGRADE_SAFETY)

SELF_SUBJECT_ACCESS_REVIEWS = ResourceType(
    "authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False, frozenset({"create"})
)
CRDS = ResourceType(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    False,
    frozenset({"get"}),
)
RBAC = "rbac.authorization.k8s.io/v1"
ROLES = ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", True, frozenset({"get"}))
CLUSTER_ROLES = ResourceType(
    "rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, frozenset({"get"})
)


def _map(obj: Any, key: str) -> dict[str, Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def _list(obj: Any, key: str) -> list[Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, list) else []


class PreflightError(KapplyError):
    """A preflight check failed: nothing was applied."""


def parse(value: str) -> tuple[str, ...] | None:
    """The checks a `--preflight` value enables (`PermissionValidation,CRDUpgradeSafety`); None for "" (the flag not
    given: the Config's `preflightRules` decide)."""
    if not value:
        return None
    names = value.split(",")
    for name in names:
        if name not in CHECKS:
            raise KapplyError(
                f'invalid argument "{value}" for "--preflight" flag: unknown preflight check "{name}" specified'
            )
    return tuple(name for name in CHECKS if name in names)


async def run(cluster: Cluster, discovery: Discovery, changes: Sequence[ClusterChange], checks: Sequence[str]) -> None:
    """Run the enabled checks on the changes; PreflightError for the first that fails."""
    for name in checks:
        check = _permissions if name == PERMISSION_VALIDATION else _crd_upgrade_safety
        errors = await check(cluster, discovery, changes)
        if errors:
            raise PreflightError(f'preflight checks failed: running preflight check "{name}": ' + "\n".join(errors))


# ---------------------------------------------------------------------------------------------------- permissions


@dataclass(frozen=True, slots=True)
class Attributes:
    """A SelfSubjectAccessReview's question."""

    verb: str
    group: str = ""
    version: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""
    non_resource_url: str = ""

    def spec(self) -> Obj:
        if self.non_resource_url:
            return {"nonResourceAttributes": {"path": self.non_resource_url, "verb": self.verb}}
        attributes = {
            "group": self.group,
            "version": self.version,
            "resource": self.resource,
            "namespace": self.namespace,
            "name": self.name,
            "verb": self.verb,
        }
        return {"resourceAttributes": {k: v for k, v in attributes.items() if v}}

    def describe(self) -> str:
        """Go's schema.GroupVersionResource String(): `apps/v1, Resource=deployments`, `/v1, Resource=pods`."""
        if self.non_resource_url:
            return self.non_resource_url
        return f"{self.group}/{self.version}, Resource={self.resource}"


async def review(cluster: Cluster, attributes: Attributes) -> str | None:
    """None when the user may do it, else kapp's error."""
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": attributes.spec(),
    }
    try:
        answer = await cluster.create(SELF_SUBJECT_ACCESS_REVIEWS, body)
    except ClusterError as e:
        return e.detail
    status = answer.get("status") or {}
    if status.get("evaluationError"):
        return f"unable to validate permissions: {status['evaluationError']}"
    if not status.get("allowed"):
        return f'not permitted to "{attributes.verb}" {attributes.describe()}'
    return None


def breakdown(rule: Any) -> list[Attributes]:
    """A policy rule as single permissions (Kubernetes' BreakdownRule): one per group, resource, verb (and resource
    name), then one per non-resource URL and verb."""
    if not isinstance(rule, dict):
        return []

    def strings(key: str) -> list[str]:
        value = rule.get(key) or []
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

    groups, resources, verbs, names = (
        strings("apiGroups"),
        strings("resources"),
        strings("verbs"),
        strings("resourceNames"),
    )
    out = [
        Attributes(verb, group, "", resource, name=name)
        for group in groups
        for resource in resources
        for verb in verbs
        for name in (names or [""])
    ]
    out += [Attributes(verb, non_resource_url=url) for url in strings("nonResourceURLs") for verb in verbs]
    return out


def _gvk(obj: Obj) -> str:
    """Go's schema.GroupVersionKind String(): `rbac.authorization.k8s.io/v1, Kind=Role`."""
    api_version = objects.api_version(obj)
    with_group = api_version if "/" in api_version else f"/{api_version}"
    return f"{with_group}, Kind={objects.kind(obj)}"


async def _referenced_rules(cluster: Cluster, binding: Obj) -> tuple[list[Any], str | None]:
    """The rules of the role a binding refers to, read from the cluster; or kapp's error."""
    ref = _map(binding, "roleRef")
    role_kind, role_name = str(ref.get("kind", "")), str(ref.get("name", ""))
    kind, name = objects.kind(binding), objects.name(binding)
    if kind == "RoleBinding" and role_kind not in ("ClusterRole", "Role"):
        return [], f'fetching rules for binding: unknown role reference kind: "{role_kind}"'
    rtype, namespace = (
        (ROLES, objects.namespace(binding)) if role_kind == "Role" and kind == "RoleBinding" else (CLUSTER_ROLES, None)
    )
    shown = "Role" if rtype is ROLES else "ClusterRole"
    try:
        role = await cluster.get(rtype, namespace, role_name)
    except ClusterError as e:
        return [], f'fetching rules for binding: fetching {shown} "{role_name}" for {kind} "{name}": {e.detail}'
    if role is None:
        plural = f"{rtype.plural}.{rtype.group}"
        return [], (
            f'fetching rules for binding: fetching {shown} "{role_name}" for {kind} "{name}": '
            f'{plural} "{role_name}" not found'
        )
    return _list(role, "rules"), None


async def _validate(cluster: Cluster, discovery: Discovery, res: Obj, verb: str) -> list[str]:
    """kapp's validators: the basic one, or for RBAC roles and bindings the escalation rules. Errors, as lines."""
    api_version, kind = objects.api_version(res), objects.kind(res)
    rtype = discovery.find(api_version, kind)
    if rtype is None:
        return [f'no matches for kind "{kind}" in version "{api_version}"']
    own = Attributes(
        verb, rtype.group, rtype.version, rtype.plural, objects.namespace(res) or "", objects.name(res) or ""
    )
    special = api_version == RBAC and kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
    if not special or verb not in ("create", "update"):
        error = await review(cluster, own)
        return [error] if error else []
    escape = "escalate" if kind in ("Role", "ClusterRole") else "bind"
    if await review(cluster, Attributes(escape, own.group, own.version, own.resource, own.namespace, own.name)) is None:
        return []
    error = await review(cluster, own)
    return [error] if error else await _escalation(cluster, res, verb)


async def _escalation(cluster: Cluster, res: Obj, verb: str) -> list[str]:
    """kapp's escalation check of a Role or binding the user may not escalate or bind: the user must hold every rule
    it grants (a binding: its role's rules). Errors, as lines."""
    if objects.kind(res) in ("Role", "ClusterRole"):
        rules = _list(res, "rules")
    else:
        rules, failure = await _referenced_rules(cluster, res)
        if failure:
            return [failure]
    wanted = [a for rule in rules for a in breakdown(rule)]
    namespace = objects.namespace(res) or ""
    found = await asyncio.gather(
        *(
            review(cluster, a if a.non_resource_url else Attributes(a.verb, a.group, "", a.resource, namespace, a.name))
            for a in wanted
        )
    )
    errors = [e for e in found if e]
    if errors:
        return [f'potential privilege escalation, not permitted to "{verb}" {_gvk(res)}', *errors]
    return []


async def _permissions(cluster: Cluster, discovery: Discovery, changes: Sequence[ClusterChange]) -> list[str]:
    async def one(change: ClusterChange) -> list[str]:
        res = change.change.resource
        if change.apply_op is ApplyOp.DELETE:
            return await _validate(cluster, discovery, res, "delete")
        if change.apply_op in (ApplyOp.CREATE, ApplyOp.UPDATE):
            return [
                *await _validate(cluster, discovery, res, "create"),
                *await _validate(cluster, discovery, res, "update"),
            ]
        return []

    found = await asyncio.gather(*(one(c) for c in changes))
    return [line for lines in found for line in lines]


# ---------------------------------------------------------------------------------------------------- CRDs


def _versions(crd: Obj) -> set[str]:
    versions = _list(_map(crd, "spec"), "versions")
    return {v["name"] for v in versions if isinstance(v, dict) and isinstance(v.get("name"), str)}


def crd_violations(old: Obj, new: Obj) -> list[str]:
    """Why updating CRD `old` (as the cluster has it) to `new` is unsafe, in kapp's words; [] when it is safe."""
    old_spec, new_spec = _map(old, "spec"), _map(new, "spec")
    found: list[tuple[str, str]] = []
    old_scope, new_scope = str(old_spec.get("scope") or ""), str(new_spec.get("scope") or "")
    if old_scope != new_scope:
        found.append(("NoScopeChange", f'scope changed from "{old_scope}" to "{new_scope}"'))
    stored = _list(_map(old, "status"), "storedVersions")
    versions = _versions(new)
    removed = [v for v in stored if isinstance(v, str) and v not in versions]
    if removed:
        found.append(("NoStoredVersionRemoved", f'stored version "{removed[0]}" removed'))
    name = objects.name(new)
    return [
        f'CustomResourceDefinition {name} failed upgrade safety validation. "{validation}" validation failed: {reason}'
        for validation, reason in found
    ]


async def _crd_upgrade_safety(cluster: Cluster, discovery: Discovery, changes: Sequence[ClusterChange]) -> list[str]:
    errors: list[str] = []
    for change in changes:
        res = change.change.resource
        if change.apply_op not in (ApplyOp.CREATE, ApplyOp.UPDATE):
            continue
        if objects.api_version(res) != "apiextensions.k8s.io/v1" or objects.kind(res) != "CustomResourceDefinition":
            continue
        try:
            old = await cluster.get(CRDS, None, objects.name(res))
        except ClusterError as e:
            return [f"checking for existing CRD resource: {e.detail}"]
        if old is not None:
            errors += crd_violations(old, res)
    if errors:
        return ["validation for safe CRD upgrades failed", *errors]
    return []
