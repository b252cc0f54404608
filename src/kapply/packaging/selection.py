"""Which Package a PackageInstall installs (kapp-controller's PackageFinder): of the Packages its namespace sees (its
own and, unless it opts out, the global namespace's: its own wins over a global one of the same
`<refName>.<version>`), those of its package, and of them the highest version its selection admits
(versions.select_version) after the Packages' Kubernetes and kapp-controller version constraints."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kapply import objects
from kapply.api import AsyncClient
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.packaging import names
from kapply.packaging.spec import InstallExtensions, PackageSpec, parse_package
from kapply.resources.cluster import ResourceType
from kapply.versions import (
    KAPP_CONTROLLER_VERSION_CHECK,
    KUBERNETES_VERSION_CHECK,
    SelectionError,
    SemverError,
    Version,
    VersionCheck,
    VersionSelection,
    parse_range,
    parse_relaxed,
    select_version,
)

NAMESPACES = ResourceType("", "v1", "Namespace", "namespaces", False, frozenset({"get"}))


def identity(package: Obj) -> str:
    """kapp-controller's identity of a Package, `<refName>.<version>` (the version as written)."""
    body = package.get("spec") or {}
    return f"{body.get('refName', '')}.{body.get('version', '')}"


def visible(own: Sequence[Obj], global_: Sequence[Obj]) -> list[Obj]:
    """The Packages a namespace sees: the global namespace's, each replaced by one of the namespace's own of the same
    identity, and the namespace's others."""
    merged = {identity(p): p for p in global_}
    merged.update((identity(p), p) for p in own)
    return list(merged.values())


def excluded(namespace: Obj | None) -> bool:
    """Whether a namespace opts out of the global namespace's packages (kapp-controller's annotation, or kapply's)."""
    return namespace is not None and any(
        key in objects.annotations(namespace) for key in names.EXCLUDE_GLOBAL_PACKAGES_ANNOTATIONS
    )


def release(version: Version) -> Version:
    """A version without its prerelease and build metadata (kapp-controller checks the cluster's and its own so)."""
    return Version(version.major, version.minor, version.patch)


def _constraint_check(
    name: str, by_version: dict[str, PackageSpec], constraints_of: Callable[[PackageSpec], str], version: Version
) -> VersionCheck:
    def accepts(candidate: str) -> bool:
        text = constraints_of(by_version[candidate])
        if not text:
            return True
        try:
            return parse_range(text).contains(version)
        except SemverError as e:
            where = (
                "kubernetesVersionSelection" if name == KUBERNETES_VERSION_CHECK else "kappControllerVersionSelection"
            )
            raise SelectionError(
                f"Expected spec.{where}.constraints of Package version '{candidate}' to be a version range: {e}"
            ) from None

    return VersionCheck(name, accepts)


def choose(
    packages: Sequence[Obj],
    ref_name: str,
    selection: VersionSelection,
    extensions: InstallExtensions,
    kubernetes_version: Version | None,
) -> Obj:
    """The Package to install among the `packages` the namespace sees (any refName). `kubernetes_version`: the
    cluster's, needed when a candidate has a Kubernetes constraint (`needs_kubernetes_version`). SelectionError with
    kapp-controller's messages."""
    if not packages:
        raise SelectionError(f"Package {ref_name} not found")
    by_version: dict[str, PackageSpec] = {}
    objects_by_version: dict[str, Obj] = {}
    for package in packages:
        body = parse_package(package)
        if body.ref_name == ref_name:
            by_version[body.version] = body
            objects_by_version[body.version] = package
    checks = []
    if any(body.kubernetes_constraints for body in by_version.values()):
        if kubernetes_version is None:
            raise KapplyError("Internal inconsistency: the cluster's version is needed")
        if extensions.ignore_kubernetes_version_selection:
            checks.append(VersionCheck(KUBERNETES_VERSION_CHECK, lambda _: True))
        else:
            version = release(kubernetes_version)
            checks.append(
                _constraint_check(KUBERNETES_VERSION_CHECK, by_version, lambda b: b.kubernetes_constraints, version)
            )
    if extensions.ignore_kapp_controller_version_selection:
        checks.append(VersionCheck(KAPP_CONTROLLER_VERSION_CHECK, lambda _: True))
    else:
        ours = release(parse_relaxed(names.KAPP_CONTROLLER_VERSION))
        checks.append(
            _constraint_check(KAPP_CONTROLLER_VERSION_CHECK, by_version, lambda b: b.kapp_controller_constraints, ours)
        )
    return objects_by_version[select_version(list(by_version), selection, checks)]


def needs_kubernetes_version(packages: Sequence[Obj], ref_name: str) -> bool:
    return any(
        (p.get("spec") or {}).get("refName") == ref_name
        and ((p.get("spec") or {}).get("kubernetesVersionSelection") or {}).get("constraints")
        for p in packages
    )


async def _list(api: AsyncClient, packages: ResourceType, namespace: str, ref_name: str | None) -> list[Obj]:
    """A namespace's Packages (of one package: the CRD's `spec.refName` field selector)."""
    if ref_name is None:
        found, _ = await api.cluster.list_with_version(packages, namespace=namespace, limit=1)
    else:
        found, _ = await api.cluster.list_with_version(
            packages, namespace=namespace, field_selector=f"spec.refName={ref_name}"
        )
    return found


async def visible_packages(
    api: AsyncClient, packages: ResourceType, namespace: str, ref_name: str, global_namespace: str
) -> list[Obj]:
    """The Packages (of type `packages`: the controller's vocabulary's) of `ref_name` the namespace sees; when it sees
    none, any one Package it sees (so that `choose` can tell "no version of this package" from kapp-controller's "no
    package at all": `Package <refName> not found`)."""
    own = await _list(api, packages, namespace, ref_name)
    use_global = namespace != global_namespace and not excluded(await api.cluster.get(NAMESPACES, None, namespace))
    seen = visible(own, await _list(api, packages, global_namespace, ref_name) if use_global else [])
    if seen:
        return seen
    return await _list(api, packages, namespace, None) or (
        await _list(api, packages, global_namespace, None) if use_global else []
    )


async def kubernetes_version(api: AsyncClient) -> Version:
    """The cluster's version (`/version`'s gitVersion, read leniently); kapp-controller's message when it cannot."""
    try:
        answer = await api.cluster.server_version()
        return parse_relaxed(str(answer.get("gitVersion", "")))
    except (KapplyError, SemverError) as e:
        raise SelectionError(f"Unable to get kubernetes version: {e}") from None
