"""A repository's content made into the Packages and PackageMetadatas it deploys, as kapp-controller makes them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from kapply.packaging import names
from kapply.packaging.repository_content import (
    INVALID_CONTENT,
    ContentError,
    check_layout,
    is_repository_kind,
    plain_documents,
    read_documents,
    repository_object,
    repository_objects,
    resolve_images,
)
from tests.e2e.harness import external_tool

CARVEL = "data.packaging.carvel.dev/v1alpha1"


def package(**spec: Any) -> dict[str, Any]:
    version = spec.pop("version", "1.0.0")
    return {
        "apiVersion": CARVEL,
        "kind": "Package",
        "metadata": {"name": f"pkg.test.carvel.dev.{version}", "namespace": "elsewhere"},
        "spec": {"refName": "pkg.test.carvel.dev", "version": version, **spec},
    }


def test_the_content_must_have_a_packages_directory(tmp_path: Path) -> None:
    with pytest.raises(ContentError) as e:
        check_layout(tmp_path)
    assert str(e.value) == INVALID_CONTENT and e.value.exit_code == -1
    (tmp_path / "packages").write_text("a file")
    with pytest.raises(ContentError):
        check_layout(tmp_path)


def test_a_symlinked_packages_directory_does_not_count(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "packages").symlink_to("real")
    with pytest.raises(ContentError, match="must contain 'packages/' directory"):
        check_layout(tmp_path)


def test_plain_yaml_is_read_from_every_yaml_file_in_path_order(tmp_path: Path) -> None:
    (tmp_path / "b" / "c").mkdir(parents=True)
    (tmp_path / "b" / "c" / "z.yaml").write_text("k: 2\n---\nk: 3\n")
    (tmp_path / "a.yml").write_text("# a plain comment\nk: 1\n")
    (tmp_path / "notes.txt").write_text("k: 9\n")
    assert plain_documents(tmp_path) == [{"k": 1}, {"k": 2}, {"k": 3}]


def test_a_file_that_is_not_yaml_says_where(tmp_path: Path) -> None:
    (tmp_path / "bad.yml").write_text("a: [\n")
    with pytest.raises(ContentError, match=r"Templating dir: .*packages/bad.yml"):
        plain_documents(tmp_path)


def test_without_ytt_the_files_are_read_as_plain_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "packages").mkdir()
    (tmp_path / "packages" / "p.yml").write_text(yaml.safe_dump(package()))
    monkeypatch.delenv("KAPPLY_YTT", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert asyncio.run(read_documents(tmp_path, tmp_path / "packages")) == [package()]


def test_a_ytt_that_is_named_but_missing_is_an_error_not_plain_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "packages").mkdir()
    monkeypatch.setenv("KAPPLY_YTT", str(tmp_path / "no-ytt"))
    with pytest.raises(ContentError, match=r"Templating dir: ytt is not available: \$KAPPLY_YTT names"):
        asyncio.run(read_documents(tmp_path, tmp_path / "packages"))


def test_with_ytt_repository_files_are_templates_and_plain_comments_are_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAPPLY_YTT", str(external_tool("ytt", "KAPPLY_YTT")))
    (tmp_path / "packages").mkdir()
    (tmp_path / "packages" / "p.yml").write_text(
        '#@ load("@ytt:data", "data")\n# a plain comment\n---\nversion: #@ "1." + "2.3"\n'
    )
    assert asyncio.run(read_documents(tmp_path, tmp_path / "packages")) == [{"version": "1.2.3"}]
    (tmp_path / "packages" / "p.yml").write_text("foo: #@ data.values.nothere\n")
    with pytest.raises(ContentError) as e:
        asyncio.run(read_documents(tmp_path, tmp_path / "packages"))
    assert e.value.exit_code == 1 and "undefined: data" in e.value.stderr


def test_only_packages_and_package_metadatas_of_the_data_groups_are_kept() -> None:
    kept = [package(), {**package(), "apiVersion": names.DATA_API_VERSION}]
    dropped = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
        {**package(), "apiVersion": "data.packaging.carvel.dev/v1alpha2"},
        {**package(), "kind": "PackageInstall"},
        "a string",
        None,
    ]
    assert [is_repository_kind(d) for d in kept + dropped] == [True, True, False, False, False, False, False]
    assert len(repository_objects(kept + dropped, "ns", "repo", names.DATA_API_VERSION)) == 2


def test_a_package_is_written_under_kapplys_group_in_the_repositorys_namespace_with_the_owner_annotation() -> None:
    doc = package(template={"spec": {"fetch": [{"inline": {}}]}})
    doc["metadata"]["annotations"] = {"keep": "me", names.REPOSITORY_REF_ANNOTATION: "someone/else"}
    obj = repository_object(doc, "ns", "repo", names.DATA_API_VERSION)
    assert obj == {
        "apiVersion": names.DATA_API_VERSION,
        "kind": "Package",
        "metadata": {
            "name": "pkg.test.carvel.dev.1.0.0",
            "annotations": {
                "keep": "me",
                names.REPOSITORY_REF_ANNOTATION: "ns/repo",
                "kapp.k14s.io/disable-original": "",
                "kapp.k14s.io/disable-wait": "",
                "kapp.k14s.io/create-strategy": "fallback-on-update-or-noop",
            },
        },
        "spec": {
            "refName": "pkg.test.carvel.dev",
            "version": "1.0.0",
            "template": {"spec": {"fetch": [{"inline": {}}]}},
        },
    }


def test_a_package_with_build_metadata_gets_kapplys_name() -> None:
    obj = repository_object(package(version="1.0.0-RC.1+Build.5"), "ns", "repo", names.DATA_API_VERSION)
    assert obj["metadata"]["name"] == "pkg.test.carvel.dev.1.0.0-rc.1.build.5"
    assert obj["spec"]["version"] == "1.0.0-RC.1+Build.5"


def test_a_package_with_another_name_keeps_it_for_the_api_server_to_refuse() -> None:
    doc = package()
    doc["metadata"]["name"] = "wrong"
    assert repository_object(doc, "ns", "repo", names.DATA_API_VERSION)["metadata"]["name"] == "wrong"


def test_fields_the_types_do_not_know_are_dropped_and_app_specs_kept_whole() -> None:
    doc = package(
        unknown=1,
        includedSoftware=[{"displayName": "x", "extra": True}],
        template={"spec": {"anything": {"goes": 1}}, "other": 2},
        valuesSchema={"openAPIv3": {"properties": {}}, "x": 1},
    )
    doc["metadata"]["generateName"] = "dropped"
    obj = repository_object(doc, "ns", "repo", names.DATA_API_VERSION)
    assert obj["spec"] == {
        "refName": "pkg.test.carvel.dev",
        "version": "1.0.0",
        "includedSoftware": [{"displayName": "x"}],
        "template": {"spec": {"anything": {"goes": 1}}},
        "valuesSchema": {"openAPIv3": {"properties": {}}},
    }
    assert set(obj["metadata"]) == {"name", "annotations"}
    metadata = {
        "apiVersion": CARVEL,
        "kind": "PackageMetadata",
        "metadata": {"name": "pkg.test.carvel.dev"},
        "spec": {"displayName": "D", "maintainers": [{"name": "a", "email": "b"}], "x": 1},
    }
    assert repository_object(metadata, "ns", "repo", names.DATA_API_VERSION)["spec"] == {
        "displayName": "D",
        "maintainers": [{"name": "a"}],
    }


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (package(version=1), "Deserializing resource: Expected spec.version to be a string, got int"),
        ({**package(), "metadata": "x"}, "Deserializing resource: Expected metadata to be a map, got str"),
        (
            {**package(), "metadata": {"name": "a", "labels": {"a": 1}}},
            "Deserializing resource: Expected metadata.labels to be a map of strings",
        ),
    ],
)
def test_a_field_of_the_wrong_type_fails_as_deserializing(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ContentError) as e:
        repository_object(doc, "ns", "repo", names.DATA_API_VERSION)
    assert str(e.value) == message


# --- an imgpkgBundle's ImagesLock, through kbld -----------------------------------------------------------------------

DIGEST = "sha256:" + "ab" * 32


def bundle_package(image: str) -> dict[str, Any]:
    doc = package(template={"spec": {"fetch": [{"imgpkgBundle": {"image": image}}]}})
    return repository_objects([doc], "ns", "repo", names.DATA_API_VERSION)[0]


def lock(root: Path, *images: tuple[str, str]) -> None:
    """`.imgpkg/images.yml` locking each (kbld id, digest reference)."""
    entries = [{"image": image, "annotations": {"kbld.carvel.dev/id": ref}} for ref, image in images]
    (root / ".imgpkg").mkdir(exist_ok=True)
    (root / ".imgpkg" / "images.yml").write_text(
        yaml.safe_dump({"apiVersion": "imgpkg.carvel.dev/v1alpha1", "kind": "ImagesLock", "images": entries})
    )


def fetched_image(obj: dict[str, Any]) -> str:
    return obj["spec"]["template"]["spec"]["fetch"][0]["imgpkgBundle"]["image"]


def test_kbld_rewrites_a_packages_bundle_to_the_digest_its_lock_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAPPLY_KBLD", str(external_tool("kbld", "KAPPLY_KBLD")))
    locked = f"registry.example/relocated/pkg@{DIGEST}"
    lock(tmp_path, ("example.com/pkg:1.0.0", locked))
    pinned = f"elsewhere.example/other@{DIGEST}"  # a digest reference is kept (kbld asks no registry for it)
    resolved = asyncio.run(resolve_images([bundle_package("example.com/pkg:1.0.0"), bundle_package(pinned)], tmp_path))
    assert [fetched_image(obj) for obj in resolved] == [locked, pinned]
    assert resolved[0]["metadata"]["name"] == names.package_name("pkg.test.carvel.dev", "1.0.0")
    assert locked in resolved[0]["metadata"]["annotations"]["kbld.k14s.io/images"]
    assert resolved[0]["metadata"]["annotations"][names.REPOSITORY_REF_ANNOTATION] == "ns/repo"


def test_a_kbld_failure_is_a_template_failure_with_what_kbld_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAPPLY_KBLD", str(external_tool("kbld", "KAPPLY_KBLD")))
    (tmp_path / ".imgpkg").mkdir()
    (tmp_path / ".imgpkg" / "images.yml").write_text("images: [\n")
    with pytest.raises(ContentError, match=r"^Templating dir: kbld failed \(exit status 1\)") as e:
        asyncio.run(resolve_images([bundle_package(f"registry.example/pkg@{DIGEST}")], tmp_path))
    assert e.value.exit_code == 1 and "kbld: Error" in e.value.stderr


def test_a_symlinked_lock_leading_outside_is_refused_before_kbld_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = tmp_path / "kbld-ran"
    script = tmp_path / "fake-kbld"
    script.write_text(f"#!/bin/sh\ntouch {ran}\n")
    script.chmod(0o755)
    monkeypatch.setenv("KAPPLY_KBLD", str(script))
    (tmp_path / "secret.yml").write_text("password: hunter2\n")
    root = tmp_path / "root"
    (root / ".imgpkg").mkdir(parents=True)
    (root / ".imgpkg" / "images.yml").symlink_to(tmp_path / "secret.yml")
    with pytest.raises(ContentError) as e:
        asyncio.run(resolve_images([bundle_package("example.com/pkg:1.0.0")], root))
    assert str(e.value) == (
        "Templating dir: Invalid path: .imgpkg/images.yml (a symlink on it leads outside the fetch directory)"
    )
    assert "hunter2" not in str(e.value) + e.value.stderr and not ran.exists()


def test_without_kbld_the_references_are_kept_and_a_named_missing_kbld_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objs = [bundle_package("example.com/pkg:1.0.0")]
    monkeypatch.delenv("KAPPLY_KBLD", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert asyncio.run(resolve_images(objs, tmp_path)) == objs
    monkeypatch.setenv("KAPPLY_KBLD", str(tmp_path / "no-kbld"))
    with pytest.raises(ContentError, match=r"Templating dir: kbld is not available: \$KAPPLY_KBLD names"):
        asyncio.run(resolve_images(objs, tmp_path))
