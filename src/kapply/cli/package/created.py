"""What `package install` creates besides the PackageInstall, named and annotated as kctrl names and annotates them,
so that kctrl and kapply find each other's: without `--service-account-name`, a ServiceAccount `<i>-<ns>-sa` bound to
a ClusterRole `<i>-<ns>-cluster-role` (every verb on every resource) by `<i>-<ns>-cluster-rolebinding`; with
`--values-file`, a Secret `<i>-<ns>-values` (key `values.yaml`); with `--ytt-overlay-file`, a Secret
`<i>-<ns>-overlays` (a key `<NNNN>-<file>` per file) named by the annotation
`ext.packaging.carvel.dev/ytt-paths-from-secret-name.kctrl-ytt-overlays`. Each carries the owner annotation
`packaging.carvel.dev/package: <i>-<ns>` (and its Tanzu CLI twin); the PackageInstall records the account, role,
binding and values Secret it owns in `packaging.carvel.dev/package-<Kind>` annotations, which `installed delete`
deletes."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from kapply.controller.vocabulary import Resource
from kapply.objects import Obj
from kapply.packaging.names import Extension, extension_keys

PACKAGE_ANNOTATION = "packaging.carvel.dev/package"
TANZU_PACKAGE_ANNOTATION = "tkg.tanzu.vmware.com/tanzu-package"  # the Tanzu CLI's, which kctrl writes too
OWNER_ANNOTATIONS = (PACKAGE_ANNOTATION, TANZU_PACKAGE_ANNOTATION)
VALUES_KEY = "values.yaml"
OVERLAYS_ANNOTATION = f"{extension_keys(Extension.YTT_PATHS_FROM_SECRET_NAME)[0]}.kctrl-ytt-overlays"  # kctrl's suffix


class CreatedKind(StrEnum):
    """A kind of resource `install` creates and records on the PackageInstall."""

    SERVICE_ACCOUNT = "ServiceAccount"
    CLUSTER_ROLE = "ClusterRole"
    CLUSTER_ROLE_BINDING = "ClusterRoleBinding"
    SECRET = "Secret"

    @property
    def namespaced(self) -> bool:
        return self in (CreatedKind.SERVICE_ACCOUNT, CreatedKind.SECRET)


@dataclass(frozen=True, slots=True)
class InstallNames:
    """The names kctrl gives what it creates for the install `install` in `namespace`."""

    install: str
    namespace: str

    @property
    def owner(self) -> str:
        """The value of the owner annotation."""
        return f"{self.install}-{self.namespace}"

    @property
    def service_account(self) -> str:
        return f"{self.owner}-sa"

    @property
    def cluster_role(self) -> str:
        return f"{self.owner}-cluster-role"

    @property
    def cluster_role_binding(self) -> str:
        return f"{self.owner}-cluster-rolebinding"

    @property
    def values_secret(self) -> str:
        return f"{self.owner}-values"

    @property
    def overlays_secret(self) -> str:
        return f"{self.owner}-overlays"

    def name_of(self, kind: CreatedKind) -> str:
        """The conventional name of what `install` creates of `kind` (the Secret: the values Secret)."""
        return {
            CreatedKind.SERVICE_ACCOUNT: self.service_account,
            CreatedKind.CLUSTER_ROLE: self.cluster_role,
            CreatedKind.CLUSTER_ROLE_BINDING: self.cluster_role_binding,
            CreatedKind.SECRET: self.values_secret,
        }[kind]


def recorded_keys(kind: CreatedKind) -> tuple[str, str]:
    """The PackageInstall annotations recording the created resource of `kind` (kctrl's, then the Tanzu CLI's)."""
    return f"{PACKAGE_ANNOTATION}-{kind}", f"{TANZU_PACKAGE_ANNOTATION}-{kind}"


def recorded(annotations: Mapping[str, str]) -> list[tuple[CreatedKind, str]]:
    """The resources a PackageInstall's annotations say `install` created for it, in kind order."""
    found = []
    for kind in CreatedKind:
        name = next((annotations[key] for key in recorded_keys(kind) if annotations.get(key)), "")
        if name:
            found.append((kind, name))
    return found


def with_recorded(annotations: Mapping[str, str], kinds: Sequence[CreatedKind], names: InstallNames) -> dict[str, str]:
    """The annotations with the resources of `kinds` recorded."""
    out = dict(annotations)
    for kind in kinds:
        out.update(dict.fromkeys(recorded_keys(kind), names.name_of(kind)))
    return out


def without_recorded(annotations: Mapping[str, str], kind: CreatedKind) -> dict[str, str]:
    return {k: v for k, v in annotations.items() if k not in recorded_keys(kind)}


def owned_by(obj: Obj, names: InstallNames) -> bool:
    """Whether `install` (kctrl or kapply) made the object for this install."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return any(annotations.get(key) == names.owner for key in OWNER_ANNOTATIONS)


def _meta(name: str, names: InstallNames, namespaced: bool) -> Obj:
    meta: Obj = {"name": name}
    if namespaced:
        meta["namespace"] = names.namespace
    meta["annotations"] = dict.fromkeys(OWNER_ANNOTATIONS, names.owner)
    return meta


def service_account(names: InstallNames) -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(names.service_account, names, True)}


def cluster_role(names: InstallNames) -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(names.cluster_role, names, False),
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    }


def cluster_role_binding(names: InstallNames) -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(names.cluster_role_binding, names, False),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": names.cluster_role},
        "subjects": [{"kind": "ServiceAccount", "name": names.service_account, "namespace": names.namespace}],
    }


def secret(name: str, names: InstallNames, data: Mapping[str, bytes], *, as_text: bool = False) -> Obj:
    """A Secret of `data` (its keys in order), annotated as the install's; `as_text`: as `stringData`, as kctrl's
    `--dry-run` shows it."""
    body: Obj = {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(name, names, True)}
    if as_text:
        body["stringData"] = {key: value.decode(errors="replace") for key, value in data.items()}
    else:
        body["data"] = {key: base64.b64encode(value).decode() for key, value in data.items()}
    return body


def overlay_key(index: int, name: str) -> str:
    """The overlays Secret's key of a file: kctrl's `<NNNN>-<path>`, the file's index among `--ytt-overlay-file`
    values and its path (within a directory given) with `/` as `_` (Secret keys hold no `/`)."""
    return f"{index:04d}-{name}".replace("/", "_")


def package_install(
    resource: Resource,
    names: InstallNames,
    package: str,
    version: str,
    service_account_name: str,
    values_secret: str,
    overlays_secret: str,
    created: Sequence[CreatedKind],
) -> Obj:
    """The PackageInstall `install` creates (`resource`: the groups' PackageInstall): kctrl's spec (any prerelease
    admitted) and annotations."""
    spec: Obj = {
        "serviceAccountName": service_account_name,
        "packageRef": {"refName": package, "versionSelection": {"constraints": version, "prereleases": {}}},
    }
    if values_secret:
        spec["values"] = [{"secretRef": {"name": values_secret}}]
    annotations = {OVERLAYS_ANNOTATION: overlays_secret} if overlays_secret else {}
    metadata: Obj = {"name": names.install, "namespace": names.namespace}
    annotations = with_recorded(annotations, created, names)
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": metadata, "spec": spec}
