"""kapply.oci.imgpkg builds an imgpkg bundle whose uncompressed layer is byte for byte imgpkg's, and kapply.oci.push
finds where to upload a blob."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from kapply.oci import OciError, parse_reference
from kapply.oci.imgpkg import BUNDLE_LABEL, Entry, build, entries_from, layer_tar
from kapply.oci.push import tagged, upload_path

CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\ndata:\n  a: b\n"
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: 127.0.0.1:5111/imgs/app:1
"""
LOCK = """---
apiVersion: imgpkg.carvel.dev/v1alpha1
images:
- annotations:
    kbld.carvel.dev/id: 127.0.0.1:5111/imgs/app:1
    kbld.carvel.dev/origins: |
      - resolved:
          tag: "1"
          url: 127.0.0.1:5111/imgs/app:1
  image: 127.0.0.1:5111/imgs/app@sha256:40066bba5849cd5f37472bf24f609e0671731a3f4378fb0f6c282fd60ab52f2a
kind: ImagesLock
"""
# what `imgpkg push -b ... -f DIR` (imgpkg 0.46.1, run by kctrl 0.53's `package release`) gave for these files: the
# sha256 of its layer, uncompressed (the config's diff_id)
IMGPKG_DIFF_ID = "sha256:e09d60976a5fce2480e9afb206bf756fe2c2fb09e815306fe6ad6a35e11db03b"


def _entries() -> list[Entry]:
    return [
        Entry("config/deploy.yml", DEPLOYMENT.encode()),
        Entry(".imgpkg/images.yml", LOCK.encode()),
        Entry("config/cm.yml", CONFIG_MAP.encode()),
    ]


def test_the_layer_is_imgpkgs_byte_for_byte() -> None:
    bundle = build(_entries())
    layer, config = bundle.blobs
    tar = gzip.decompress(layer.data)
    assert "sha256:" + hashlib.sha256(tar).hexdigest() == IMGPKG_DIFF_ID
    assert json.loads(config.data)["rootfs"] == {"type": "layers", "diff_ids": [IMGPKG_DIFF_ID]}


def test_the_layer_is_laid_out_as_go_writes_it() -> None:
    tar = layer_tar(_walked())
    members = _members(tar)
    assert [(m.name, oct(m.mode), m.mtime, m.uid, m.uname) for m in members] == [
        (".", "0o700", 0, 0, ""),
        (".imgpkg", "0o700", 0, 0, ""),
        (".imgpkg/images.yml", "0o600", 0, 0, ""),
        ("config", "0o700", 0, 0, ""),
        ("config/cm.yml", "0o600", 0, 0, ""),
        ("config/deploy.yml", "0o600", 0, 0, ""),
    ]
    assert tar[:100].rstrip(b"\0") == b"."  # no trailing slash on a directory's name
    assert tar.endswith(b"\0" * 1024) and len(tar) % 512 == 0
    assert len(tar) == 512 * (6 + 3 + 2)  # headers, one block of content per file, the two end blocks


def _members(tar: bytes) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(tar)) as opened:
        return opened.getmembers()


def _walked() -> list[Entry]:
    from kapply.oci.imgpkg import _with_parents

    return _with_parents(_entries())


def test_the_bundle_is_labelled_and_lists_its_files_as_imgpkg_does() -> None:
    bundle = build(_entries())
    manifest = json.loads(bundle.manifest)
    layer, config = bundle.blobs
    assert manifest == {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "size": len(config.data),
            "digest": config.digest,
        },
        "layers": [
            {
                "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                "size": len(layer.data),
                "digest": layer.digest,
            }
        ],
    }
    assert json.loads(config.data)["config"] == {"Labels": {BUNDLE_LABEL: "true"}}
    assert bundle.listing == (
        "dir: .",
        "dir: .imgpkg",
        "file: .imgpkg/images.yml",
        "dir: config",
        "file: config/cm.yml",
        "file: config/deploy.yml",
    )
    assert build(reversed(_entries())).manifest == bundle.manifest, "the order given does not matter"


def test_a_long_path_is_split_into_the_ustar_prefix() -> None:
    path = "/".join(["d" * 60] * 3) + "/file.yml"
    members = _members(layer_tar(_with_parents_of(Entry(path, b"x"))))
    assert members[-1].name == path
    with pytest.raises(OciError, match="too long"):
        layer_tar([Entry("x" * 300, b"x")])


def _with_parents_of(*entries: Entry) -> list[Entry]:
    from kapply.oci.imgpkg import _with_parents

    return _with_parents(entries)


@pytest.mark.parametrize("path", ["", "/abs", "a/../b", "./a", "a//b"])
def test_paths_outside_the_bundle_are_refused(path: str) -> None:
    with pytest.raises(OciError, match="not a relative path within the bundle"):
        build([Entry(path, b"x")])


def test_a_path_cannot_be_a_file_and_a_directory() -> None:
    with pytest.raises(OciError, match="both a file and a directory"):
        build([Entry("a", b"x"), Entry("a/b", b"y")])
    with pytest.raises(OciError, match="both a file and a directory"):
        build([Entry("a/b", b"y"), Entry("a", b"x")])


def test_entries_are_read_from_directories_and_files(tmp_path: Path) -> None:
    (tmp_path / "config" / "sub").mkdir(parents=True)
    (tmp_path / "config" / "sub" / "b.yml").write_text("b")
    (tmp_path / "config" / "a.yml").write_text("a")
    (tmp_path / "top.yml").write_text("t")
    assert entries_from(tmp_path, ["config", "top.yml"]) == [
        Entry("config"),
        Entry("config/a.yml", b"a"),
        Entry("config/sub"),
        Entry("config/sub/b.yml", b"b"),
        Entry("top.yml", b"t"),
    ]


def test_symlinks_and_paths_leaving_the_directory_are_refused(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    canary.write_text("secret")
    root = tmp_path / "root"
    (root / "config").mkdir(parents=True)
    os.symlink(canary, root / "config" / "link.yml")
    with pytest.raises(OciError, match="is a symlink"):
        entries_from(root, ["config"])
    for outside in ("../canary", str(canary)):
        with pytest.raises(OciError, match="is not within"):
            entries_from(root, [outside])
    with pytest.raises(OciError, match="Reading 'missing'"):
        entries_from(root, ["missing"])


def test_an_upload_location_must_stay_in_the_repository() -> None:
    ref = tagged(parse_reference("127.0.0.1:5000/team/bundle"), "1.0.0")
    assert str(ref) == "127.0.0.1:5000/team/bundle:1.0.0"
    assert upload_path(ref, "/v2/team/bundle/blobs/uploads/abc?_state=x%2Fy", True) == "blobs/uploads/abc?_state=x%2Fy"
    assert upload_path(ref, "http://127.0.0.1:5000/v2/team/bundle/blobs/uploads/abc", True) == "blobs/uploads/abc"
    for elsewhere in (
        "http://other:5000/v2/team/bundle/blobs/uploads/abc",
        "https://127.0.0.1:5000/v2/team/bundle/blobs/uploads/abc",
    ):
        with pytest.raises(OciError, match="another host or scheme"):
            upload_path(ref, elsewhere, True)
    with pytest.raises(OciError, match="outside the repository"):
        upload_path(ref, "/v2/team/other/blobs/uploads/abc", True)
