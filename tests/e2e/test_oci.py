"""kapply.oci against a real registry: `crane registry serve`, with images, indexes and imgpkg bundles pushed by the
real `crane` (tests/e2e/registry.py), and authentication by a proxy in front of it (crane's registry has none). No
cluster is needed."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from kapply.oci import (
    LINUX_AMD64,
    Credentials,
    Fetched,
    Kind,
    OciError,
    Platform,
    RegistryAuth,
    fetch,
    from_secret,
    parse_reference,
)
from tests.e2e.registry import AuthMode, Registry, auth_proxy, images_lock, tar_of

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TOOLS_SCRIPT = Path(__file__).resolve().parents[2] / "hack" / "tools.py"


def pull(url: str, kind: Kind, destination: Path, **options: Any) -> Fetched:
    destination.mkdir()
    return asyncio.run(fetch(url, kind, destination, plain_http=True, **options))


def files_in(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_the_registry_is_the_crane_release_hack_tools_pins(oci_registry: Registry):
    built = subprocess.run([sys.executable, TOOLS_SCRIPT, "path", "crane"], capture_output=True, text=True, check=False)
    if built.returncode != 0 or Path(built.stdout.strip()) != oci_registry.crane_path:
        pytest.skip(f"crane is {oci_registry.crane_path}, not the one hack/tools.py builds")
    pinned = oci_registry.crane_path.parent.parent.name.removeprefix("crane-")  # <cache>/crane-<version>/bin/crane
    assert oci_registry.crane("version") == pinned  # stamped in: built as a dependency it would say "(devel)"


def test_an_image_is_its_layers_in_order_at_the_digest_crane_pushed(oci_registry: Registry, tmp_path: Path):
    first = tar_of({"a.txt": b"one", "b.txt": b"removed later", "keep/c.yml": b"c: 1\n"}, tmp_path / "1.tar")
    second = tar_of({"a.txt": b"two", ".wh.b.txt": b"", "keep/d.yml": b"d: 2\n"}, tmp_path / "2.tar")
    ref = oci_registry.ref("kapply/layers", "v1")
    digest = oci_registry.push_layers(ref, first, second)

    fetched = pull(ref, Kind.IMAGE, tmp_path / "out")

    assert files_in(tmp_path / "out") == {"a.txt": b"two", "keep/c.yml": b"c: 1\n", "keep/d.yml": b"d: 2\n"}
    assert fetched.reference == parse_reference(f"{oci_registry.host}/kapply/layers@{digest}")
    assert (fetched.kind, fetched.is_bundle, fetched.images_lock) == (Kind.IMAGE, False, None)
    # pinned by digest, the same image again
    assert pull(str(fetched.reference), Kind.IMAGE, tmp_path / "again").reference.digest == digest


def test_a_missing_tag_or_repository_is_a_clear_error_naming_the_reference(oci_registry: Registry, tmp_path: Path):
    oci_registry.push_files(oci_registry.ref("kapply/present", "v1"), {"x": b"x"}, tmp_path / "work")

    missing_tag = oci_registry.ref("kapply/present", "nope")
    with pytest.raises(OciError) as error:
        pull(missing_tag, Kind.IMAGE, tmp_path / "out1")
    assert str(error.value) == f"{missing_tag}: not found (the registry answered 404 MANIFEST_UNKNOWN)"

    missing_repository = oci_registry.ref("kapply/absent", "v1")
    with pytest.raises(OciError, match=rf"^{missing_repository}: not found \(the registry answered 404 NAME_UNKNOWN\)"):
        pull(missing_repository, Kind.IMGPKG_BUNDLE, tmp_path / "out2")


def push_app(registry: Registry, work: Path, name: str) -> str:
    return registry.push_files(registry.ref(f"kapply/apps/{name}", "v1"), {"app": name.encode()}, work)


def test_a_bundle_whose_images_were_not_copied_keeps_its_lock(oci_registry: Registry, tmp_path: Path):
    digest = push_app(oci_registry, tmp_path / "work", "web")
    images = [{"image": f"{oci_registry.host}/kapply/apps/web@{digest}", "annotations": {"kbld.carvel.dev/id": "web"}}]
    ref = oci_registry.ref("kapply/bundles/kept", "v1")
    bundle_digest = oci_registry.push_bundle(ref, {"config/app.yml": b"kind: ConfigMap\n"}, images, tmp_path / "work")

    fetched = pull(ref, Kind.IMGPKG_BUNDLE, tmp_path / "out")

    assert fetched.reference.digest == bundle_digest
    assert fetched.is_bundle and not fetched.relocated
    assert fetched.images_lock is not None
    assert [(i.image, dict(i.annotations)) for i in fetched.images_lock.images] == [
        (images[0]["image"], {"kbld.carvel.dev/id": "web"})
    ]
    assert files_in(tmp_path / "out") == {
        "config/app.yml": b"kind: ConfigMap\n",
        ".imgpkg/images.yml": images_lock(images),  # untouched
    }


def test_a_bundle_copied_with_its_images_gets_its_lock_relocated_to_its_repository(
    oci_registry: Registry, tmp_path: Path
):
    web = push_app(oci_registry, tmp_path / "work", "web2")
    db = push_app(oci_registry, tmp_path / "work", "db2")
    bundle_repo = f"{oci_registry.host}/kapply/bundles/copied"
    # as `imgpkg copy -b ... --to-repo` leaves it: the images sit in the bundle's repository, and the lock still
    # names where they came from (here a registry that does not exist: relocating never asks it)
    for name, digest in (("web2", web), ("db2", db)):
        oci_registry.crane("copy", f"{oci_registry.host}/kapply/apps/{name}@{digest}", f"{bundle_repo}:{name}")
    images = [
        {"image": f"registry.example.invalid/team/web@{web}", "annotations": {"kbld.carvel.dev/id": "web"}},
        {"image": f"registry.example.invalid/team/db@{db}"},
    ]
    ref = f"{bundle_repo}:v1"
    oci_registry.push_bundle(ref, {"config.yml": b"a: 1\n"}, images, tmp_path / "work")

    fetched = pull(ref, Kind.IMGPKG_BUNDLE, tmp_path / "out")

    assert fetched.relocated
    assert fetched.images_lock is not None
    relocated = [(i.image, dict(i.annotations)) for i in fetched.images_lock.images]
    assert relocated == [(f"{bundle_repo}@{web}", {"kbld.carvel.dev/id": "web"}), (f"{bundle_repo}@{db}", {})]
    on_disk = yaml.safe_load((tmp_path / "out" / ".imgpkg" / "images.yml").read_text())
    assert on_disk == {
        "apiVersion": "imgpkg.carvel.dev/v1alpha1",
        "kind": "ImagesLock",
        "images": [
            {"image": f"{bundle_repo}@{web}", "annotations": {"kbld.carvel.dev/id": "web"}},
            {"image": f"{bundle_repo}@{db}"},
        ],
    }


def test_a_bundle_fetched_as_an_image_is_its_files_and_a_plain_image_is_no_bundle(
    oci_registry: Registry, tmp_path: Path
):
    images = [{"image": f"registry.example.invalid/team/web@sha256:{'a' * 64}"}]
    bundle = oci_registry.ref("kapply/bundles/as-image", "v1")
    oci_registry.push_bundle(bundle, {"config.yml": b"a: 1\n"}, images, tmp_path / "work")

    fetched = pull(bundle, Kind.IMAGE, tmp_path / "out")
    assert (fetched.is_bundle, fetched.images_lock, fetched.relocated) == (True, None, False)
    assert files_in(tmp_path / "out") == {"config.yml": b"a: 1\n", ".imgpkg/images.yml": images_lock(images)}

    plain = oci_registry.ref("kapply/plain", "v1")
    oci_registry.push_files(plain, {"config.yml": b"a: 1\n"}, tmp_path / "work")
    with pytest.raises(OciError, match=r"expected an imgpkg bundle, but the image is not one .*fetch it as `image`"):
        pull(plain, Kind.IMGPKG_BUNDLE, tmp_path / "out2")


def test_from_an_index_the_image_of_the_platform_asked_for(oci_registry: Registry, tmp_path: Path):
    digests = {}
    for arch in ("amd64", "arm64"):
        ref = oci_registry.ref("kapply/multi", arch)
        oci_registry.push_files(ref, {"arch": arch.encode()}, tmp_path / "work")
        oci_registry.crane("mutate", ref, "--set-platform", f"linux/{arch}", "-t", ref)
        digests[arch] = oci_registry.digest(ref)
    index = oci_registry.ref("kapply/multi", "index")
    oci_registry.crane(
        "index",
        "append",
        "-m",
        oci_registry.ref("kapply/multi", "amd64"),
        "-m",
        oci_registry.ref("kapply/multi", "arm64"),
        "-t",
        index,
    )

    amd64 = pull(index, Kind.IMAGE, tmp_path / "amd64", platform=LINUX_AMD64)
    assert (amd64.reference.digest, files_in(tmp_path / "amd64")) == (digests["amd64"], {"arch": b"amd64"})
    arm64 = pull(index, Kind.IMAGE, tmp_path / "arm64", platform=Platform("linux", "arm64"))
    assert (arm64.reference.digest, files_in(tmp_path / "arm64")) == (digests["arm64"], {"arch": b"arm64"})

    with pytest.raises(OciError, match=r"has no image for linux/s390x \(platforms: 'linux/amd64', 'linux/arm64'\)"):
        pull(index, Kind.IMAGE, tmp_path / "s390x", platform=Platform("linux", "s390x"))
    with pytest.raises(OciError, match=r"is an image index .* name one of its images by digest"):
        pull(index, Kind.IMAGE, tmp_path / "none")  # kapp-controller's (imgpkg's) rule


# --- authentication -------------------------------------------------------------------------------------------------


def test_basic_auth_is_answered_with_the_credentials_for_the_registry(oci_registry: Registry, tmp_path: Path):
    upstream = oci_registry.ref("kapply/private-basic", "v1")
    oci_registry.push_files(upstream, {"secret.yml": b"a: 1\n"}, tmp_path / "work")
    with auth_proxy(oci_registry, AuthMode.BASIC, "alice", "s3cret") as proxy:
        ref = f"{proxy.host}/kapply/private-basic:v1"
        with pytest.raises(OciError, match=r"the registry requires credentials \(401 Unauthorized\); none were given"):
            pull(ref, Kind.IMAGE, tmp_path / "anonymous")
        wrong = RegistryAuth({proxy.host: Credentials("alice", "wrong")})
        with pytest.raises(OciError, match=rf"refused the credentials given for {proxy.host}") as refused:
            pull(ref, Kind.IMAGE, tmp_path / "wrong", auth=wrong)
        assert "wrong" not in str(refused.value)
        # credentials for another registry are not sent here
        elsewhere = RegistryAuth({"other.example:5000": Credentials("alice", "s3cret")})
        with pytest.raises(OciError, match="none were given"):
            pull(ref, Kind.IMAGE, tmp_path / "elsewhere", auth=elsewhere)

        proxy.seen.clear()
        fetched = pull(
            ref, Kind.IMAGE, tmp_path / "out", auth=RegistryAuth({proxy.host: Credentials("alice", "s3cret")})
        )

    assert files_in(tmp_path / "out") == {"secret.yml": b"a: 1\n"}
    assert fetched.reference.digest == oci_registry.digest(upstream)
    # one challenge, then the answer is reused for the manifest, the config and the layer
    assert [auth for _, auth in proxy.seen] == [None] + [proxy.basic()] * 3


def docker_config_secret(host: str, username: str, password: str) -> dict[str, Any]:
    config = {"auths": {host: {"auth": base64.b64encode(f"{username}:{password}".encode()).decode()}}}
    encoded = base64.b64encode(json.dumps(config).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "registry-credentials"},
        "data": {".dockerconfigjson": encoded},
    }


def test_bearer_tokens_are_fetched_from_the_realm_with_a_dockerconfigjson_secrets_credentials(
    oci_registry: Registry, tmp_path: Path
):
    images = [{"image": f"registry.example.invalid/team/web@sha256:{'b' * 64}"}]
    oci_registry.push_bundle(
        oci_registry.ref("kapply/private-bearer", "v1"), {"c.yml": b"c: 1\n"}, images, tmp_path / "work"
    )
    with auth_proxy(oci_registry, AuthMode.BEARER, "bob", "t0ken-pass") as proxy:
        ref = f"{proxy.host}/kapply/private-bearer:v1"
        with pytest.raises(OciError, match=r"the registry's token service refused anonymous access \(401\)"):
            pull(ref, Kind.IMGPKG_BUNDLE, tmp_path / "anonymous")
        wrong = from_secret(docker_config_secret(proxy.host, "bob", "nope"))
        with pytest.raises(OciError, match=r"the registry's token service refused the credentials given \(401\)"):
            pull(ref, Kind.IMGPKG_BUNDLE, tmp_path / "wrong", auth=wrong)

        proxy.seen.clear()
        proxy.token_requests.clear()
        auth = from_secret(docker_config_secret(f"https://{proxy.host}/v1/", "bob", "t0ken-pass"))
        fetched = pull(ref, Kind.IMGPKG_BUNDLE, tmp_path / "out", auth=auth)

    assert files_in(tmp_path / "out")["c.yml"] == b"c: 1\n"
    assert fetched.images_lock is not None and not fetched.relocated  # its image was looked up, with the token
    assert proxy.token_requests == [
        ({"scope": "repository:kapply/private-bearer:pull", "service": "kapply-test-registry"}, proxy.basic())
    ]
    # the password went to the token service only; the registry saw the challenge, then the token
    authorizations = [auth for _, auth in proxy.seen]
    assert authorizations[0] is None
    assert all(a is not None and a.startswith("Bearer ") for a in authorizations[1:])
    assert len(authorizations) == 5  # challenge, manifest, config, layer, the lock's image looked up


# --- hostile layers -------------------------------------------------------------------------------------------------


def hostile_tar(path: Path, *entries: tuple[str, bytes | None, str, str]) -> Path:
    """Entries (name, type, content, link target), written as given (tarfile keeps absolute names and `..`)."""
    with tarfile.open(path, "w") as tar:
        for name, kind, content, target in entries:
            info = tarfile.TarInfo(name)
            data = content.encode()
            if kind is not None:
                info.type = kind
                info.linkname = target
            else:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if kind is None else None)
    return path


HOSTILE = {
    "parent": ([("../canary", None, "pwned", "")], "entry '../canary' leaves the directory (..)"),
    "absolute": ([("{canary}", None, "pwned", "")], "entry '{canary}' is an absolute path"),
    "symlink-absolute": (
        [("config", tarfile.SYMTYPE, "", "{canary}"), ("config", None, "pwned", "")],
        "entry 'config' is a symlink to an absolute path",
    ),
    "symlink-relative": (
        [("config", tarfile.SYMTYPE, "", "../canary"), ("config", None, "pwned", "")],
        "entry 'config' is a symlink that resolves outside the directory",
    ),
    "hardlink-absolute": (
        [("hl", tarfile.LNKTYPE, "", "{canary}"), ("hl", None, "pwned", "")],
        "entry 'hl' is a hard link whose target is an absolute path",
    ),
    "hardlink-parent": (
        [("hl", tarfile.LNKTYPE, "", "../canary"), ("hl", None, "pwned", "")],
        "entry 'hl' is a hard link whose target leaves the directory (..)",
    ),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_layer_is_refused_and_nothing_outside_is_touched(oci_registry: Registry, tmp_path: Path, case: str):
    canary = tmp_path / "canary"
    canary.write_text("precious")
    entries, message = HOSTILE[case]
    (tmp_path / "work").mkdir()
    filled = [
        (name.format(canary=canary), kind, data, target.format(canary=canary)) for name, kind, data, target in entries
    ]
    layer = hostile_tar(tmp_path / "work" / "hostile.tar", *filled)
    ref = oci_registry.ref("kapply/hostile", case)
    digest = oci_registry.push_layers(ref, layer)

    with pytest.raises(OciError) as refused:
        pull(ref, Kind.IMAGE, tmp_path / "out")

    expected = message.format(canary=canary)
    assert f"{oci_registry.host}/kapply/hostile@{digest}, layer 1/1 (" in str(refused.value)
    assert f"{expected}; refusing the layer" in str(refused.value)
    assert canary.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["canary", "out", "work"]
    assert not any(p.is_symlink() or p.name == "pwned" for p in (tmp_path / "out").rglob("*"))
