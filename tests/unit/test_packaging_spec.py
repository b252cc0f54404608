"""Reading PackageRepository, PackageInstall, Package and PackageMetadata objects (kapp-controller's examples, with
kapply's apiVersions), kapp-controller's messages for what its controllers refuse, the extension annotations under
both prefixes, and the names kapply gives things."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kapply.api import DriftPolicy
from kapply.packaging import names
from kapply.packaging.spec import (
    ClusterTarget,
    IncludedSoftware,
    PackageRef,
    RepositorySource,
    SpecError,
    ValuesRef,
    package_selection,
    parse_install_extensions,
    parse_package,
    parse_package_install,
    parse_package_metadata,
    parse_package_repository,
)
from kapply.versions import Prereleases, VersionSelection
from tests import carvel_examples


def doc(text: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


# --- PackageRepository ------------------------------------------------------------------------------------------------

INLINE_REPOSITORY = doc(
    """
apiVersion: packaging.kapply.dev/v1alpha1
kind: PackageRepository
metadata: {name: probably-tap-or-something.tanzu.carvel.dev, namespace: kapply-packaging-global}
spec:
  fetch:
    inline:
      paths:
        packages/pkg.test.carvel.dev/pkg.test.carvel.dev.2.0.0.yml: |
          apiVersion: data.packaging.carvel.dev/v1alpha1
          kind: Package
"""
)


def repository(fetch: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": names.API_VERSION, "kind": "PackageRepository", "spec": {"fetch": fetch, **spec}}


def test_an_inline_repository_fetches_its_paths_every_ten_minutes():
    spec = parse_package_repository(INLINE_REPOSITORY)
    assert spec.fetch.source == RepositorySource.INLINE
    assert list(spec.fetch.config["paths"]) == ["packages/pkg.test.carvel.dev/pkg.test.carvel.dev.2.0.0.yml"]
    assert spec.fetch.secret_name == ""
    assert (spec.sync_period, spec.paused) == (600.0, False)


@pytest.mark.parametrize(
    ("sources", "chosen"),
    [
        (["imgpkgBundle", "git", "http", "image", "inline"], RepositorySource.INLINE),
        (["imgpkgBundle", "git", "http", "image"], RepositorySource.IMAGE),
        (["imgpkgBundle", "git", "http"], RepositorySource.HTTP),
        (["imgpkgBundle", "git"], RepositorySource.GIT),
        (["imgpkgBundle"], RepositorySource.IMGPKG_BUNDLE),
    ],
)
def test_of_several_fetch_sources_the_first_in_kapp_controllers_order_is_used(sources: list[str], chosen: str):
    fetch = {source: {"url": f"https://example.com/{source}"} for source in sources}
    spec = parse_package_repository(repository(fetch))
    assert spec.fetch.source == chosen
    assert spec.fetch.config == fetch[chosen]


def test_a_null_fetch_source_is_not_a_source():
    spec = parse_package_repository(repository({"inline": None, "git": {"url": "https://example.com/r"}}))
    assert spec.fetch.source == RepositorySource.GIT


def test_a_repository_without_a_fetch_source_is_refused():
    with pytest.raises(SpecError) as e:
        parse_package_repository(repository({}))
    assert str(e.value) == "Unsupported way to fetch templates"


def test_the_fetch_secret_is_the_sources_secret_ref():
    spec = parse_package_repository(repository({"imgpkgBundle": {"image": "r/x", "secretRef": {"name": "creds"}}}))
    assert spec.fetch.secret_name == "creds"
    assert parse_package_repository(repository({"git": {"url": "u"}})).fetch.secret_name == ""


@pytest.mark.parametrize(("written", "seconds"), [("1m", 60.0), ("10s", 30.0), ("30s", 30.0), ("1h", 3600.0)])
def test_a_repository_sync_period_is_never_under_thirty_seconds(written: str, seconds: float):
    spec = parse_package_repository(repository({"git": {"url": "u"}}, syncPeriod=written, paused=True))
    assert (spec.sync_period, spec.paused) == (seconds, True)


def test_a_sync_period_that_is_not_a_duration_is_refused():
    with pytest.raises(SpecError) as e:
        parse_package_repository(repository({"git": {"url": "u"}}, syncPeriod="soon"))
    assert str(e.value) == 'Expected spec.syncPeriod to be a duration: time: invalid duration "soon"'


# --- PackageInstall ---------------------------------------------------------------------------------------------------

# kapp-controller's documented PackageInstall, apiVersion changed.
DOCUMENTED_INSTALL = doc(carvel_examples.DOCUMENTED_INSTALL) | {"apiVersion": names.API_VERSION}


def install(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": names.API_VERSION, "kind": "PackageInstall", "metadata": {"name": "i"}, "spec": spec}


def test_the_documented_install_reads_field_by_field():
    spec = parse_package_install(DOCUMENTED_INSTALL)
    assert spec.service_account == "fluent-bit-sa"
    assert spec.cluster == ClusterTarget("ns2", "cluster1", "value")
    assert spec.package_ref == PackageRef("fluent-bit.vmware.com", VersionSelection(">v1.5.3", Prereleases()))
    assert spec.values == (ValuesRef("fluent-bit-values"),)
    assert spec.sync_period == "1m"
    assert (spec.paused, spec.canceled, spec.noop_delete, spec.default_namespace) == (True, True, True, "")


def test_an_install_without_optional_fields_has_kapp_controllers_defaults():
    spec = parse_package_install(install(packageRef={"refName": "p.example.com", "versionSelection": {}}))
    assert (spec.service_account, spec.cluster, spec.values, spec.sync_period) == ("", None, (), None)
    assert spec.package_ref == PackageRef("p.example.com", VersionSelection("", None))
    assert (spec.paused, spec.canceled, spec.noop_delete) == (False, False, False)


def test_prerelease_identifiers_are_read():
    selection = {"constraints": ">=1.0.0", "prereleases": {"identifiers": ["rc", "beta"]}}
    spec = parse_package_install(install(packageRef={"refName": "p.example.com", "versionSelection": selection}))
    assert spec.package_ref == PackageRef("p.example.com", VersionSelection(">=1.0.0", Prereleases(("rc", "beta"))))


def test_an_install_selects_its_package_with_the_single_prerelease_rule():
    ref = {"refName": "pkg.test.carvel.dev", "versionSelection": {"constraints": "3.0.0-rc.1"}}
    selection = package_selection(parse_package_install(install(packageRef=ref)))
    assert (selection.ref_name, selection.selection) == (
        "pkg.test.carvel.dev",
        VersionSelection("3.0.0-rc.1", Prereleases()),
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "Expected non nil PackageRef"),
        ({"packageRef": {"refName": "p.example.com"}}, "Expected non-empty version selection"),
        ({"values": [{"secretRef": {"name": "v"}}, {}]}, "Invalid fields: spec.values[1].secretRef: Required value"),
        (
            {"values": [{}, {"secretRef": {"name": "v"}}, {"secretRef": None}]},
            "Invalid fields: [spec.values[0].secretRef: Required value, spec.values[2].secretRef: Required value]",
        ),
    ],
)
def test_an_install_kapp_controller_cannot_select_for_fails_with_its_message(spec: dict[str, Any], message: str):
    parsed = parse_package_install(install(**spec))  # still readable: it can be deleted
    with pytest.raises(SpecError) as e:
        package_selection(parsed)
    assert str(e.value) == message


def test_values_are_checked_before_the_package_reference():
    with pytest.raises(SpecError) as e:
        package_selection(parse_package_install(install(values=[{}])))
    assert str(e.value).startswith("Invalid fields:")


def test_a_values_secret_key_is_read_though_kapp_controller_ignores_it():
    spec = parse_package_install(install(values=[{"secretRef": {"name": "v", "key": "values.yml"}}]))
    assert spec.values == (ValuesRef("v", "values.yml"),)


@pytest.mark.parametrize("policy", list(DriftPolicy))
def test_an_installs_drift_policy_is_read(policy: DriftPolicy):
    assert parse_package_install(install(driftPolicy=policy.value)).drift_policy is policy


def test_an_install_without_a_drift_policy_leaves_it_to_the_package_and_the_controller():
    assert parse_package_install(install()).drift_policy is None
    assert parse_package_install(install(driftPolicy="")).drift_policy is None


def test_an_unknown_drift_policy_is_refused_with_the_apps_message():
    with pytest.raises(SpecError) as e:
        parse_package_install(install(driftPolicy="ignore"))
    assert str(e.value) == "Expected spec.driftPolicy to be one of enforce, preserve, warn, got 'ignore'"


def test_an_install_field_of_the_wrong_type_is_refused():
    with pytest.raises(SpecError) as e:
        parse_package_install(install(paused="yes"))
    assert str(e.value) == "Expected spec.paused to be a boolean, got str"


# --- extension annotations --------------------------------------------------------------------------------------------


def test_without_annotations_nothing_is_extended():
    extensions = parse_install_extensions({})
    assert not extensions.downgradable and extensions.helm_template_name is None
    assert extensions.ytt_paths_from_secrets == () and extensions.fetch_secrets == ()


@pytest.mark.parametrize("prefix", ["packaging.carvel.dev/", "packaging.kapply.dev/"])
def test_presence_annotations_count_under_either_prefix(prefix: str):
    extensions = parse_install_extensions(
        {
            "metadata": {
                "annotations": {
                    prefix + "downgradable": "",
                    prefix + "ignore-kubernetes-version-selection": "",
                    prefix + "ignore-kapp-controller-version-selection": "",
                }
            }
        }
    )
    assert extensions.downgradable
    assert extensions.ignore_kubernetes_version_selection
    assert extensions.ignore_kapp_controller_version_selection


def test_extension_secrets_are_ordered_by_suffix_as_plain_strings():
    base = "ext.packaging.carvel.dev/ytt-paths-from-secret-name"
    found = {f"{base}.2": "two", f"{base}.10": "ten", base: "bare", f"{base}.a": "a", f"{base}x": "not-ours"}
    extensions = parse_install_extensions({"metadata": {"annotations": found}})
    assert extensions.ytt_paths_from_secrets == ("bare", "ten", "two", "a")


def test_kapply_extension_annotations_join_kapp_controllers_and_win_on_the_same_key():
    carvel, kapply = "ext.packaging.carvel.dev/", "ext.packaging.kapply.dev/"
    found = {
        carvel + "helm-template-values-from-secret-name": "carvel-bare",
        carvel + "helm-template-values-from-secret-name.1": "carvel-one",
        kapply + "helm-template-values-from-secret-name.1": "kapply-one",
        kapply + "helm-template-values-from-secret-name.0": "kapply-zero",
        carvel + "helm-template-name": "carvel-release",
        kapply + "helm-template-name": "kapply-release",
        carvel + "helm-template-namespace": "",
        kapply + "ytt-data-values-overlays": "",
    }
    extensions = parse_install_extensions({"metadata": {"annotations": found}})
    assert extensions.helm_values_from_secrets == ("carvel-bare", "kapply-zero", "kapply-one")
    assert extensions.helm_template_name == "kapply-release"
    assert extensions.helm_template_namespace == ""  # present, so it overrides (with "")
    assert extensions.ytt_data_values_overlays


def test_fetch_secret_annotations_name_their_fetch_step():
    found = {
        "ext.packaging.carvel.dev/fetch-0-secret-name": "zero",
        "ext.packaging.carvel.dev/fetch-12-secret-name": "twelve",
        "ext.packaging.kapply.dev/fetch-12-secret-name": "twelve-kapply",
        "ext.packaging.carvel.dev/fetch-01-secret-name": "not-a-step",  # kapp-controller looks up fetch-1-...
        "fetch-3-secret-name": "no-prefix",
    }
    extensions = parse_install_extensions({"metadata": {"annotations": found}})
    assert extensions.fetch_secrets == ((0, "zero"), (12, "twelve-kapply"))


def test_the_install_carries_its_extensions():
    found = {"ext.packaging.carvel.dev/ytt-paths-from-secret-name.kctrl-ytt-overlays": "i-ns-overlays"}
    spec = parse_package_install({**install(), "metadata": {"name": "i", "annotations": found}})
    assert spec.extensions.ytt_paths_from_secrets == ("i-ns-overlays",)


def test_manually_controlled_is_read_under_both_prefixes():
    assert names.extension_keys(names.Extension.MANUALLY_CONTROLLED) == (
        "ext.packaging.carvel.dev/manually-controlled",
        "ext.packaging.kapply.dev/manually-controlled",
    )


# --- Package and PackageMetadata --------------------------------------------------------------------------------------

# kapp-controller's documented Package (docs/develop/packaging.md), apiVersion changed, with the version selections of
# its v0.41 types added.
DOCUMENTED_PACKAGE = doc(
    """
apiVersion: data.packaging.kapply.dev/v1alpha1
kind: Package
metadata:
  name: fluent-bit.carvel.dev.1.5.3
  namespace: my-ns
spec:
  refName: fluent-bit.carvel.dev
  version: 1.5.3
  releaseNotes: "Fixed some bugs"
  capacityRequirementsDescription: "RAM: 10GB"
  licenses:
  - "Apache 2.0"
  - "MIT"
  releasedAt: "2021-05-05T18:57:06Z"  # a string, as the API server returns it
  includedSoftware:
  - displayName: fluent-bit
    version: 1.5.3
    description: fluent bit
  valuesSchema:
    openAPIv3:
      title: fluent-bit.carvel.dev.1.5.3 values schema
      properties:
        namespace:
          type: string
          default: fluent-bit
  kubernetesVersionSelection:
    constraints: ">=1.21.0"
  kappControllerVersionSelection:
    constraints: ">=0.41.0"
  template:
    spec:
      fetch:
      - imgpkgBundle:
          image: registry.tkg.vmware.run/tkg-fluent-bit@sha256:0
      template:
      - ytt:
          paths:
          - config/
      - kbld:
          paths:
          - .imgpkg/images.yml
          - "-"
      deploy:
      - kapp: {}
"""
)


def test_the_documented_package_reads_field_by_field():
    spec = parse_package(DOCUMENTED_PACKAGE)
    assert (spec.ref_name, spec.version) == ("fluent-bit.carvel.dev", "1.5.3")
    assert spec.template["deploy"] == [{"kapp": {}}]
    assert spec.template["template"] == [
        {"ytt": {"paths": ["config/"]}},
        {"kbld": {"paths": [".imgpkg/images.yml", "-"]}},
    ]
    assert spec.values_schema is not None and spec.values_schema["properties"]["namespace"]["default"] == "fluent-bit"
    assert (spec.kubernetes_constraints, spec.kapp_controller_constraints) == (">=1.21.0", ">=0.41.0")
    assert spec.licenses == ("Apache 2.0", "MIT")
    assert spec.included_software == (IncludedSoftware("fluent-bit", "1.5.3", "fluent bit"),)
    assert (spec.released_at, spec.release_notes, spec.capacity_requirements) == (
        "2021-05-05T18:57:06Z",
        "Fixed some bugs",
        "RAM: 10GB",
    )


def test_a_package_with_an_empty_template_reads():
    # kapp-controller's overlapping-repository tests use Packages with `template: {spec: {}}`.
    spec = parse_package({"spec": {"refName": "pkg.test.carvel.dev", "version": "1.0.0", "template": {"spec": {}}}})
    assert (spec.template, spec.values_schema, spec.kubernetes_constraints) == ({}, None, "")


def test_the_documented_package_metadata_reads_field_by_field():
    spec = parse_package_metadata(
        doc(
            """
apiVersion: data.packaging.kapply.dev/v1alpha1
kind: PackageMetadata
metadata: {name: fluent-bit.vmware.com, namespace: my-ns}
spec:
  displayName: "Fluent Bit"
  longDescription: "Fluent bit is an open source..."
  shortDescription: "Log processing and forwarding"
  iconSVGBase64: YXNmZGdlcmdlcg==
  providerName: VMware
  maintainers:
  - name: "Person 1"
  - name: "Person 2"
  categories:
  - "logging"
  - "daemon-set"
  supportDescription: "..."
"""
        )
    )
    assert (spec.display_name, spec.short_description, spec.provider_name) == (
        "Fluent Bit",
        "Log processing and forwarding",
        "VMware",
    )
    assert spec.maintainers == ("Person 1", "Person 2")
    assert spec.categories == ("logging", "daemon-set")
    assert (spec.long_description, spec.icon_svg_base64, spec.support_description) == (
        "Fluent bit is an open source...",
        "YXNmZGdlcmdlcg==",
        "...",
    )


# --- names ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "name"),
    [
        ("1.5.3", "fluent-bit.carvel.dev.1.5.3"),
        ("3.0.0-rc.1", "fluent-bit.carvel.dev.3.0.0-rc.1"),
        ("1.5.3+vmware.1", "fluent-bit.carvel.dev.1.5.3.vmware.1"),
        ("0.0.0+build.1700000000", "fluent-bit.carvel.dev.0.0.0.build.1700000000"),
        ("1.0.0-RC.1+Build.5", "fluent-bit.carvel.dev.1.0.0-rc.1.build.5"),
    ],
)
def test_a_package_is_named_refname_dot_version_in_lower_case_with_plus_as_dot(version: str, name: str):
    assert names.package_name("fluent-bit.carvel.dev", version) == name


def test_kapply_uses_its_own_groups_and_finalizers_with_kapp_controllers_kinds():
    assert [(r.api_version, r.kind, r.plural, r.short_name) for r in names.RESOURCES] == [
        ("packaging.kapply.dev/v1alpha1", "PackageRepository", "packagerepositories", "pkgr"),
        ("packaging.kapply.dev/v1alpha1", "PackageInstall", "packageinstalls", "pkgi"),
        ("data.packaging.kapply.dev/v1alpha1", "Package", "packages", "pkg"),
        ("data.packaging.kapply.dev/v1alpha1", "PackageMetadata", "packagemetadatas", "pkgm"),
    ]
    assert "carvel.dev" not in names.REPOSITORY_FINALIZER + names.INSTALL_FINALIZER
    assert names.repository_app_name("e2e-repo.test.carvel.dev") == "e2e-repo.test.carvel.dev.pkgr"
