"""The names the controller serves its APIs under, chosen once at start (`kapply controller --api-groups`) and passed
to every part of it (kapply.controller.settings' `Settings.vocabulary`): one code path, two sets of names.

- KAPPLY: kapply's own groups (`kapply.dev`, `packaging.kapply.dev`, `data.packaging.kapply.dev`), finalizers and
  global namespace, so that kapply and kapp-controller can run on one cluster without finishing each other's
  deletions.
- CARVEL: kapp-controller's (`kappctrl.k14s.io`, `packaging.carvel.dev`, `data.packaging.carvel.dev`, its finalizers
  and `kapp-controller-packaging-global`), so that objects written for kapp-controller reconcile unchanged and the
  real kctrl is a client. Only where kapp-controller is not running (both would reconcile the same objects).

What the two share is not here: kinds, plurals and short names of the packaging kinds, the annotation keys users and
repositories write (kapply.packaging.names), and the kapp app names (`<App>.app`, `<PackageRepository>.pkgr`), which
are kapp-controller's in both modes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kapply.resources.cluster import ResourceType

VERSION = "v1alpha1"
_VERBS = frozenset({"get", "list", "watch", "update"})


class ApiGroups(StrEnum):
    """`--api-groups`: whose API groups the controller serves."""

    KAPPLY = "kapply"
    CARVEL = "carvel"


@dataclass(frozen=True, slots=True)
class Resource:
    """One resource the controller serves: where it is served and what it is called."""

    group: str
    kind: str
    plural: str
    short_name: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{VERSION}"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def rtype(self) -> ResourceType:
        return ResourceType(self.group, VERSION, self.kind, self.plural, True, _VERBS)


@dataclass(frozen=True, slots=True)
class Vocabulary:
    api_groups: ApiGroups
    app: Resource
    repository: Resource
    install: Resource
    package: Resource
    package_metadata: Resource
    app_finalizer: str
    repository_finalizer: str
    install_finalizer: str
    # Packages and PackageMetadatas here are visible from every namespace (`--packaging-global-namespace` changes it).
    global_namespace: str
    # The category (`kubectl get <category>`) of the App, PackageRepository and PackageInstall CRDs.
    category: str

    @property
    def groups(self) -> tuple[str, str, str]:
        """The App's group, the PackageRepository's and PackageInstall's, the Package's and PackageMetadata's."""
        return self.app.group, self.install.group, self.package.group


def _vocabulary(
    api_groups: ApiGroups,
    app_group: str,
    packaging_group: str,
    data_group: str,
    finalizer: str,
    global_namespace: str,
    category: str,
) -> Vocabulary:
    """`finalizer` is the App's; the packaging kinds' are `finalizers.<singular>.<packaging group>/delete`, as
    kapp-controller names its own."""
    return Vocabulary(
        api_groups,
        Resource(app_group, "App", "apps"),
        Resource(packaging_group, "PackageRepository", "packagerepositories", "pkgr"),
        Resource(packaging_group, "PackageInstall", "packageinstalls", "pkgi"),
        Resource(data_group, "Package", "packages", "pkg"),
        Resource(data_group, "PackageMetadata", "packagemetadatas", "pkgm"),
        finalizer,
        f"finalizers.packagerepository.{packaging_group}/delete",
        f"finalizers.packageinstall.{packaging_group}/delete",
        global_namespace,
        category,
    )


KAPPLY = _vocabulary(
    ApiGroups.KAPPLY,
    "kapply.dev",
    "packaging.kapply.dev",
    "data.packaging.kapply.dev",
    "finalizers.kapply.dev/delete",
    "kapply-packaging-global",
    "kapply",
)
CARVEL = _vocabulary(
    ApiGroups.CARVEL,
    "kappctrl.k14s.io",
    "packaging.carvel.dev",
    "data.packaging.carvel.dev",
    "finalizers.kapp-ctrl.k14s.io/delete",
    "kapp-controller-packaging-global",
    "carvel",
)
VOCABULARIES = {vocabulary.api_groups: vocabulary for vocabulary in (KAPPLY, CARVEL)}
