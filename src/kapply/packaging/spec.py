"""The four packaging objects read into values, with kapp-controller's messages where it has them.

The CRDs (config/packaging/crds.yml) already hold each field to its type, so what is checked here is what
kapp-controller checks in its controllers: a PackageInstall's values and package reference, a PackageRepository's
fetch source. Type errors are reported too (`Expected spec.paused to be a boolean, got str`), for objects that did not
come through the API server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kapply import objects
from kapply.api import DriftPolicy
from kapply.controller.spec import SpecError, read_bool, read_drift_policy, read_list, read_map, read_str, read_strings
from kapply.objects import Obj
from kapply.packaging import names
from kapply.values import parse_duration
from kapply.versions import Prereleases, VersionSelection, with_single_prerelease_rule


def _duration(value: Any, where: str) -> str | None:
    """A Go duration as written (`90s`, `1m`), checked; None when absent."""
    if value is None:
        return None
    text = read_str(value, where)
    try:
        parse_duration(text)
    except ValueError as e:
        raise SpecError(f"Expected {where} to be a duration: {e}") from None
    return text


def _version_selection(value: Any, where: str) -> VersionSelection:
    item = read_map(value, where)
    prereleases = item.get("prereleases")
    return VersionSelection(
        read_str(item.get("constraints"), f"{where}.constraints"),
        None
        if prereleases is None
        else Prereleases(
            read_strings(
                read_map(prereleases, f"{where}.prereleases").get("identifiers"), f"{where}.prereleases.identifiers"
            )
        ),
    )


# --- PackageRepository ------------------------------------------------------------------------------------------------


class RepositorySource(StrEnum):
    """Where a repository's content is fetched from, in kapp-controller's order of precedence."""

    INLINE = "inline"
    IMAGE = "image"
    HTTP = "http"
    GIT = "git"
    IMGPKG_BUNDLE = "imgpkgBundle"


@dataclass(frozen=True, slots=True)
class RepositoryFetch:
    source: RepositorySource
    config: Obj  # the source's fields as written: the App fetch step is {source: config}

    @property
    def secret_name(self) -> str:
        """The Secret the source authenticates with (`secretRef.name`; inline sources have none): kapp-controller
        reconciles the repository at once when it changes."""
        if self.source == RepositorySource.INLINE:
            return ""
        where = f"spec.fetch.{self.source}.secretRef"
        return read_str(read_map(self.config.get("secretRef"), where).get("name"), f"{where}.name")


@dataclass(frozen=True, slots=True)
class PackageRepositorySpec:
    fetch: RepositoryFetch
    sync_period: float  # seconds: 10 minutes unless given, never under 30 s
    paused: bool = False


REPOSITORY_DEFAULT_SYNC_PERIOD = 600.0
MINIMUM_SYNC_PERIOD = 30.0


def parse_package_repository(obj: Mapping[str, Any]) -> PackageRepositorySpec:
    spec = read_map(obj.get("spec"), "spec")
    fetch = read_map(spec.get("fetch"), "spec.fetch")
    # kapp-controller copies every source into one App fetch step and vendir takes the first that is set; the others
    # are ignored, not refused.
    source = next((s for s in RepositorySource if fetch.get(s) is not None), None)
    if source is None:
        raise SpecError("Unsupported way to fetch templates")
    period = _duration(spec.get("syncPeriod"), "spec.syncPeriod")
    return PackageRepositorySpec(
        RepositoryFetch(source, read_map(fetch[source], f"spec.fetch.{source}")),
        REPOSITORY_DEFAULT_SYNC_PERIOD if period is None else max(parse_duration(period), MINIMUM_SYNC_PERIOD),
        read_bool(spec.get("paused"), "spec.paused"),
    )


# --- PackageInstall ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterTarget:
    """`spec.cluster`: deploy to the cluster a kubeconfig Secret names."""

    namespace: str
    kubeconfig_secret: str
    kubeconfig_key: str  # "" means kapp-controller's default key, `value`


@dataclass(frozen=True, slots=True)
class PackageRef:
    ref_name: str
    selection: VersionSelection | None  # None: no versionSelection


@dataclass(frozen=True, slots=True)
class ValuesRef:
    """One `spec.values` entry."""

    secret_name: str | None  # None: the entry has no secretRef
    key: str = ""  # in the schema; kapp-controller ignores it (every key of the Secret is a values file)


@dataclass(frozen=True, slots=True)
class InstallExtensions:
    """What a PackageInstall's annotations change (names.py), kapply's prefix winning over kapp-controller's."""

    downgradable: bool = False
    ignore_kubernetes_version_selection: bool = False
    ignore_kapp_controller_version_selection: bool = False
    ytt_paths_from_secrets: tuple[str, ...] = ()  # in suffix order
    ytt_data_values_overlays: bool = False
    helm_template_name: str | None = None
    helm_template_namespace: str | None = None
    helm_values_from_secrets: tuple[str, ...] = ()  # in suffix order
    fetch_secrets: tuple[tuple[int, str], ...] = ()  # (App fetch step, Secret name), by step


@dataclass(frozen=True, slots=True)
class PackageInstallSpec:
    service_account: str
    cluster: ClusterTarget | None
    package_ref: PackageRef | None
    values: tuple[ValuesRef, ...]
    sync_period: str | None  # as written; None: the controller's default
    extensions: InstallExtensions
    paused: bool = False
    canceled: bool = False
    noop_delete: bool = False
    default_namespace: str = ""
    # kapply's: the App's `driftPolicy` (None: the Package's, else the controller's `--default-drift-policy`)
    drift_policy: DriftPolicy | None = None


@dataclass(frozen=True, slots=True)
class PackageSelection:
    """What a PackageInstall asks for, once kapp-controller's checks pass."""

    ref_name: str
    selection: VersionSelection  # with kapp-controller's single-prerelease rule applied


def _present(found: Mapping[str, str], keys: tuple[str, ...]) -> bool:
    return any(key in found for key in keys)


def _last_written(found: Mapping[str, str], extension: names.Extension) -> str | None:
    """The value of the extension under the prefix that wins (present with "" counts: kapp-controller sets it)."""
    value = None
    for key in names.extension_keys(extension):
        if key in found:
            value = found[key]
    return value


def _secrets_by_suffix(found: Mapping[str, str], extension: names.Extension) -> tuple[str, ...]:
    """The Secrets of `<key>` (suffix "") and `<key>.<suffix>` annotations, sorted by suffix as plain strings (so `.10`
    comes before `.2`), as kapp-controller orders them; for one suffix, kapply's prefix wins."""
    by_suffix: dict[str, str] = {}
    for key in names.extension_keys(extension):
        for annotation, secret in found.items():
            if annotation == key:
                by_suffix[""] = secret
            elif annotation.startswith(key + "."):
                by_suffix[annotation[len(key) + 1 :]] = secret
    return tuple(by_suffix[suffix] for suffix in sorted(by_suffix))


def _fetch_secrets(found: Mapping[str, str]) -> tuple[tuple[int, str], ...]:
    by_step: dict[int, str] = {}
    for prefix in names.EXTENSION_PREFIXES:
        for annotation, secret in found.items():
            if annotation.startswith(prefix) and (
                match := names.FETCH_SECRET_EXTENSION.fullmatch(annotation[len(prefix) :])
            ):
                by_step[int(match.group(1))] = secret
    return tuple(sorted(by_step.items()))


def parse_install_extensions(obj: Mapping[str, Any]) -> InstallExtensions:
    found = objects.annotations(obj)
    return InstallExtensions(
        downgradable=_present(found, names.DOWNGRADABLE_ANNOTATIONS),
        ignore_kubernetes_version_selection=_present(found, names.IGNORE_KUBERNETES_VERSION_SELECTION_ANNOTATIONS),
        ignore_kapp_controller_version_selection=_present(
            found, names.IGNORE_KAPP_CONTROLLER_VERSION_SELECTION_ANNOTATIONS
        ),
        ytt_paths_from_secrets=_secrets_by_suffix(found, names.Extension.YTT_PATHS_FROM_SECRET_NAME),
        ytt_data_values_overlays=_last_written(found, names.Extension.YTT_DATA_VALUES_OVERLAYS) is not None,
        helm_template_name=_last_written(found, names.Extension.HELM_TEMPLATE_NAME),
        helm_template_namespace=_last_written(found, names.Extension.HELM_TEMPLATE_NAMESPACE),
        helm_values_from_secrets=_secrets_by_suffix(found, names.Extension.HELM_TEMPLATE_VALUES_FROM_SECRET_NAME),
        fetch_secrets=_fetch_secrets(found),
    )


def parse_package_install(obj: Mapping[str, Any]) -> PackageInstallSpec:
    """The spec and extension annotations. A missing package reference or values Secret is not an error here: a
    PackageInstall without them can still be deleted; `package_selection` reports them."""
    spec = read_map(obj.get("spec"), "spec")
    cluster = None
    if spec.get("cluster") is not None:
        item = read_map(spec["cluster"], "spec.cluster")
        secret = read_map(item.get("kubeconfigSecretRef"), "spec.cluster.kubeconfigSecretRef")
        cluster = ClusterTarget(
            read_str(item.get("namespace"), "spec.cluster.namespace"),
            read_str(secret.get("name"), "spec.cluster.kubeconfigSecretRef.name"),
            read_str(secret.get("key"), "spec.cluster.kubeconfigSecretRef.key"),
        )
    package_ref = None
    if spec.get("packageRef") is not None:
        ref = read_map(spec["packageRef"], "spec.packageRef")
        selection = ref.get("versionSelection")
        package_ref = PackageRef(
            read_str(ref.get("refName"), "spec.packageRef.refName"),
            None if selection is None else _version_selection(selection, "spec.packageRef.versionSelection"),
        )
    values = []
    for i, raw in enumerate(read_list(spec.get("values"), "spec.values")):
        item = read_map(raw, f"spec.values[{i}]")
        if item.get("secretRef") is None:
            values.append(ValuesRef(None))
            continue
        secret = read_map(item["secretRef"], f"spec.values[{i}].secretRef")
        values.append(
            ValuesRef(
                read_str(secret.get("name"), f"spec.values[{i}].secretRef.name"),
                read_str(secret.get("key"), f"spec.values[{i}].secretRef.key"),
            )
        )
    return PackageInstallSpec(
        service_account=read_str(spec.get("serviceAccountName"), "spec.serviceAccountName"),
        cluster=cluster,
        package_ref=package_ref,
        values=tuple(values),
        sync_period=_duration(spec.get("syncPeriod"), "spec.syncPeriod"),
        paused=read_bool(spec.get("paused"), "spec.paused"),
        canceled=read_bool(spec.get("canceled"), "spec.canceled"),
        noop_delete=read_bool(spec.get("noopDelete"), "spec.noopDelete"),
        default_namespace=read_str(spec.get("defaultNamespace"), "spec.defaultNamespace"),
        drift_policy=read_drift_policy(spec.get("driftPolicy"), "spec.driftPolicy"),
        extensions=parse_install_extensions(obj),
    )


def package_selection(spec: PackageInstallSpec) -> PackageSelection:
    """The package and versions to select from, or SpecError with kapp-controller's message, in its order: values
    entries without secretRef (`Invalid fields: spec.values[1].secretRef: Required value`; several as a list in
    brackets, as Kubernetes aggregates field errors), then `Expected non nil PackageRef`, then `Expected non-empty
    version selection`."""
    missing = [
        f"spec.values[{i}].secretRef: Required value" for i, v in enumerate(spec.values) if v.secret_name is None
    ]
    if missing:
        listed = missing[0] if len(missing) == 1 else "[" + ", ".join(missing) + "]"
        raise SpecError(f"Invalid fields: {listed}")
    if spec.package_ref is None:
        raise SpecError("Expected non nil PackageRef")
    if spec.package_ref.selection is None:
        raise SpecError("Expected non-empty version selection")
    return PackageSelection(spec.package_ref.ref_name, with_single_prerelease_rule(spec.package_ref.selection))


# --- Package and PackageMetadata --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IncludedSoftware:
    display_name: str
    version: str
    description: str


@dataclass(frozen=True, slots=True)
class PackageSpec:
    ref_name: str
    version: str  # as written: selection and comparison read this, never the object's name
    template: Obj  # `spec.template.spec`: the App spec the package installs
    kubernetes_constraints: str = ""  # kubernetesVersionSelection.constraints (a range; checked at selection)
    kapp_controller_constraints: str = ""  # kappControllerVersionSelection.constraints
    values_schema: Obj | None = None  # valuesSchema.openAPIv3: for clients; the controller does not validate values
    released_at: str = ""
    release_notes: str = ""
    licenses: tuple[str, ...] = ()
    capacity_requirements: str = ""
    included_software: tuple[IncludedSoftware, ...] = ()


def _included_software(value: Any, where: str) -> IncludedSoftware:
    item = read_map(value, where)
    return IncludedSoftware(
        read_str(item.get("displayName"), f"{where}.displayName"),
        read_str(item.get("version"), f"{where}.version"),
        read_str(item.get("description"), f"{where}.description"),
    )


def parse_package(obj: Mapping[str, Any]) -> PackageSpec:
    spec = read_map(obj.get("spec"), "spec")
    schema = read_map(spec.get("valuesSchema"), "spec.valuesSchema").get("openAPIv3")
    return PackageSpec(
        ref_name=read_str(spec.get("refName"), "spec.refName"),
        version=read_str(spec.get("version"), "spec.version"),
        template=read_map(read_map(spec.get("template"), "spec.template").get("spec"), "spec.template.spec"),
        kubernetes_constraints=read_str(
            read_map(spec.get("kubernetesVersionSelection"), "spec.kubernetesVersionSelection").get("constraints"),
            "spec.kubernetesVersionSelection.constraints",
        ),
        kapp_controller_constraints=read_str(
            read_map(spec.get("kappControllerVersionSelection"), "spec.kappControllerVersionSelection").get(
                "constraints"
            ),
            "spec.kappControllerVersionSelection.constraints",
        ),
        values_schema=None if schema is None else read_map(schema, "spec.valuesSchema.openAPIv3"),
        released_at=read_str(spec.get("releasedAt"), "spec.releasedAt"),
        release_notes=read_str(spec.get("releaseNotes"), "spec.releaseNotes"),
        licenses=read_strings(spec.get("licenses"), "spec.licenses"),
        capacity_requirements=read_str(
            spec.get("capacityRequirementsDescription"), "spec.capacityRequirementsDescription"
        ),
        included_software=tuple(
            _included_software(item, f"spec.includedSoftware[{i}]")
            for i, item in enumerate(read_list(spec.get("includedSoftware"), "spec.includedSoftware"))
        ),
    )


@dataclass(frozen=True, slots=True)
class PackageMetadataSpec:
    display_name: str = ""
    short_description: str = ""
    long_description: str = ""
    icon_svg_base64: str = ""
    provider_name: str = ""
    maintainers: tuple[str, ...] = ()  # their names (the only field kapp-controller supports)
    categories: tuple[str, ...] = ()
    support_description: str = ""


def parse_package_metadata(obj: Mapping[str, Any]) -> PackageMetadataSpec:
    spec = read_map(obj.get("spec"), "spec")
    return PackageMetadataSpec(
        display_name=read_str(spec.get("displayName"), "spec.displayName"),
        short_description=read_str(spec.get("shortDescription"), "spec.shortDescription"),
        long_description=read_str(spec.get("longDescription"), "spec.longDescription"),
        icon_svg_base64=read_str(spec.get("iconSVGBase64"), "spec.iconSVGBase64"),
        provider_name=read_str(spec.get("providerName"), "spec.providerName"),
        maintainers=tuple(
            read_str(read_map(item, f"spec.maintainers[{i}]").get("name"), f"spec.maintainers[{i}].name")
            for i, item in enumerate(read_list(spec.get("maintainers"), "spec.maintainers"))
        ),
        categories=read_strings(spec.get("categories"), "spec.categories"),
        support_description=read_str(spec.get("supportDescription"), "spec.supportDescription"),
    )
