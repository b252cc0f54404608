"""`kapply controller --api-groups carvel`: kapp-controller's own objects, unchanged (apiVersions included),
reconcile on kapply. One controller for the module, with exactly the rights that `kapply controller manifests
--api-groups carvel` grants, and the CRDs it prints (kappctrl.k14s.io, packaging.carvel.dev,
data.packaging.carvel.dev: disjoint from kapply's, so other modules' controllers never see these objects). An App, a
PackageRepository with inline content and PackageInstalls written for kapp-controller reconcile; the finalizers, app
records and global namespace are kapp-controller's."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.core_v1 import Namespace, Secret

from kapply.controller.vocabulary import CARVEL, Resource
from tests.e2e.controller_harness import (
    config_map_data,
    controller,
    controller_identity,
    create_if_missing,
    deployer,
    tool_env,
)
from tests.e2e.harness import Cluster, KapplyRunner, eventually
from tests.e2e.packaging_harness import carvel_crds, carvel_manifests

pytestmark = pytest.mark.e2e


def resource(of: Resource) -> Any:
    return create_namespaced_resource(of.group, "v1alpha1", of.kind, of.plural)


App, PackageRepository, PackageInstall, Package = (
    resource(r) for r in (CARVEL.app, CARVEL.repository, CARVEL.install, CARVEL.package)
)
KINDS = {"App": App, "PackageRepository": PackageRepository, "PackageInstall": PackageInstall, "Package": Package}
SUFFIX = uuid.uuid4().hex[:6]
REF = "simple.carvel.test"
GLOBAL_REF = f"global-{SUFFIX}.carvel.test"  # a Package of the shared global namespace: a name of this run's


def config_map_package(ref_name: str, version: str, config_map: str) -> str:
    """A Package as kapp-controller's inline examples write one: ytt deploys the ConfigMap `config_map`, whose data
    says the version."""
    return f"""
apiVersion: data.packaging.carvel.dev/v1alpha1
kind: Package
metadata:
  name: {ref_name}.{version}
spec:
  refName: {ref_name}
  version: {version}
  template:
    spec:
      fetch:
      - inline:
          paths:
            cm.yml: |
              apiVersion: v1
              kind: ConfigMap
              metadata:
                name: {config_map}
              data:
                version: {version}
      template:
      - ytt: {{}}
      deploy:
      - kapp:
          rawOptions: ["--wait-check-interval=0.5s"]
"""


def indented(text: str, spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" for line in text.strip("\n").splitlines())


# Written for kapp-controller (its docs' shapes): an App, a repository with inline content, two installs (of the
# repository's package, and of one in kapp-controller's global namespace).
OBJECTS = f"""
apiVersion: kappctrl.k14s.io/v1alpha1
kind: App
metadata:
  name: simple-app
spec:
  serviceAccountName: deployer
  syncPeriod: 2s
  fetch:
  - inline:
      paths:
        cm.yml: |
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: simple-app-cm
          data:
            hello: world
  template:
  - ytt: {{}}
  deploy:
  - kapp:
      rawOptions: ["--wait-check-interval=0.5s"]
---
apiVersion: packaging.carvel.dev/v1alpha1
kind: PackageRepository
metadata:
  name: simple-repo
spec:
  fetch:
    inline:
      paths:
        packages/{REF}/metadata.yml: |
          apiVersion: data.packaging.carvel.dev/v1alpha1
          kind: PackageMetadata
          metadata:
            name: {REF}
          spec:
            displayName: Simple
        packages/{REF}/1.0.0.yml: |
{indented(config_map_package(REF, "1.0.0", "local-cm"), 10)}
---
apiVersion: packaging.carvel.dev/v1alpha1
kind: PackageInstall
metadata:
  name: local
spec:
  serviceAccountName: deployer
  syncPeriod: 2s
  packageRef:
    refName: {REF}
    versionSelection:
      constraints: ">=1.0.0"
---
apiVersion: packaging.carvel.dev/v1alpha1
kind: PackageInstall
metadata:
  name: global
spec:
  serviceAccountName: deployer
  syncPeriod: 2s
  packageRef:
    refName: {GLOBAL_REF}
    versionSelection:
      constraints: 1.0.0
"""


def create(kube: Client, namespace: str, text: str) -> None:
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        doc["metadata"]["namespace"] = namespace
        kind = KINDS.get(doc["kind"])
        kube.create(kind(**doc) if kind is not None else from_dict(doc))


def get(kube: Client, kind: Any, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return dict(kube.get(kind, name, namespace=namespace))
    except ApiError as e:
        if e.status.code == 404:
            return None
        raise


def succeeded(kube: Client, kind: Any, namespace: str, name: str) -> bool:
    obj = get(kube, kind, namespace, name) or {}
    reported = obj.get("status") or {}
    conditions = reported.get("conditions") or [{}]
    current = reported.get("observedGeneration") == obj.get("metadata", {}).get("generation")
    return bool(current and conditions[0].get("type") == "ReconcileSucceeded")


def delete_all(kube: Client, kind: Any, namespace: str) -> None:
    for obj in kube.list(kind, namespace=namespace):
        kube.delete(kind, obj.metadata.name, namespace=namespace)
    eventually(lambda: not list(kube.list(kind, namespace=namespace)), timeout=60, what=f"{kind.__name__}s gone")


@pytest.fixture(scope="module")
def carvel(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """kapp-controller's objects created in a namespace of the module's, reconciled by one controller in carvel mode
    (`-n` that namespace: it also reads the global namespace's Packages); afterwards they are deleted while it runs
    (their finalizers are its), and its log is printed."""
    directory = tmp_path_factory.mktemp("carvel")
    namespace = f"t-carvel-{SUFFIX}"
    log = directory / "controller.log"
    with ExitStack() as stack:
        stack.enter_context(carvel_crds(cluster, kube, directory))
        kube.create(Namespace.from_dict({"metadata": {"name": namespace}}))
        stack.callback(kube.delete, Namespace, namespace)
        create_if_missing(kube, Namespace.from_dict({"metadata": {"name": CARVEL.global_namespace}}))
        create(kube, CARVEL.global_namespace, config_map_package(GLOBAL_REF, "1.0.0", "global-cm"))
        stack.callback(kube.delete, Package, f"{GLOBAL_REF}.1.0.0", namespace=CARVEL.global_namespace)
        identity = stack.enter_context(controller_identity(kube, cluster.kubeconfig, directory, carvel_manifests()))
        flags = ("-n", namespace, "--leader-elect=false", "--api-groups=carvel")
        stack.enter_context(controller(identity.kubeconfig, log, *flags, env=tool_env("ytt")))
        try:
            create(kube, namespace, deployer(namespace))
            create(kube, namespace, OBJECTS)
            yield namespace
            delete_all(kube, PackageInstall, namespace)
            delete_all(kube, PackageRepository, namespace)
            delete_all(kube, App, namespace)
        finally:
            print(f"--- controller ---\n{log.read_text() if log.exists() else ''}")
    assert "Traceback" not in log.read_text(), "the controller crashed (its log is above)"


def test_an_app_written_for_kapp_controller_reconciles_with_its_finalizer_and_record(carvel: str, kube: Client) -> None:
    eventually(lambda: succeeded(kube, App, carvel, "simple-app"), timeout=60, what="the App reconciled")
    app = get(kube, App, carvel, "simple-app") or {}
    assert app["metadata"]["finalizers"] == ["finalizers.kapp-ctrl.k14s.io/delete"]
    assert app["status"]["friendlyDescription"] == "Reconcile succeeded"
    assert config_map_data(kube, carvel, "simple-app-cm") == {"hello": "world"}
    # kapp-controller 0.53's kapp app name (it renames a legacy `<name>-ctrl` record to it: `--prev-app`)
    assert config_map_data(kube, carvel, "simple-app.app") is not None


def test_a_repository_and_installs_written_for_kapp_controller_reconcile_as_its_own(
    carvel: str, kube: Client, kapply: KapplyRunner
) -> None:
    done = ("local", "global")
    eventually(lambda: all(succeeded(kube, PackageInstall, carvel, n) for n in done), timeout=60, what="installs")
    assert succeeded(kube, PackageRepository, carvel, "simple-repo")
    repository = get(kube, PackageRepository, carvel, "simple-repo") or {}
    assert repository["metadata"]["finalizers"] == [CARVEL.repository_finalizer]
    package = get(kube, Package, carvel, f"{REF}.1.0.0") or {}
    assert package["apiVersion"] == "data.packaging.carvel.dev/v1alpha1"
    assert config_map_data(kube, carvel, "simple-repo.pkgr") is not None, "the repository's kapp app"

    install = get(kube, PackageInstall, carvel, "local") or {}
    assert install["metadata"]["finalizers"] == [CARVEL.install_finalizer]
    app = get(kube, App, carvel, "local") or {}
    assert app["apiVersion"] == "kappctrl.k14s.io/v1alpha1"
    (owner,) = app["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["kind"], owner["uid"]) == (
        "packaging.carvel.dev/v1alpha1",
        "PackageInstall",
        install["metadata"]["uid"],
    )
    assert config_map_data(kube, carvel, "local-cm") == {"version": "1.0.0"}
    # the package in kapp-controller's global namespace is seen from the install's namespace
    assert config_map_data(kube, carvel, "global-cm") == {"version": "1.0.0"}

    # kapply's revisions (issue 34) in kapp-controller's groups: kept, owned by the install, listed by `history`
    revision = kube.get(Secret, "local.pkgi-v1", namespace=carvel).metadata
    (owner,) = revision.ownerReferences or []
    assert (owner.apiVersion, owner.kind, owner.uid) == (
        "packaging.carvel.dev/v1alpha1",
        "PackageInstall",
        install["metadata"]["uid"],
    )
    history = kapply("package", "installed", "history", "-i", "local", "-n", carvel, "--api-groups=carvel", "--json")
    assert history.returncode == 0, history.stderr
    rows = yaml.safe_load(history.stdout)["Tables"][0]["Rows"]
    assert [(r["revision"], r["version"]) for r in rows] == [("1", "1.0.0")]
