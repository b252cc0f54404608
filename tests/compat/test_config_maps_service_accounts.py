"""`config-map list` and `service-account list`, compared with the real kapp on apps that hold ConfigMaps, and
ServiceAccounts with Roles, RoleBindings, ClusterRoles and ClusterRoleBindings."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding

from tests.compat.harness import TOOLS, Harness

pytestmark = pytest.mark.compat

CONFIG_MAPS = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello, level: info}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: empty}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: binary-only}
binaryData: {blob: aGVsbG8=}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: elsewhere, namespace: "{ns2}"}
data: {z: "1", a: "2"}
---
apiVersion: v1
kind: Secret
metadata: {name: not-listed}
stringData: {password: hunter2}
"""

RBAC = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa-a}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa-b}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa-lonely}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: role-a}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: role-unused}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: role-a}
subjects:
- {kind: ServiceAccount, name: sa-a, namespace: "{ns}"}
- {kind: ServiceAccount, name: sa-b, namespace: "{ns}"}
- {kind: ServiceAccount, name: sa-a, namespace: other}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb-to-cluster-role}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "{ns}-reader"}
subjects:
- {kind: ServiceAccount, name: sa-a, namespace: "{ns}"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb-missing-role}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: nope}
subjects:
- {kind: ServiceAccount, name: sa-b, namespace: "{ns}"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "{ns}-reader"}
rules: [{apiGroups: [""], resources: [pods], verbs: [list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "{ns}-unbound"}
rules: [{apiGroups: [""], resources: [pods], verbs: [list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "{ns}-reader"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "{ns}-reader"}
subjects:
- {kind: ServiceAccount, name: sa-b, namespace: "{ns}"}
- {kind: User, name: someone, apiGroup: rbac.authorization.k8s.io}
"""


def deploy(both: Harness, app: str, manifests: str) -> None:
    for result in both.run("deploy", "-a", app, "-n", "{ns}", "-f", "-", "-y", input=manifests):
        assert result.code == 0, result.output


@pytest.fixture
def rbac(both: Harness, kube: Client) -> Iterator[None]:
    """The RBAC app deployed by each tool; its cluster-scoped objects are deleted afterwards."""
    deploy(both, "rbac", RBAC)
    yield
    for tool in TOOLS:
        namespace = both.ns[tool]
        doomed = [(ClusterRole, f"{namespace}-reader"), (ClusterRole, f"{namespace}-unbound")]
        for kind, name in [*doomed, (ClusterRoleBinding, f"{namespace}-reader")]:
            with contextlib.suppress(ApiError):
                kube.delete(kind, name)


@pytest.mark.parametrize(
    "mode", [(), ("--tty",), ("--json",), ("--values",), ("--values", "--tty"), ("--values", "--json")]
)
def test_config_map_list_shows_keys_and_values_alike(both: Harness, mode: tuple[str, ...]):
    both.namespaces.new()
    deploy(both, "cms", CONFIG_MAPS)
    pair = both.run("config-map", "list", "-a", "cms", "-n", "{ns}", *mode)
    if "--json" in mode:
        both.same_json(pair)
    else:
        both.same(pair)


@pytest.mark.xfail(strict=True, reason="kapply's tables do not lay out a cell of several lines (ui/table.py)")
def test_config_map_values_of_several_lines_are_laid_out_alike(both: Harness):
    deploy(both, "cms", 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: multi}\ndata: {text: "one\\ntwo"}\n')
    both.same(both.run("cm", "ls", "-a", "cms", "-n", "{ns}", "--values", "--tty"))


def test_config_map_list_of_an_app_without_config_maps_and_of_a_missing_app(both: Harness):
    deploy(both, "none", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\n")
    both.same(both.run("cm", "ls", "-a", "none", "-n", "{ns}", "--tty"))
    both.same_json(both.run("cm", "ls", "-a", "none", "-n", "{ns}", "--json"))
    both.same(both.run("cm", "ls", "-a", "missing", "-n", "{ns}", "--tty"))


@pytest.mark.usefixtures("rbac")
@pytest.mark.parametrize("mode", [(), ("--tty",), ("--json",)])
def test_service_account_list_joins_accounts_bindings_and_roles_alike(both: Harness, mode: tuple[str, ...]):
    pair = both.run("service-account", "list", "-a", "rbac", "-n", "{ns}", *mode)
    if "--json" in mode:
        both.same_json(pair)
    else:
        both.same(pair)


def test_service_account_list_of_an_app_without_any(both: Harness):
    deploy(both, "cms", CONFIG_MAPS.replace('"{ns2}"', '"{ns}"'))
    both.same(both.run("sa", "ls", "-a", "cms", "-n", "{ns}", "--tty"))
    both.same_json(both.run("sa", "ls", "-a", "cms", "-n", "{ns}", "--json"))
    both.same(both.run("sa", "ls", "-a", "missing", "-n", "{ns}"))
