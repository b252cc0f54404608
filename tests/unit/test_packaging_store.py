"""The packaging objects' types (their status and finalizer writes are kapply.resources.cluster's,
tests/unit/test_cluster_writes.py); and what of a PackageInstall must change for it to be reconciled."""

from __future__ import annotations

from kapply.packaging import names, store
from kapply.packaging.install import install_fingerprint

PATH = "/apis/packaging.kapply.dev/v1alpha1/namespaces/ns/packageinstalls/inst"


def test_the_types_are_kapplys_groups() -> None:
    assert store.INSTALLS.path("ns", "inst") == PATH
    assert store.PACKAGES.api_version == names.DATA_API_VERSION and store.REPOSITORIES.kind == "PackageRepository"


def test_an_install_is_reconciled_when_its_spec_deletion_or_annotations_change() -> None:
    first = install_fingerprint({"metadata": {"generation": 1}})
    assert install_fingerprint({"metadata": {"generation": 1, "labels": {"a": "b"}}}) == first
    assert install_fingerprint({"metadata": {"generation": 2}}) != first
    assert install_fingerprint({"metadata": {"generation": 1, "deletionTimestamp": "now"}}) != first
    annotated = {"metadata": {"generation": 1, "annotations": {names.DOWNGRADABLE_ANNOTATIONS[0]: ""}}}
    assert install_fingerprint(annotated) != first
