"""`--preflight`: PermissionValidation (SelfSubjectAccessReviews for each change, RBAC escalation rules for roles and
bindings) and CRDUpgradeSafety (no scope change, no stored version removed), run after the plan is shown; a failed
check applies nothing. PermissionValidation runs as a user who is `admin` of the test's namespaces only."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_global_resource
from lightkube.resources.rbac_authorization_v1 import RoleBinding

from tests.compat.harness import DEPLOY_STDIN, TOOLS, Harness, Pair
from tests.e2e.harness import Cluster

pytestmark = pytest.mark.compat

CRD_TYPE = create_global_resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions")


def succeeded(pair: Pair) -> None:
    for result in pair:
        assert result.code == 0, result.output


@pytest.fixture
def restricted(both: Harness, kube: Client, cluster: Cluster) -> dict[str, str]:
    """The environment of a user who is `admin` in each tool's namespace, and nothing more."""
    if cluster.restricted_kubeconfig is None:
        pytest.skip("no restricted user on this cluster")
    for tool in TOOLS:
        kube.create(
            RoleBinding.from_dict(
                {
                    "metadata": {"name": "restricted-admin", "namespace": both.ns[tool]},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                    "subjects": [
                        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "kapply-restricted"}
                    ],
                }
            )
        )
    return {"KUBECONFIG": str(cluster.restricted_kubeconfig)}


ALLOWED = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\ndata: {k: v}\n"
QUOTA = "---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {name: quota}\nspec: {hard: {pods: '10'}}\n"
ROLE = """---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules:
- apiGroups: [""]
  resources: [nodes, pods]
  verbs: [get, list]
- apiGroups: [apps]
  resources: [deployments]
  resourceNames: [web]
  verbs: [get]
"""
BINDING = """---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: everything}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: someone}]
"""


def test_permission_validation_refuses_what_the_user_may_not_do(both: Harness, restricted: dict[str, str]):
    pair = both.run_together(
        *DEPLOY_STDIN, "-y", "--preflight=PermissionValidation", input=ALLOWED + ROLE + QUOTA + BINDING, env=restricted
    )
    both.same(pair)
    assert pair.kapply.code == 1
    assert 'not permitted to "create" /v1, Resource=resourcequotas' in pair.kapply.stderr
    assert "potential privilege escalation" in pair.kapply.stderr
    assert "ConfigMap/fine" not in both.objects("kapply")


def test_permission_validation_passes_what_the_user_may_do(both: Harness, restricted: dict[str, str]):
    flags = (*DEPLOY_STDIN, "-y", "--preflight=PermissionValidation")
    pair = both.run_together(*flags, input=ALLOWED, env=restricted)
    both.same(pair, exact=False)
    succeeded(pair)
    both.same_objects()


def test_permission_validation_checks_deletes(both: Harness, restricted: dict[str, str]):
    # as admin
    succeeded(both.run_together(*DEPLOY_STDIN, "-y", input=ALLOWED + QUOTA))
    pair = both.run_together(*DEPLOY_STDIN, "-y", "--preflight=PermissionValidation", input=ALLOWED, env=restricted)
    both.same(pair, exact=False)
    assert pair.kapply.code == 1 and 'not permitted to "delete" /v1, Resource=resourcequotas' in pair.kapply.stderr


def crd(scope: str = "Namespaced", version: str = "v1", extra_field: bool = True) -> str:
    color = "\n              color: {type: string}" if extra_field else ""
    return f"""---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.{{ns}}.kapply.dev}}
spec:
  group: "{{ns}}.kapply.dev"
  scope: {scope}
  names: {{kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}}
  versions:
  - name: {version}
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {{type: string}}{color}
"""


@pytest.fixture
def crds(both: Harness, kube: Client) -> Iterator[None]:
    try:
        yield
    finally:
        for tool in TOOLS:
            with contextlib.suppress(ApiError):
                kube.delete(CRD_TYPE, f"widgets.{both.ns[tool]}.kapply.dev")


@pytest.mark.usefixtures("crds")
def test_crd_upgrade_safety_refuses_unsafe_changes(both: Harness):
    deploy = ("deploy", "-a", "crd", "-n", "{ns}", "-f", "-", "-y", "--preflight=CRDUpgradeSafety")
    succeeded(both.run_together(*deploy, input=crd()))  # a create is always safe
    for unsafe in (crd(scope="Cluster"), crd(version="v2"), crd(scope="Cluster", version="v2")):
        pair = both.run_together(*deploy, input=unsafe)
        both.same(pair, exact=False)
        assert pair.kapply.code == 1 and "validation for safe CRD upgrades failed" in pair.kapply.stderr
    pair = both.run_together(*deploy, input=crd(extra_field=False))  # kapp's release does not check removed fields
    both.same(pair, exact=False)
    succeeded(pair)


PREFLIGHT_CONFIG = """---
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
preflightRules:
- name: CRDUpgradeSafety
"""


@pytest.mark.usefixtures("crds")
def test_a_config_enables_checks_when_the_flag_is_not_given(both: Harness):
    deploy = ("deploy", "-a", "crd", "-n", "{ns}", "-f", "-", "-y")
    succeeded(both.run_together(*deploy, input=crd() + PREFLIGHT_CONFIG))
    pair = both.run_together(*deploy, input=crd(scope="Cluster") + PREFLIGHT_CONFIG)
    both.same(pair, exact=False)
    assert pair.kapply.code == 1 and "validation for safe CRD upgrades failed" in pair.kapply.stderr


def test_unknown_checks_are_refused_before_anything_else(both: Harness):
    for value in ("Foo", "PermissionValidation,Bar"):
        pair = both.run_together(*DEPLOY_STDIN, f"--preflight={value}", input=ALLOWED)
        both.same(pair)
        assert pair.kapply.code == 1


def test_a_diff_run_runs_no_checks(both: Harness, restricted: dict[str, str]):
    pair = both.run_together(
        *DEPLOY_STDIN, "--diff-run", "--preflight=PermissionValidation", input=ALLOWED + QUOTA, env=restricted
    )
    both.same(pair)
    assert pair.kapply.code == 0
