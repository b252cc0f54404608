"""The packaging APIs' vocabulary that does not depend on the controller's mode: kinds, plurals, annotation keys, and
the object name of a Package; and kapply's own names (KAPPLY's), which `kapply package` and the tests speak.

Groups, finalizers and the global namespace depend on the mode (`kapply controller --api-groups`): the controller
takes them from kapply.controller.vocabulary's Vocabulary in its settings, never from here. Under kapply's groups
(a CRD cannot share `data.packaging.carvel.dev` with kapp-controller's APIService), kinds, plurals and short names are
kapp-controller's, so a user moves an object by changing its apiVersion only (config/packaging/crds.yml,
docs/packages.md); kapply's finalizers let kapply and kapp-controller never finish each other's deletions while both
run. Annotation keys that users, repositories or tools write are kapp-controller's own (`packaging.carvel.dev/...`),
read as they are, in both modes.
"""

from __future__ import annotations

import re
from enum import StrEnum

from kapply.controller.vocabulary import CARVEL, KAPPLY, VERSION, Resource

__all__ = ["VERSION", "Resource"]

GROUP = KAPPLY.install.group
DATA_GROUP = KAPPLY.package.group
API_VERSION = KAPPLY.install.api_version
DATA_API_VERSION = KAPPLY.package.api_version

PACKAGE_REPOSITORY = KAPPLY.repository
PACKAGE_INSTALL = KAPPLY.install
PACKAGE = KAPPLY.package
PACKAGE_METADATA = KAPPLY.package_metadata
RESOURCES = (PACKAGE_REPOSITORY, PACKAGE_INSTALL, PACKAGE, PACKAGE_METADATA)

# kapp-controller's groups: a repository's content names them; the repository controller accepts them and writes the
# documents under the groups the controller serves.
CARVEL_GROUP = CARVEL.install.group
CARVEL_DATA_GROUP = CARVEL.package.group

# kapply's finalizers (kapp-controller's, CARVEL's, are finalizers.packagerepository.packaging.carvel.dev/delete and
# finalizers.packageinstall.packaging.carvel.dev/delete: in kapply mode, reusing them would let either controller
# finish the other's deletion).
REPOSITORY_FINALIZER = KAPPLY.repository_finalizer
INSTALL_FINALIZER = KAPPLY.install_finalizer

# Packages and PackageMetadatas in this namespace are visible from every namespace (a namespace's own object of the
# same identity wins). In kapply mode kapply's own namespace rather than kapp-controller's
# `kapp-controller-packaging-global`, which kapp-controller's installation owns (and deletes with it); in carvel mode
# kapp-controller's. The PackageRepository CRD carries it in the annotation GLOBAL_NAMESPACE_ANNOTATION, as
# kapp-controller's does.
DEFAULT_GLOBAL_NAMESPACE = KAPPLY.global_namespace
GLOBAL_NAMESPACE_ANNOTATION = "packaging.carvel.dev/global-namespace"

# On a Namespace: do not show it the global namespace's packages. kapp-controller's code reads the first (its docs say
# packaging.carvel.dev/exclude-global-packages, which it never read); kapply also reads its own.
EXCLUDE_GLOBAL_PACKAGES_ANNOTATIONS = (
    "kapp-controller.carvel.dev/exclude-global-packages",
    "packaging.kapply.dev/exclude-global-packages",
)

# On a Package or PackageMetadata a repository brought: `<namespace>/<repository name>`.
REPOSITORY_REF_ANNOTATION = "packaging.carvel.dev/package-repository-ref"
# On a Package or PackageMetadata, written by its author: decides which of two repositories' differing copies wins.
REVISION_ANNOTATION = "packaging.carvel.dev/revision"
# On the App a PackageInstall creates: the package it runs.
PACKAGE_REF_NAME_ANNOTATION = "packaging.carvel.dev/package-ref-name"
PACKAGE_VERSION_ANNOTATION = "packaging.carvel.dev/package-version"
# On a PackageInstall, by presence: select a version below status.lastAttemptedVersion; skip a Package's
# kubernetesVersionSelection; skip its kappControllerVersionSelection. kapp-controller's keys, and kapply's.
DOWNGRADABLE_ANNOTATIONS = ("packaging.carvel.dev/downgradable", "packaging.kapply.dev/downgradable")
IGNORE_KUBERNETES_VERSION_SELECTION_ANNOTATIONS = (
    "packaging.carvel.dev/ignore-kubernetes-version-selection",
    "packaging.kapply.dev/ignore-kubernetes-version-selection",
)
IGNORE_KAPP_CONTROLLER_VERSION_SELECTION_ANNOTATIONS = (
    "packaging.carvel.dev/ignore-kapp-controller-version-selection",
    "packaging.kapply.dev/ignore-kapp-controller-version-selection",
)

# The extension annotations (kapp-controller's "PackageInstall extensions") are read under both prefixes; for the same
# key, kapply's wins.
EXTENSION_PREFIXES = ("ext.packaging.carvel.dev/", "ext.packaging.kapply.dev/")  # lowest precedence first


class Extension(StrEnum):
    """An extension annotation, without its prefix."""

    # A Secret whose keys become ytt files (overlays) of the first ytt step; `.<suffix>` keys add more, in suffix order.
    YTT_PATHS_FROM_SECRET_NAME = "ytt-paths-from-secret-name"
    # By presence: spec.values Secrets become ytt files of the first ytt step rather than data values files.
    YTT_DATA_VALUES_OVERLAYS = "ytt-data-values-overlays"
    # The release name and namespace of the first helmTemplate step.
    HELM_TEMPLATE_NAME = "helm-template-name"
    HELM_TEMPLATE_NAMESPACE = "helm-template-namespace"
    # A Secret of values files for the first helmTemplate step, before spec.values; `.<suffix>` keys add more.
    HELM_TEMPLATE_VALUES_FROM_SECRET_NAME = "helm-template-values-from-secret-name"
    # On the App, by presence: the PackageInstall controller leaves it alone.
    MANUALLY_CONTROLLED = "manually-controlled"


# `fetch-<i>-secret-name`: the Secret of the App's fetch step i (not for inline steps).
FETCH_SECRET_EXTENSION = re.compile(r"fetch-(0|[1-9][0-9]*)-secret-name")


def extension_keys(extension: Extension) -> tuple[str, ...]:
    """The annotation keys of an extension, lowest precedence first."""
    return tuple(prefix + extension for prefix in EXTENSION_PREFIXES)


# The kapp app (record and labels) a PackageRepository deploys its Packages as: `<name>.pkgr`, as kapp-controller
# names it, so a repository moved from kapp-controller keeps its record.
REPOSITORY_APP_SUFFIX = ".pkgr"

# A status that points at usefulErrorMessage (kapp-controller's condition message and friendlyDescription cause).
SEE_USEFUL_ERROR_MESSAGE = "Error (see .status.usefulErrorMessage for details)"


def package_name(ref_name: str, version: str) -> str:
    """The object name of a Package: kapp-controller's `<refName>.<version>`, with the version in lower case and build
    metadata's `+` written as `.`, since an object name (a DNS-1123 subdomain) holds neither. Where kapp-controller's
    name is a valid object name it is unchanged; `1.0.0+vmware.1` gives `<refName>.1.0.0.vmware.1`. The CRD's
    validation rule computes the same (config/packaging/crds.yml)."""
    lower = "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in version)  # CEL's lowerAscii
    return f"{ref_name}.{lower.replace('+', '.')}"


def repository_app_name(repository: str) -> str:
    return repository + REPOSITORY_APP_SUFFIX


# The kapp-controller version a Package's `kappControllerVersionSelection` is checked against: the release whose
# packaging behaviour kapply follows (docs/packages.md), so a package written for it installs.
KAPP_CONTROLLER_VERSION = "0.53.1"
