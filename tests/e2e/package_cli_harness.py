"""What the `kapply package` tests share: seed 000's package (`simple-app.corp.com`: a Deployment and a Service, ytt
templates in an imgpkg bundle) and its repository bundle pushed to the test registry, the packaging controller they
run against (limited to the test's namespace, allowed to pull from the registry's plain http), an HPA-like actor,
and the clean-up of what `package install` creates outside the namespace (its ClusterRole and ClusterRoleBinding)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding
from lightkube.types import PatchType

from tests.e2e.harness import Cluster
from tests.e2e.packaging_harness import Running, install_crds, packaging_controller
from tests.e2e.registry import Registry

REF = "simple-app.corp.com"
PLAIN_HTTP = "--dangerous-allow-plain-http-registries"

VALUES = """#@data/values
---
svc_port: 80
hello_msg: stranger
"""
CONFIG = """#@ load("@ytt:data", "data")
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: simple-app
spec:
  replicas: 2
  selector:
    matchLabels: {simple-app: ""}
  template:
    metadata:
      labels: {simple-app: ""}
    spec:
      containers:
      - name: simple-app
        image: registry.k8s.io/pause:3.10
        env:
        - name: HELLO_MSG
          value: #@ data.values.hello_msg
---
apiVersion: v1
kind: Service
metadata:
  name: simple-app
spec:
  ports:
  - port: #@ data.values.svc_port
    targetPort: 80
  selector: {simple-app: ""}
"""
VALUES_SCHEMA = {
    "openAPIv3": {
        "title": "simple-app.corp.com values schema",
        "properties": {
            "svc_port": {"type": "integer", "description": "Port number for the service.", "default": 80},
            "hello_msg": {
                "type": "string",
                "description": "Name used in hello message from app",
                "default": "stranger",
            },
        },
    }
}


def metadata_document() -> dict[str, Any]:
    return {
        "apiVersion": "data.packaging.carvel.dev/v1alpha1",
        "kind": "PackageMetadata",
        "metadata": {"name": REF},
        "spec": {
            "displayName": "Simple App",
            "shortDescription": "Simple app for demoing",
            "longDescription": "Simple app consisting of a k8s deployment and service",
            "providerName": "VMware",
            "maintainers": [{"name": "Rohit Aggarwal"}],
            "categories": ["demo"],
        },
    }


def package_document(version: str, image: str, raw_options: tuple[str, ...] = ()) -> dict[str, Any]:
    """The Package of `version`, its App fetching the app's bundle (by digest) and templating it with ytt."""
    return {
        "apiVersion": "data.packaging.carvel.dev/v1alpha1",
        "kind": "Package",
        "metadata": {"name": f"{REF}.{version}"},
        "spec": {
            "refName": REF,
            "version": version,
            "releasedAt": "2022-04-21T00:00:00Z",
            "valuesSchema": VALUES_SCHEMA,
            "template": {
                "spec": {
                    "fetch": [{"imgpkgBundle": {"image": image}}],
                    "template": [{"ytt": {"paths": ["config/"]}}],
                    "deploy": [{"kapp": {"rawOptions": ["--wait-check-interval=0.5s", *raw_options]}}],
                }
            },
        },
    }


@dataclass(frozen=True)
class Pushed:
    """Seed 000's bundles in the test registry, under a path of the test's own."""

    registry: Registry
    base: str  # <registry>/kapply/e2e/<id>
    app_image: str  # the app's bundle, by digest
    work: Path

    def repository(self, tag: str, *packages: dict[str, Any]) -> str:
        """Push the repository bundle `my-pkg-repo:<tag>` holding the metadata and `packages`; its reference."""
        files = {f"packages/{REF}/metadata.yml": yaml.safe_dump(metadata_document()).encode()}
        for package in packages:
            files[f"packages/{REF}/{package['spec']['version']}.yml"] = yaml.safe_dump(package).encode()
        ref = f"{self.base}/my-pkg-repo:{tag}"
        # as `kctrl package repository release` locks it (kbld's id: the reference the Packages write); kbld reads
        # the lock when the repository is fetched, and refuses an entry without an id
        locked = [{"image": self.app_image, "annotations": {"kbld.carvel.dev/id": self.app_image}}]
        self.registry.push_bundle(ref, files, locked, self.work)
        return ref


def push_simple_app(registry: Registry, work: Path) -> Pushed:
    base = f"{registry.host}/kapply/e2e/{uuid.uuid4().hex[:8]}"
    files = {"config/config.yml": CONFIG.encode(), "config/values.yml": VALUES.encode()}
    digest = registry.push_bundle(f"{base}/simple-app:1.0.0", files, [], work)
    return Pushed(registry, base, f"{base}/simple-app@{digest}", work)


@contextmanager
def package_cli_controller(cluster: Cluster, kube: Client, namespace: str, directory: Path) -> Iterator[Running]:
    """The packaging controller for `namespace` (pulling from the test registry over plain http), the CRDs installed;
    afterwards the ClusterRoles and ClusterRoleBindings `package install` made for the namespace's installs are
    deleted (the namespace's own objects go with it)."""
    install_crds(cluster, kube)
    try:
        with packaging_controller(
            cluster, kube, namespace, directory, PLAIN_HTTP, "--package-install-default-sync-period=30s"
        ) as running:
            yield running
    finally:
        delete_install_roles(kube, namespace)


def delete_install_roles(kube: Client, *namespaces: str) -> None:
    """The ClusterRoles and ClusterRoleBindings `package install` (kctrl's or kapply's) made for the installs of
    `namespaces`."""
    for kind in (ClusterRoleBinding, ClusterRole):
        for obj in kube.list(kind):
            annotation = (obj.metadata.annotations or {}).get("packaging.carvel.dev/package", "")
            if any(annotation.endswith(f"-{namespace}") for namespace in namespaces):
                try:
                    kube.delete(kind, obj.metadata.name)
                except ApiError as e:
                    if e.status.code != 404:
                        raise


def replicas(kube: Client, namespace: str, name: str = "simple-app") -> int:
    return int(kube.get(Deployment, name, namespace=namespace).spec.replicas)


@contextmanager
def keeps_scaling(kube: Client, namespace: str, count: int, name: str = "simple-app") -> Iterator[list[str]]:
    """An HPA-like actor that scales the Deployment back to `count` (its scale subresource, as `kubectl scale`)
    whenever a sync set it to something else; yields the log of what it did (an API error is logged and the actor
    goes on, as a controller would), and fails the test if it broke otherwise."""
    stop = threading.Event()
    did: list[str] = []
    errors: list[BaseException] = []

    def loop() -> None:
        try:
            while not stop.is_set():
                try:
                    found = replicas(kube, namespace, name)
                    if found != count:
                        kube.patch(
                            Deployment.Scale,
                            name,
                            {"spec": {"replicas": count}},
                            namespace=namespace,
                            patch_type=PatchType.MERGE,
                            field_manager="kubectl",
                        )
                        did.append(f"{time.strftime('%H:%M:%S')} scaled {found} -> {count}")
                except ApiError as e:
                    did.append(f"{time.strftime('%H:%M:%S')} {e.status.code} {e.status.message}")
                stop.wait(0.2)
        except BaseException as e:  # the test fails with it, rather than the actor stopping unseen
            errors.append(e)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield did
    finally:
        stop.set()
        thread.join()
        if errors:
            raise errors[0]


def app_changes(kube: Client, namespace: str, install: str) -> set[str]:
    """The app-change ConfigMaps of the install's kapp app `<install>.app`."""
    return {
        cm.metadata.name
        for cm in kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/is-app-change": ""})
        if cm.metadata.name.startswith(f"{install}.app-change-")
    }
