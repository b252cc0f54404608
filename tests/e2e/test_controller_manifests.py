"""`pip install kapply`, then `kapply controller manifests --image REF | kapply deploy -a kapply-controller -n
kapply-system -f-` (docs/reconciler.md, "Installing"): the wheel carries the install manifests (`--crds-only`: the
CRDs alone), and they install on the real API server, where the local cluster's simulated node (kwok, which runs no
containers) rolls the Deployment out, with the image named.

The CRDs are shared with other tests, which install them as the apps kapply-crds (the App CRD) and
kapply-packaging-crds (the packaging CRDs) in kapply-system. This install takes them over
(`--dangerous-override-ownership-of-existing-resources`, which a cluster without them does not need) and gives them
back afterwards, by deploying those apps again the same way; then it deletes its app. The cluster is left as found:
the CRDs with the apps that had them (or gone, if none had), the RBAC and the Deployment gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap, Namespace

from kapply.cli.controller_manifests import stream
from tests.e2e.harness import Cluster, parse_json_output

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "kapply-system"
APP = "kapply-controller"
# The apps other tests install the CRDs as, and the files they install (tests/e2e/controller_harness.py,
# tests/e2e/packaging_harness.py).
CRD_OWNERS = {
    "kapply-crds": ("config/controller/crd.yml",),
    "kapply-packaging-crds": ("config/packaging/crds.yml",),
}
CRDS = (
    "apps.kapply.dev",
    "packagerepositories.packaging.kapply.dev",
    "packageinstalls.packaging.kapply.dev",
    "packages.data.packaging.kapply.dev",
    "packagemetadatas.data.packaging.kapply.dev",
)
OVERRIDE = "--dangerous-override-ownership-of-existing-resources"
IMAGE = "registry.example/kapply:e2e"  # your registry's copy of `make image`'s (kwok runs no containers: never pulled)


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `kapply` of a fresh virtualenv into which the wheel built from this checkout was pip-installed (its
    dependencies from PyPI)."""
    work = tmp_path_factory.mktemp("wheel")
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", work / "dist", REPO)
    (wheel,) = (work / "dist").glob("kapply-*.whl")
    run(sys.executable, "-m", "venv", work / "venv")
    run(work / "venv" / "bin" / "pip", "install", "--quiet", wheel)
    return work / "venv" / "bin" / "kapply"


def run(*argv: str | Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert result.returncode == 0, f"{argv} exited {result.returncode}:\n{result.stdout}{result.stderr}"
    return result.stdout


def app_exists(kube: Client, name: str) -> bool:
    try:
        kube.get(ConfigMap, name, namespace=NAMESPACE)
    except ApiError as e:
        if e.status.code == 404:
            return False
        raise
    return True


@pytest.fixture
def crds_given_back(cluster: Cluster, kube: Client) -> Iterator[bool]:
    """kapply-system exists; yields whether another app owns the CRDs already. Afterwards those apps take them back,
    and the app this test installs is deleted."""
    try:
        kube.create(Namespace.from_dict({"metadata": {"name": NAMESPACE}}))
    except ApiError as e:
        if e.status.code != 409:
            raise
    if app_exists(kube, APP):
        pytest.fail(f"the app {APP} is installed in {NAMESPACE} already; this test installs it, and would replace it")
    owners = [name for name in CRD_OWNERS if app_exists(kube, name)]
    kapply = [sys.executable, "-m", "kapply"]
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    try:
        yield bool(owners)
    finally:
        for owner in owners:
            files = [arg for path in CRD_OWNERS[owner] for arg in ("-f", str(REPO / path))]
            run(*kapply, "deploy", "-a", owner, "-n", NAMESPACE, "-y", OVERRIDE, *files, env=env)
        run(*kapply, "delete", "-a", APP, "-n", NAMESPACE, "-y", "--wait-check-interval=0.5s", env=env)


def test_the_wheels_manifests_install_the_controller_and_its_deployment_rolls_out(
    installed_wheel: Path, crds_given_back: bool, cluster: Cluster, kube: Client
) -> None:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    printed = run(installed_wheel, "controller", "manifests", env=env)
    assert printed == stream()  # the wheel's copies are this checkout's config/ files
    assert run(installed_wheel, "controller", "manifests", "--crds-only", env=env) == stream(crds_only=True)

    deploy = [str(installed_wheel), "deploy", "-a", APP, "-n", NAMESPACE, "-f-", "-y", "--wait-check-interval=0.5s"]
    if crds_given_back:
        deploy.append(OVERRIDE)
    printing = [str(installed_wheel), "controller", "manifests", "--image", IMAGE]
    manifests = subprocess.Popen(printing, stdout=subprocess.PIPE, env=env)
    assert manifests.stdout is not None
    deployed = subprocess.run(
        deploy, stdin=manifests.stdout, capture_output=True, text=True, env=env, timeout=300, check=False
    )
    manifests.stdout.close()
    assert manifests.wait(10) == 0
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr

    deployment = kube.get(Deployment, "kapply-controller", namespace=NAMESPACE)
    assert deployment.status.availableReplicas == 2
    (container,) = deployment.spec.template.spec.containers
    assert container.image == IMAGE
    assert container.args[:2] == ["controller", "--in-cluster"]
    for name in CRDS:
        crd = kube.get(CustomResourceDefinition, name)
        assert {c.type: c.status for c in crd.status.conditions}["Established"] == "True", name
    inspected = run(installed_wheel, "inspect", "-a", APP, "-n", NAMESPACE, "--json", env=env)
    kinds = sorted(parse_json_output(inspected).tables[0].column("kind"))
    assert [k for k in kinds if k not in ("Pod", "ReplicaSet")] == sorted(
        ["CustomResourceDefinition"] * 5
        + ["ClusterRole", "ClusterRoleBinding", "Deployment", "Role", "RoleBinding", "ServiceAccount"]
    )
