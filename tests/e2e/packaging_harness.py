"""Running the packaging controllers (a real `kapply controller` process) against the test cluster, and writing
kapp-controller's packaging objects for them with only their apiVersion changed."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.core_v1 import Namespace

from kapply.controller.vocabulary import CARVEL
from kapply.packaging import names
from tests.e2e.controller_harness import (
    App,
    controller,
    controller_identity,
    create_if_missing,
    delete_apps,
    install_crd,
    kapply,
    tool_env,
)
from tests.e2e.harness import Cluster, eventually

PackageRepository = create_namespaced_resource(names.GROUP, names.VERSION, "PackageRepository", "packagerepositories")
PackageInstall = create_namespaced_resource(names.GROUP, names.VERSION, "PackageInstall", "packageinstalls")
Package = create_namespaced_resource(names.DATA_GROUP, names.VERSION, "Package", "packages")
PackageMetadata = create_namespaced_resource(names.DATA_GROUP, names.VERSION, "PackageMetadata", "packagemetadatas")
KINDS = {"PackageRepository": PackageRepository, "PackageInstall": PackageInstall, "Package": Package}
KINDS |= {"PackageMetadata": PackageMetadata, "App": App}
CRD_APP = "kapply-packaging-crds"
CRD_NAMESPACE = "kapply-system"
CRDS = Path(__file__).resolve().parents[2] / "config" / "packaging" / "crds.yml"


def install_crds(cluster: Cluster, kube: Client) -> None:
    """The App CRD (as the app kapply-crds) and the packaging CRDs (as docs/packages.md installs them)."""
    install_crd(cluster.kubeconfig, kube)
    kapply(cluster.kubeconfig, "deploy", "-a", CRD_APP, "-n", CRD_NAMESPACE, "-y", "-f", str(CRDS))


# kapp-controller's own kinds (its API groups, v1alpha1), for the carvel-mode tests
CarvelApp, CarvelRepository, CarvelInstall = (
    create_namespaced_resource(of.group, "v1alpha1", of.kind, of.plural)
    for of in (CARVEL.app, CARVEL.repository, CARVEL.install)
)
CARVEL_CRD_APP = "kapply-carvel-crds"  # the app the carvel-mode tests install kapp-controller's CRDs as
CARVEL_RESOURCES = (
    "apps.kappctrl.k14s.io",
    "packageinstalls.packaging.carvel.dev",
    "packagerepositories.packaging.carvel.dev",
    "packages.data.packaging.carvel.dev",
    "packagemetadatas.data.packaging.carvel.dev",
)


def carvel_manifests(*flags: str) -> str:
    """`kapply controller manifests --api-groups carvel FLAGS`: what a carvel-mode controller is installed with."""
    argv = [sys.executable, "-m", "kapply", "controller", "manifests", "--api-groups", "carvel", *flags]
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout


@contextmanager
def carvel_crds(cluster: Cluster, kube: Client, directory: Path) -> Iterator[None]:
    """kapp-controller's CRDs (`carvel_manifests("--crds-only")`, written into `directory`), deployed as the app
    CARVEL_CRD_APP; removed afterwards, also after a failed deploy. Entered first by a module, so that it is left last:
    after its objects and namespaces."""
    crds = directory / "carvel-crds.yml"
    crds.write_text(carvel_manifests("--crds-only"))
    create_if_missing(kube, Namespace.from_dict({"metadata": {"name": CRD_NAMESPACE}}))
    try:
        kapply(cluster.kubeconfig, "deploy", "-a", CARVEL_CRD_APP, "-n", CRD_NAMESPACE, "-y", "-f", str(crds))
        yield
    finally:
        _remove_carvel_crds(cluster)


def _remove_carvel_crds(cluster: Cluster) -> None:
    """Undo what a carvel-mode module installed: kapp-controller's CRDs share kapply's kinds and short names (`kubectl
    get pkgi` would name either group), so a later test must not find them. Objects left with a finalizer of the
    stopped controller would keep their CRD terminating: their finalizers are dropped first."""
    with tempfile.TemporaryDirectory(prefix="kubectl-cache-") as cache:  # never a .kube/ in the working directory
        _drop_carvel_finalizers(
            {"KUBECONFIG": str(cluster.kubeconfig), "PATH": os.environ.get("PATH", ""), "KUBECACHEDIR": cache}
        )
    kapply(cluster.kubeconfig, "delete", "-a", CARVEL_CRD_APP, "-n", CRD_NAMESPACE, "-y")


def _drop_carvel_finalizers(env: dict[str, str]) -> None:
    for resource in CARVEL_RESOURCES:
        listed = subprocess.run(
            [
                "kubectl",
                "get",
                resource,
                "-A",
                "-o",
                "jsonpath={range .items[*]}{.metadata.namespace} {.metadata.name}\n{end}",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        for line in listed.stdout.splitlines() if listed.returncode == 0 else []:
            namespace, name = line.split()
            subprocess.run(
                [
                    "kubectl",
                    "patch",
                    resource,
                    name,
                    "-n",
                    namespace,
                    "--type=merge",
                    "-p",
                    '{"metadata":{"finalizers":null}}',
                ],
                env=env,
                capture_output=True,
                timeout=60,
            )


def moved(text: str, namespace: str) -> list[dict[str, Any]]:
    """kapp-controller's objects with only their apiVersion changed (and put into `namespace`)."""
    versions = {
        f"{names.CARVEL_GROUP}/{names.VERSION}": names.API_VERSION,
        f"{names.CARVEL_DATA_GROUP}/{names.VERSION}": names.DATA_API_VERSION,
    }
    docs = [d for d in yaml.safe_load_all(text) if d]
    for doc in docs:
        doc["apiVersion"] = versions.get(doc["apiVersion"], doc["apiVersion"])
        doc["metadata"]["namespace"] = namespace
    return docs


def create(kube: Client, namespace: str, *docs: dict[str, Any]) -> None:
    """Create each object in `namespace`."""
    from lightkube.codecs import from_dict

    for doc in docs:
        doc = {**doc, "metadata": {**doc["metadata"], "namespace": namespace}}
        kind = KINDS.get(doc["kind"])
        kube.create(kind(**doc) if kind is not None else from_dict(doc))


def get(kube: Client, kind: type, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        obj = kube.get(kind, name, namespace=namespace)
    except ApiError as e:
        if e.status.code == 404:
            return None
        raise
    return dict(obj) if isinstance(obj, dict) else obj.to_dict()


def status(kube: Client, kind: type, namespace: str, name: str) -> dict[str, Any]:
    return dict((get(kube, kind, namespace, name) or {}).get("status") or {})


def condition(kube: Client, kind: type, namespace: str, name: str) -> str:
    """The type of the object's condition when it reports its current generation ("" otherwise): what `kubectl wait
    --for=condition=...` waits for."""
    obj = get(kube, kind, namespace, name) or {}
    reported = obj.get("status") or {}
    if reported.get("observedGeneration") != obj.get("metadata", {}).get("generation"):
        return ""
    conditions = reported.get("conditions") or [{}]
    return str(conditions[0].get("type", ""))


def package_names(kube: Client, namespace: str) -> list[str]:
    return sorted(p.metadata.name for p in kube.list(Package, namespace=namespace))


def delete_and_wait(kube: Client, kind: type, namespace: str, timeout: float = 60) -> None:
    for obj in kube.list(kind, namespace=namespace):
        try:
            kube.delete(kind, obj.metadata.name, namespace=namespace)
        except ApiError as e:
            if e.status.code != 404:
                raise
    eventually(lambda: not list(kube.list(kind, namespace=namespace)), timeout=timeout, what=f"{kind.__name__}s gone")


@dataclass
class Running:
    """A controller for one test: its log, and the namespace it reconciles."""

    namespace: str
    log: Path
    process: subprocess.Popen[bytes]

    def lines(self, *needles: str) -> str:
        text = self.log.read_text() if self.log.exists() else ""
        return "".join(line for line in text.splitlines(True) if any(n in line for n in needles))


@contextmanager
def packaging_controller(
    cluster: Cluster, kube: Client, namespace: str, directory: Path, *args: str, global_namespace: str = ""
) -> Iterator[Running]:
    """`kapply controller -n NAMESPACE` with exactly the rights of config/controller/rbac.yml (its own identity) and
    ytt, reconciling the namespace's Apps, PackageRepositories and PackageInstalls with short periods; afterwards the
    namespace's PackageInstalls, PackageRepositories and Apps are deleted while it still runs (their finalizers are
    its), then it stops, and its log is printed (pytest shows it when the test fails)."""
    global_namespace = global_namespace or f"t-global-{uuid.uuid4().hex[:6]}"
    log = directory / "controller.log"
    with ExitStack() as stack:
        identity = stack.enter_context(controller_identity(kube, cluster.kubeconfig, directory))
        process = stack.enter_context(
            controller(
                identity.kubeconfig,
                log,
                "-n",
                namespace,
                "--leader-elect=false",
                f"--packaging-global-namespace={global_namespace}",
                "--dangerous-allow-file-urls",
                *args,
                env=tool_env("ytt"),
            )
        )
        try:
            yield Running(namespace, log, process)
        finally:
            try:
                delete_and_wait(kube, PackageInstall, namespace)
                delete_and_wait(kube, PackageRepository, namespace)
                delete_apps(kube, namespace)
            finally:
                print(f"--- controller ---\n{log.read_text() if log.exists() else ''}")
        assert "Traceback" not in log.read_text(), "the controller crashed (its log is above)"


@contextmanager
def global_namespace(kube: Client) -> Iterator[str]:
    """A namespace to be a controller's global namespace, deleted afterwards."""
    name = f"t-global-{uuid.uuid4().hex[:6]}"
    kube.create(Namespace.from_dict({"metadata": {"name": name}}))
    try:
        yield name
    finally:
        kube.delete(Namespace, name)


def config_map_package(ref_name: str, version: str, *, data_key: str = "version", extra: str = "") -> dict[str, Any]:
    """A Package (kapp-controller's inline-package shape, its apiVersion changed) deploying, through ytt, a ConfigMap
    named by the data value `name` (default `pkg-cm`) whose data says the version and the data value `hello_msg`
    (default `stranger`)."""
    files = {
        "values.yml": "#@data/values\n---\nname: pkg-cm\nhello_msg: stranger\n",
        "cm.yml": (
            '#@ load("@ytt:data", "data")\n'
            "---\n"
            "apiVersion: v1\n"
            "kind: ConfigMap\n"
            "metadata:\n"
            "  name: #@ data.values.name\n"
            "data:\n"
            f"  {data_key}: {version}\n"
            "  hello_msg: #@ data.values.hello_msg\n"
        ),
    }
    if extra:
        files["extra.yml"] = extra
    return {
        "apiVersion": names.DATA_API_VERSION,
        "kind": "Package",
        "metadata": {"name": names.package_name(ref_name, version)},
        "spec": {
            "refName": ref_name,
            "version": version,
            "template": {
                "spec": {
                    "fetch": [{"inline": {"paths": files}}],
                    "template": [{"ytt": {}}],
                    "deploy": [{"kapp": {"rawOptions": ["--wait-check-interval=0.5s"]}}],
                }
            },
        },
    }


def install(name: str, ref_name: str, constraints: str, **spec: Any) -> dict[str, Any]:
    """A PackageInstall of `ref_name` with the `deployer` service account and a 2 s sync period."""
    return {
        "apiVersion": names.API_VERSION,
        "kind": "PackageInstall",
        "metadata": {"name": name},
        "spec": {
            "serviceAccountName": "deployer",
            "syncPeriod": "2s",
            "packageRef": {"refName": ref_name, "versionSelection": {"constraints": constraints}},
            **spec,
        },
    }
