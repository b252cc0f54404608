"""The packaging CRDs (config/packaging/crds.yml) on the real API server: they install with kapply; kapp-controller's
own example objects are accepted with only their apiVersion changed; what kapp-controller's aggregated API refuses is
refused, with its messages as far as CEL allows; `kubectl get pkgi`'s columns, the short names, the `carvel`
category and listing Packages by `spec.refName` work as with kapp-controller.

The CRDs stay installed afterwards, as the app kapply-packaging-crds in kapply-system (docs/packages.md's install
command; a second install changes nothing)."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Namespace

from kapply import AsyncClient, yamlio
from kapply.errors import ClusterError, ManifestError
from kapply.packaging import names
from kapply.versions import SemverError, parse_version
from tests.carvel_examples import DOCUMENTED_INSTALL, INLINE_REPOSITORY
from tests.e2e.harness import Cluster, KapplyRunner

pytestmark = pytest.mark.e2e

CRD_APP = "kapply-packaging-crds"
CRD_NAMESPACE = "kapply-system"
CRDS = "config/packaging/crds.yml"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


class Api:
    """Requests to the test cluster through kapply's own client, one at a time."""

    def __init__(self, cluster: Cluster) -> None:
        self.kubeconfig = cluster.kubeconfig

    def request(self, method: str, path: str, body: Any = None, accept: str = "application/json", **params: str) -> Any:
        async def send() -> Any:
            async with AsyncClient(self.kubeconfig) as client:
                return await client.cluster.request(method, path, params=params or None, body=body, accept=accept)

        return asyncio.run(send())

    def refusal(self, method: str, path: str, body: Any, **params: str) -> str:
        """The API server's message for a request it must refuse as Invalid (422)."""
        with pytest.raises(ClusterError) as e:
            self.request(method, path, body, **params)
        assert e.value.status == 422, e.value
        return e.value.detail


def path(resource: names.Resource, namespace: str, name: str = "") -> str:
    return f"/apis/{resource.api_version}/namespaces/{namespace}/{resource.plural}" + (f"/{name}" if name else "")


@pytest.fixture(scope="module")
def api(cluster: Cluster, kube: Client) -> Api:
    """The CRDs installed as docs/packages.md says (kapply-system may exist already; it is never deleted here)."""
    try:
        kube.create(Namespace.from_dict({"metadata": {"name": CRD_NAMESPACE}}))
    except ApiError as e:
        if e.status.code != 409:
            raise
    result = KapplyRunner(cluster.kubeconfig)("deploy", "-a", CRD_APP, "-n", CRD_NAMESPACE, "-f", CRDS, "-y")
    assert result.returncode == 0, result.stdout + result.stderr
    return Api(cluster)


def moved(text: str, namespace: str) -> list[dict[str, Any]]:
    """kapp-controller's objects, read as kapply reads manifests, with only their apiVersion changed, into
    `namespace`."""
    new_versions = {
        f"{names.CARVEL_GROUP}/{names.VERSION}": names.API_VERSION,
        f"{names.CARVEL_DATA_GROUP}/{names.VERSION}": names.DATA_API_VERSION,
    }
    docs = yamlio.load_all(text, "example", ManifestError)
    for doc in docs:
        doc["apiVersion"] = new_versions[doc["apiVersion"]]
        doc["metadata"]["namespace"] = namespace
    return docs


def resource_of(doc: dict[str, Any]) -> names.Resource:
    return next(r for r in names.RESOURCES if r.kind == doc["kind"] and r.api_version == doc["apiVersion"])


def package(name: str, ref_name: str, version: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": names.DATA_API_VERSION,
        "kind": "Package",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"refName": ref_name, "version": version, "template": {"spec": {}}},
    }


def test_a_second_install_of_the_crds_changes_nothing(api: Api, kapply: KapplyRunner):
    result = kapply("deploy", "-a", CRD_APP, "-n", CRD_NAMESPACE, "-f", CRDS, "--diff-run", "--diff-exit-status")
    assert result.returncode == 2, result.stdout + result.stderr


# kapp-controller's examples (examples/packaging-standalone/*.yml, and the full objects of its docs,
# docs/develop/packaging.md, with tests.carvel_examples' inline repository and PackageInstall), as written there, but
# for an image digest cut short to fit the line. The documented PackageInstall's `status` (which the controller
# writes, with fields kapp-controller never had) is left out.
STANDALONE = """
apiVersion: data.packaging.carvel.dev/v1alpha1
kind: PackageMetadata
metadata:
  name: pkg-standalone.test.carvel.dev
  namespace: pkg-standalone
spec:
  displayName: "Test Package standalone"
  shortDescription: "Package used for testing"
---
apiVersion: data.packaging.carvel.dev/v1alpha1
kind: Package
metadata:
  name: pkg-standalone.test.carvel.dev.2.0.0
  namespace: pkg-standalone
spec:
  refName: pkg-standalone.test.carvel.dev
  version: 2.0.0
  releasedAt: 2021-05-05T18:57:06Z
  template: # type of App CR
    spec:
      fetch:
      - git:
          url: https://github.com/k14s/k8s-simple-app-example
          ref: origin/develop
      template:
      - ytt:
          paths:
          - config-step-2-template
          - config-step-2a-overlays
          inline:
            paths:
              remove-ns.yml: |
                #@ load("@ytt:overlay", "overlay")
                #@overlay/match by=overlay.all,expects="1+"
                ---
                metadata:
                  #@overlay/remove
                  namespace:
      deploy:
      - kapp: {}
---
apiVersion: packaging.carvel.dev/v1alpha1
kind: PackageInstall
metadata:
  name: pkg-standalone-demo
  namespace: pkg-standalone
spec:
  serviceAccountName: pkg-standalone-sa
  packageRef:
    refName: pkg-standalone.test.carvel.dev
    versionSelection:
      constraints: 2.0.0
  values:
  - secretRef:
      name: pkg-standalone-demo-values
"""

DOCUMENTED = (
    """
apiVersion: data.packaging.carvel.dev/v1alpha1
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
  releasedAt: 2021-05-05T18:57:06Z
  includedSoftware:
  - displayName: fluent-bit
    version: 1.5.3
    description: fluent bit
  - displayName: fluent-webhook
    version: 2.3.4
    description: a fluent webhook
  valuesSchema:
    openAPIv3:
      title: fluent-bit.carvel.dev.1.5.3 values schema
      examples:
      - namespace: fluent-bit
      properties:
        namespace:
          type: string
          description: Namespace where fluent-bit will be installed.
          default: fluent-bit
          examples:
          - fluent-bit
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
---
apiVersion: data.packaging.carvel.dev/v1alpha1
kind: PackageMetadata
metadata:
  name: fluent-bit.vmware.com
  namespace: my-ns
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
---
apiVersion: packaging.carvel.dev/v1alpha1
kind: PackageRepository
metadata:
  name: basic.carvel.dev
  namespace: my-ns
spec:
  paused: true
  syncPeriod: 1m
  fetch:
    inline:
      paths:
        dir/file.ext: file-content
      pathsFrom:
        - secretRef:
            name: secret-name
            directoryPath: dir
        - configMapRef:
            name: cfgmap-name
            directoryPath: dir
    imgpkgBundle:
      image: host.com/username/image:v0.1.0
      tagSelection:
        semver:
          constraints: ">1.0.0 <3.0.0"
          prereleases:
            identifiers: [beta, rc]
    image:
      url: host.com/username/image:v0.1.0
      subPath: inside-dir/dir2
      tagSelection:
        semver:
          constraints: ">1.0.0 <3.0.0"
          prereleases:
            identifiers: [beta, rc]
    http:
      url: https://host.com/archive.tgz
      sha256: 0a12cdef83
      subPath: inside-dir/dir2
    git:
      url: https://github.com/k14s/k8s-simple-app-example
      ref: origin/develop
      subPath: config-step-2-template
      lfsSkipSmudge: true
      refSelection:
        semver:
          constraints: ">0.4.0"
          prereleases:
            identifiers: [beta, rc]
---"""
    + DOCUMENTED_INSTALL
)

# Fields of kapp-controller v0.53's types that its examples do not show (reference sections 2.2-2.5).
NEWER_FIELDS = """
apiVersion: data.packaging.carvel.dev/v1alpha1
kind: Package
metadata:
  name: pkg.test.carvel.dev.1.0.0
spec:
  refName: pkg.test.carvel.dev
  version: 1.0.0
  kubernetesVersionSelection:
    constraints: ">=1.21.0"
  kappControllerVersionSelection:
    constraints: ">=0.41.0"
  template:
    spec: {}
---
apiVersion: packaging.carvel.dev/v1alpha1
kind: PackageRepository
metadata:
  name: git-repo
spec:
  fetch:
    git:
      url: https://example.com/repo.git
      forceHTTPBasicAuth: true
      depth: 0
      secretRef:
        name: git-creds
---
apiVersion: packaging.carvel.dev/v1alpha1
kind: PackageInstall
metadata:
  name: defaulted
spec:
  serviceAccountName: deployer
  defaultNamespace: apps
  packageRef:
    refName: pkg.test.carvel.dev
    versionSelection:
      constraints: ">= 0.0.0"
      prereleases: {}
  values:
  - secretRef:
      name: values
      key: values.yaml
"""


@pytest.mark.parametrize(
    "example",
    [STANDALONE, INLINE_REPOSITORY, DOCUMENTED, NEWER_FIELDS],
    ids=["packaging-standalone", "inline-repository", "documented", "newer-fields"],
)
def test_kapp_controllers_examples_are_accepted_whole_with_only_the_api_version_changed(
    api: Api, namespace: str, example: str
):
    for doc in moved(example, namespace):
        resource = resource_of(doc)
        # Strict: an unknown field would be refused, not dropped.
        api.request("POST", path(resource, namespace), doc, fieldValidation="Strict")
        stored = api.request("GET", path(resource, namespace, doc["metadata"]["name"]))
        assert stored["spec"] == doc["spec"]


def test_a_package_name_other_than_ref_name_dot_version_is_refused(api: Api, namespace: str):
    wrong = package("pkg.test.carvel.dev.2.0.0", "pkg.test.carvel.dev", "1.0.0", namespace)
    assert api.refusal("POST", path(names.PACKAGE, namespace), wrong) == (
        'Package.data.packaging.kapply.dev "pkg.test.carvel.dev.2.0.0" is invalid: metadata.name: Invalid value: '
        "\"object\": must be <spec.refName> + '.' + <spec.version>: pkg.test.carvel.dev.1.0.0"
    )


def test_a_version_with_build_metadata_names_its_package_in_lower_case_with_plus_as_dot(api: Api, namespace: str):
    version = "1.0.0-RC.1+Build.5"
    name = names.package_name("pkg.test.carvel.dev", version)
    created = api.request(
        "POST", path(names.PACKAGE, namespace), package(name, "pkg.test.carvel.dev", version, namespace)
    )
    assert (created["metadata"]["name"], created["spec"]["version"]) == (
        "pkg.test.carvel.dev.1.0.0-rc.1.build.5",
        version,
    )
    as_kapp_controller_names_it = package(
        "pkg.test.carvel.dev.1.0.0+b.1", "pkg.test.carvel.dev", "1.0.0+b.1", namespace
    )
    message = api.refusal("POST", path(names.PACKAGE, namespace), as_kapp_controller_names_it)
    assert (
        "must be <spec.refName> + '.' + <spec.version>, in lower case and with '+' as '.' (object names cannot hold "
        "them): pkg.test.carvel.dev.1.0.0.b.1"
    ) in message


@pytest.mark.parametrize(
    ("ref_name", "message"),
    [
        ("", "spec.refName: Required value: can not be empty"),
        ("pkg.example", 'spec.refName: Invalid value: "string": should be a domain with at least three segments'),
        ("Pkg.Example.com", 'spec.refName: Invalid value: "string": a lowercase RFC 1123 subdomain must consist of'),
    ],
)
def test_a_ref_name_that_is_not_a_domain_of_three_segments_is_refused(
    api: Api, namespace: str, ref_name: str, message: str
):
    name = names.package_name(ref_name, "1.0.0").lower().lstrip(".")
    assert message in api.refusal("POST", path(names.PACKAGE, namespace), package(name, ref_name, "1.0.0", namespace))


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("", 'spec.version: Invalid value: "string": cannot be empty'),
        ("1.0", "must be valid semver: No Major.Minor.Patch elements found"),
        ("v1.0.0", 'must be valid semver: Invalid character(s) found in major number "v1"'),
        ("01.0.0", 'must be valid semver: Major number must not contain leading zeroes "01"'),
        ("1.x.0", 'must be valid semver: Invalid character(s) found in minor number "x"'),
        ("1.00.0", 'must be valid semver: Minor number must not contain leading zeroes "00"'),
        ("1.0.1.rc1", 'must be valid semver: Invalid character(s) found in patch number "1.rc1"'),
        ("1.0.01-rc", 'must be valid semver: Patch number must not contain leading zeroes "01"'),
        ("1.0.0-01", "must be valid semver: MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]"),
    ],
)
def test_a_version_that_is_not_strict_semver_is_refused_with_the_parsers_first_complaint(
    api: Api, namespace: str, version: str, message: str
):
    doc = package(names.package_name("pkg.test.carvel.dev", version), "pkg.test.carvel.dev", version, namespace)
    assert message in api.refusal("POST", path(names.PACKAGE, namespace), doc)


# Versions whose names are object names, so that only spec.version decides; 20-digit numbers are the one documented
# difference (carvel's semver reads up to 2^64-1, the CRD takes 19 digits).
VERSIONS = [
    "1.0.0",
    "0.0.0",
    "10.20.30",
    "9999999999999999999.0.0",
    "1.0.0-rc.1",
    "1.0.0-RC.1",
    "1.0.0-0.3.7",
    "1.0.0-x.7.z.92",
    "1.0.0-alpha-a.b-c",
    "1.0.0--x",
    "1.0.0-00a",
    "1.0.0+build.1",
    "1.0.0+001",
    "1.0.0-rc.1+build.1",
    "1.0.0+Build.A",
    "v1.0.0",
    "1.0",
    "1.0.0.0",
    "01.0.0",
    "1.01.0",
    "1.0.01",
    "1.0.0-01",
    "1.0.0-rc.01",
    "1.0.0-a.00",
    "1.0.0-rc..1",
    "1.0.0-rc_1",
    "1.0.0+build..1",
]


def test_the_crd_accepts_exactly_the_versions_carvel_semver_parses(api: Api, namespace: str):
    def parses(version: str) -> bool:
        try:
            parse_version(version)
        except SemverError:
            return False
        return True

    def accepted(version: str) -> bool:
        doc = package(names.package_name("pkg.test.carvel.dev", version), "pkg.test.carvel.dev", version, namespace)
        try:
            api.request("POST", path(names.PACKAGE, namespace), doc, dryRun="All")
        except ClusterError as e:
            assert e.status == 422, e
            return False
        return True

    assert {v: accepted(v) for v in VERSIONS} == {v: parses(v) for v in VERSIONS}


def test_a_package_metadata_name_needs_three_segments(api: Api, namespace: str):
    def metadata(name: str) -> dict[str, Any]:
        return {"apiVersion": names.DATA_API_VERSION, "kind": "PackageMetadata", "metadata": {"name": name}}

    assert api.refusal("POST", path(names.PACKAGE_METADATA, namespace), metadata("pkg.example")).endswith(
        'metadata.name: Invalid value: "object": should be a domain with at least three segments separated by dots'
    )
    api.request("POST", path(names.PACKAGE_METADATA, namespace), metadata("pkg.example.com"))


def table(api: Api, resource: names.Resource, namespace: str) -> tuple[list[str], list[list[Any]]]:
    answer = api.request("GET", path(resource, namespace), accept=TABLE)
    return [c["name"] for c in answer["columnDefinitions"]], [row["cells"] for row in answer["rows"]]


def test_tables_show_kapp_controllers_columns(api: Api, namespace: str):
    for doc in moved(DOCUMENTED, namespace):
        api.request("POST", path(resource_of(doc), namespace), doc)
    install = path(names.PACKAGE_INSTALL, namespace, "fluent-bit")
    stored = api.request("GET", install)
    status = {"version": "1.5.3", "friendlyDescription": "Reconcile succeeded"}
    api.request("PUT", install + "/status", {**stored, "status": status})

    columns, rows = table(api, names.PACKAGE_INSTALL, namespace)
    assert columns == ["Name", "Package name", "Package version", "Description", "Age"]
    assert [row[:4] for row in rows] == [["fluent-bit", "fluent-bit.vmware.com", "1.5.3", "Reconcile succeeded"]]
    columns, rows = table(api, names.PACKAGE_REPOSITORY, namespace)
    assert columns == ["Name", "Age", "Description"]
    assert [row[0] for row in rows] == ["basic.carvel.dev"]
    columns, rows = table(api, names.PACKAGE, namespace)
    assert columns == ["Name", "PackageMetadata Name", "Version", "Age"]
    assert [row[:3] for row in rows] == [["fluent-bit.carvel.dev.1.5.3", "fluent-bit.carvel.dev", "1.5.3"]]
    columns, rows = table(api, names.PACKAGE_METADATA, namespace)
    assert columns == ["Name", "Display Name", "Categories", "Short Description", "Age"]
    # A printer column shows a list as JSON (kapp-controller's aggregated API joined it with commas).
    assert [row[:4] for row in rows] == [
        ["fluent-bit.vmware.com", "Fluent Bit", '["logging","daemon-set"]', "Log processing and forwarding"]
    ]


def test_statuses_are_subresources_with_kapp_controllers_shape(api: Api, namespace: str):
    statuses = {
        names.PACKAGE_INSTALL: {
            "observedGeneration": 1,
            "conditions": [{"type": "ReconcileSucceeded", "status": "True", "reason": "", "message": ""}],
            "friendlyDescription": "Reconcile succeeded",
            "usefulErrorMessage": "",
            "version": "2.0.0",
            "lastAttemptedVersion": "2.0.0",
        },
        names.PACKAGE_REPOSITORY: {
            "observedGeneration": 1,
            "conditions": [{"type": "ReconcileFailed", "status": "True", "message": "Fetching resources: x"}],
            "friendlyDescription": "Reconcile failed: Fetching resources: x",
            "usefulErrorMessage": "vendir: Error: x",
            "consecutiveReconcileSuccesses": 0,
            "consecutiveReconcileFailures": 2,
            "fetch": {"stderr": "x", "exitCode": 1, "error": "x", "startedAt": "2026-01-01T00:00:00Z"},
            "template": {"exitCode": 0, "updatedAt": "2026-01-01T00:00:01Z"},
            "deploy": {
                "stdout": "ok",
                "finished": True,
                "exitCode": 0,
                "kapp": {
                    "associatedResources": {
                        "label": "kapp.k14s.io/app=1",
                        "namespaces": ["n"],
                        "groupKinds": [{"group": names.DATA_GROUP, "kind": "Package"}],
                    }
                },
            },
        },
    }
    for doc in moved(STANDALONE + INLINE_REPOSITORY, namespace):
        api.request("POST", path(resource_of(doc), namespace), doc)
    for resource, name in (
        (names.PACKAGE_INSTALL, "pkg-standalone-demo"),
        (names.PACKAGE_REPOSITORY, "probably-tap-or-something.tanzu.carvel.dev"),
    ):
        stored = api.request("GET", path(resource, namespace, name))
        ignored = api.request("PUT", path(resource, namespace, name), {**stored, "status": statuses[resource]})
        assert "status" not in ignored  # the main resource does not write status
        written = api.request(
            "PUT", path(resource, namespace, name) + "/status", {**stored, "status": statuses[resource]}
        )
        assert written["status"] == statuses[resource]
        assert written["metadata"]["generation"] == 1


def test_kubectl_waits_for_reconcile_succeeded_and_gets_by_short_name(
    cluster: Cluster, api: Api, namespace: str, tmp_path: Path
):
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    for doc in moved(STANDALONE, namespace):
        api.request("POST", path(resource_of(doc), namespace), doc)
    install = path(names.PACKAGE_INSTALL, namespace, "pkg-standalone-demo")
    succeeded = {"conditions": [{"type": "ReconcileSucceeded", "status": "True"}], "version": "2.0.0"}
    api.request("PUT", install + "/status", {**api.request("GET", install), "status": succeeded})

    def run(*args: str) -> str:
        done = subprocess.run(
            # a discovery cache of its own: what kubectl cached before (another test's CRDs) is not what is served now
            [kubectl, "--kubeconfig", str(cluster.kubeconfig), "--cache-dir", str(tmp_path), "-n", namespace, *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    run("wait", "--for=condition=ReconcileSucceeded", "pkgi/pkg-standalone-demo", "--timeout=20s")
    header = re.split(r"\s{2,}", run("get", "pkgi").splitlines()[0].strip())
    assert header == ["NAME", "PACKAGE NAME", "PACKAGE VERSION", "DESCRIPTION", "AGE"]
    assert "pkg-standalone-demo" in run("get", "carvel")
    assert "pkg-standalone.test.carvel.dev.2.0.0" in run("get", "pkg")
    assert "pkg-standalone.test.carvel.dev" in run("get", "pkgm")


def test_discovery_names_kapp_controllers_short_names_and_categories(api: Api):
    served = {}
    for group in (names.GROUP, names.DATA_GROUP):
        for resource in api.request("GET", f"/apis/{group}/{names.VERSION}")["resources"]:
            served[resource["name"]] = (resource["kind"], resource.get("shortNames"), resource.get("categories"))
    assert served == {
        "packagerepositories": ("PackageRepository", ["pkgr"], ["carvel", "kapply"]),
        "packagerepositories/status": ("PackageRepository", None, None),
        "packageinstalls": ("PackageInstall", ["pkgi"], ["carvel", "kapply"]),
        "packageinstalls/status": ("PackageInstall", None, None),
        "packages": ("Package", ["pkg"], None),
        "packagemetadatas": ("PackageMetadata", ["pkgm"], None),
    }
    crd = api.request(
        "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{names.PACKAGE_REPOSITORY.crd_name}"
    )
    assert crd["metadata"]["annotations"][names.GLOBAL_NAMESPACE_ANNOTATION] == names.DEFAULT_GLOBAL_NAMESPACE


def test_packages_and_installs_list_by_ref_name(api: Api, namespace: str):
    for ref_name, version in [("a.example.com", "1.0.0"), ("a.example.com", "2.0.0"), ("b.example.com", "1.0.0")]:
        doc = package(names.package_name(ref_name, version), ref_name, version, namespace)
        api.request("POST", path(names.PACKAGE, namespace), doc)
    for name, ref_name in [("first", "a.example.com"), ("second", "b.example.com")]:
        doc = {
            "apiVersion": names.API_VERSION,
            "kind": "PackageInstall",
            "metadata": {"name": name},
            "spec": {"packageRef": {"refName": ref_name, "versionSelection": {"constraints": ">=1.0.0"}}},
        }
        api.request("POST", path(names.PACKAGE_INSTALL, namespace), doc)

    found = api.request("GET", path(names.PACKAGE, namespace), fieldSelector="spec.refName=a.example.com")
    assert sorted(item["spec"]["version"] for item in found["items"]) == ["1.0.0", "2.0.0"]
    found = api.request(
        "GET", path(names.PACKAGE_INSTALL, namespace), fieldSelector="spec.packageRef.refName=b.example.com"
    )
    assert [item["metadata"]["name"] for item in found["items"]] == ["second"]
