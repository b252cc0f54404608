"""`service-account list`: which of an app's ServiceAccounts are bound to which of its Roles, as kapp shows it.

A binding joins a ServiceAccount it names as a subject (name, kind, API group and namespace equal) to the first Role
or ClusterRole its roleRef names, if that role is in the binding's own namespace: a RoleBinding to a ClusterRole
joins nothing, as in kapp. What is left unjoined is listed with `?` for the missing parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kapply import objects
from kapply.objects import Obj
from kapply.ui.table import Column, Table

RBAC_VERSIONS = (
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
)
COLUMNS = (Column("Namespace"), Column("Name"), Column("Binding/Role Namespace"), Column("Binding"), Column("Role"))


def _of(resources: Sequence[Obj], versions: Sequence[str], kinds: Sequence[str]) -> list[Obj]:
    return [r for r in resources if objects.api_version(r) in versions and objects.kind(r) in kinds]


def _field(doc: Any, name: str) -> Any:
    """A field of a decoded object, found without regard to case (kapp decodes roleRef and subjects so)."""
    if not isinstance(doc, dict):
        return None
    return next((v for k, v in doc.items() if k.lower() == name.lower()), None)


def _text(doc: Any, name: str) -> str:
    value = _field(doc, name)
    return value if isinstance(value, str) else ""


def _binds_role(binding: Obj, role: Obj) -> bool:
    ref = _field(binding, "roleRef")
    return (
        _text(ref, "name") == objects.name(role)
        and _text(ref, "kind") == objects.kind(role)
        and _text(ref, "apiGroup") == objects.group_of(role)
        and objects.namespace(binding) == objects.namespace(role)
    )


def _binds_account(binding: Obj, account: Obj) -> bool:
    subjects = _field(binding, "subjects")
    return any(
        _text(s, "name") == objects.name(account)
        and _text(s, "kind") == objects.kind(account)
        and _text(s, "apiGroup") == objects.group_of(account)
        and _text(s, "namespace") == objects.namespace(account)
        for s in (subjects if isinstance(subjects, list) else [])
    )


def _namespace(obj: Obj) -> str:
    return objects.namespace(obj) or "(cluster)"


def service_accounts_table(resources: Sequence[Obj]) -> Table:
    """The table of the app's ServiceAccounts, Roles and bindings (other resources are ignored)."""
    accounts = _of(resources, ("v1",), ("ServiceAccount",))
    roles = _of(resources, RBAC_VERSIONS, ("ClusterRole", "Role"))
    bindings = _of(resources, RBAC_VERSIONS, ("ClusterRoleBinding", "RoleBinding"))
    used: set[int] = set()  # ids of what was joined
    rows: list[tuple[str, ...]] = []
    for binding in bindings:
        role = next((r for r in roles if _binds_role(binding, r)), None)
        if role is None:
            continue
        for account in (a for a in accounts if _binds_account(binding, a)):
            used.update((id(binding), id(role), id(account)))
            names = (objects.name(account), _namespace(role), objects.name(binding), objects.name(role))
            rows.append((_namespace(account), *names))
    rows += [(_namespace(a), objects.name(a), "?", "?", "?") for a in accounts if id(a) not in used]
    rows += [("?", "?", _namespace(b), objects.name(b), "?") for b in bindings if id(b) not in used]
    rows += [("?", "?", _namespace(r), "?", objects.name(r)) for r in roles if id(r) not in used]
    return Table("Service accounts", COLUMNS, tuple(sorted(rows)), content="service accounts")
