"""The controller process fetching `image`, `imgpkgBundle` and `http` sources: images and imgpkg bundles pushed with
the real `crane` to `crane registry serve` (tests/e2e/registry.py), a tag chosen by tagSelection, registry credentials
from a Secret read with the App's own service account (through an authenticating proxy), and files served over http
by a server on 127.0.0.1 (a tarball checked against its sha256, a zip, a plain YAML file). A bundle templated as
kapp-controller's packages are, ytt then the real kbld reading the bundle's `.imgpkg/images.yml`, is deployed with its
image references rewritten to the locked digests. Hostile layers and archives (an entry climbing out with `../`, a
symlink to a canary) and kbld paths leaving the fetch directory end ReconcileFailed naming the entry or path, and the
canary, planted in the controller's own temporary directory where a climbing entry would land, is untouched.

The controllers run with `-n <the test's namespace>` and `--dangerous-allow-plain-http-registries` (the registry
serves plain http on 127.0.0.1). A cluster-wide controller another test module runs at the same time (without the
flag) may reconcile these Apps too and write its own status; so every wait below polls until the expected condition
and message are there, rather than reading the first status written.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import tarfile
import threading
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError, Client
from lightkube.resources.core_v1 import PodTemplate

from tests.e2e.controller_harness import (
    App,
    Controllers,
    condition,
    config_map,
    config_map_data,
    create_all,
    deployer,
    inline_app,
    install_crd,
    status,
    tool_env,
)
from tests.e2e.harness import Cluster, eventually
from tests.e2e.registry import BUNDLE_LABEL, AuthMode, Registry, auth_proxy, images_lock

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

FLAG = "--dangerous-allow-plain-http-registries"


@pytest.fixture(scope="module")
def crd(cluster: Cluster, kube: Client) -> None:
    install_crd(cluster.kubeconfig, kube)


@pytest.fixture
def controller_tmp(tmp_path: Path) -> Path:
    """The controller's TMPDIR: its fetches happen in temporary directories here."""
    (tmp_path / "controller-tmp").mkdir()
    return tmp_path / "controller-tmp"


@pytest.fixture
def controllers(crd: None, cluster: Cluster, kube: Client, namespace: str, tmp_path: Path) -> Iterator[Controllers]:
    (tmp_path / "logs").mkdir()
    running = Controllers(cluster.kubeconfig, kube, namespace, tmp_path / "logs")
    try:
        yield running
    finally:
        running.close()


def serve(controllers: Controllers, controller_tmp: Path, *flags: str, tools: tuple[str, ...] = ("ytt",)) -> None:
    controllers.start("--leader-elect=false", *flags, env={**tool_env(*tools), "TMPDIR": str(controller_tmp)})


def app(name: str, namespace: str, source: dict[str, Any], account: str = "deployer", **spec: Any) -> dict[str, Any]:
    return inline_app(name, namespace, {}, serviceAccountName=account, syncPeriod="1s", fetch=[source], **spec)


def succeeded(kube: Client, namespace: str, *apps: str) -> None:
    for name in apps:
        eventually(
            lambda name=name: condition(kube, namespace, name) == "ReconcileSucceeded",
            timeout=60,
            what=f"App {name} to succeed",
        )


def failed_with(kube: Client, namespace: str, name: str, message: str) -> dict[str, Any]:
    """The App's status once it is ReconcileFailed with `message` in its description (polled: see the docstring)."""

    def failed() -> dict[str, Any] | None:
        reported = status(kube, namespace, name)
        conditions = reported.get("conditions") or [{}]
        if conditions[0].get("type") == "ReconcileFailed" and message in reported.get("friendlyDescription", ""):
            return reported
        return None

    reported = eventually(failed, timeout=60, what=f"App {name} to fail with {message!r}")
    assert isinstance(reported, dict)
    return reported


def assert_locked(kube: Client, namespace: str, name: str, expected: dict[str, Any]) -> None:
    """The App's fetch lock (status.fetch.stdout) comes to name exactly `expected` as its one directory."""

    def directories() -> list[Any] | None:
        text = (status(kube, namespace, name).get("fetch") or {}).get("stdout") or ""
        return (yaml.safe_load(text) or {}).get("directories") if text else None

    eventually(lambda: directories() == [expected], timeout=30, what=f"the lock of {name} to be {expected}")


def cm(name: str, **data: str) -> bytes:
    return config_map(name, **data).encode()


# --- registries -----------------------------------------------------------------------------------------------------


def test_an_image_a_bundle_and_a_tag_selection_are_deployed_and_locked_by_digest(
    controllers: Controllers,
    kube: Client,
    namespace: str,
    oci_registry: Registry,
    tmp_path: Path,
    controller_tmp: Path,
):
    work = tmp_path / "work"
    repository = f"kapply/e2e/{uuid.uuid4().hex[:8]}"
    image_ref = oci_registry.ref(f"{repository}/image", "v1")
    image = oci_registry.push_files(
        image_ref, {"config/cm.yml": cm("from-image", source="image"), "README.md": b"not YAML"}, work
    )
    app_image = oci_registry.push_files(oci_registry.ref(f"{repository}/app", "v1"), {"app": b"app"}, work)
    bundle_ref = oci_registry.ref(f"{repository}/bundle", "v1")
    locked = [{"image": f"{oci_registry.host}/{repository}/app@{app_image}"}]
    bundle = oci_registry.push_bundle(bundle_ref, {"config/cm.yml": cm("from-bundle", source="bundle")}, locked, work)
    tagged = f"{oci_registry.host}/{repository}/tagged"
    digests = {
        version: oci_registry.push_files(f"{tagged}:{version}", {"cm.yml": cm("from-tag", version=version)}, work)
        for version in ("1.0.0", "v1.2.0", "1.3.0-rc.1", "2.0.0", "latest")
    }
    create_all(kube, deployer(namespace))
    kube.create(App(**app("image", namespace, {"image": {"url": image_ref, "subPath": "config"}})))
    bundle_app = app(
        "bundle", namespace, {"imgpkgBundle": {"image": bundle_ref}}, template=[{"ytt": {"paths": ["config"]}}]
    )
    kube.create(App(**bundle_app))
    selection = {"semver": {"constraints": ">=1.0.0 <2.0.0"}}
    kube.create(App(**app("tagged", namespace, {"image": {"url": tagged, "tagSelection": selection}})))
    serve(controllers, controller_tmp, FLAG)

    succeeded(kube, namespace, "image", "bundle", "tagged")
    assert config_map_data(kube, namespace, "from-image") == {"source": "image"}
    assert config_map_data(kube, namespace, "from-bundle") == {"source": "bundle"}
    assert config_map_data(kube, namespace, "from-tag") == {"version": "v1.2.0"}  # the prerelease is left out
    assert_locked(
        kube,
        namespace,
        "image",
        {
            "path": ".",
            "image": {"url": f"{oci_registry.host}/{repository}/image@{image}", "tag": "v1"},
        },
    )
    assert_locked(
        kube,
        namespace,
        "bundle",
        {
            "path": ".",
            "imgpkgBundle": {"image": f"{oci_registry.host}/{repository}/bundle@{bundle}", "tag": "v1"},
        },
    )
    assert_locked(
        kube,
        namespace,
        "tagged",
        {
            "path": ".",
            "image": {"url": f"{tagged}@{digests['v1.2.0']}", "tag": "v1.2.0"},
        },
    )


def test_registry_credentials_come_from_a_secret_the_apps_own_account_reads(
    controllers: Controllers,
    kube: Client,
    namespace: str,
    oci_registry: Registry,
    tmp_path: Path,
    controller_tmp: Path,
):
    repository = f"kapply/e2e/{uuid.uuid4().hex[:8]}/private"
    oci_registry.push_files(oci_registry.ref(repository, "v1"), {"cm.yml": cm("private", source="private")}, tmp_path)
    no_secrets = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]
    create_all(kube, deployer(namespace) + "---\n" + deployer(namespace, "no-secrets", rules=no_secrets))
    create_all(
        kube,
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "pull", "namespace": namespace},
                "stringData": {"username": "puller", "password": "pull-password"},
            }
        ),
    )
    with auth_proxy(oci_registry, AuthMode.BASIC, "puller", "pull-password") as proxy:
        url = f"{proxy.host}/{repository}:v1"
        kube.create(App(**app("private", namespace, {"image": {"url": url, "secretRef": {"name": "pull"}}})))
        kube.create(App(**app("anonymous", namespace, {"image": {"url": url}})))
        secret_ref = {"image": {"url": url, "secretRef": {"name": "pull"}}}
        kube.create(App(**app("forbidden", namespace, secret_ref, account="no-secrets")))
        serve(controllers, controller_tmp, FLAG)

        succeeded(kube, namespace, "private")
        assert config_map_data(kube, namespace, "private") == {"source": "private"}
        assert (f"/v2/{repository}/manifests/v1", proxy.basic()) in proxy.seen  # the Secret's credentials
        failed_with(kube, namespace, "anonymous", "the registry requires credentials (401 Unauthorized)")
        reported = failed_with(kube, namespace, "forbidden", 'secrets "pull" is forbidden')
        assert f"system:serviceaccount:{namespace}:no-secrets" in reported["usefulErrorMessage"], reported
    for name in ("private", "anonymous", "forbidden"):
        assert "pull-password" not in yaml.safe_dump(status(kube, namespace, name))


def test_without_the_flag_a_registry_is_reached_over_https_only(
    controllers: Controllers,
    kube: Client,
    namespace: str,
    oci_registry: Registry,
    tmp_path: Path,
    controller_tmp: Path,
):
    ref = oci_registry.ref(f"kapply/e2e/{uuid.uuid4().hex[:8]}/plain", "v1")
    oci_registry.push_files(ref, {"cm.yml": cm("plain", a="b")}, tmp_path / "work")
    create_all(kube, deployer(namespace))
    kube.create(App(**app("plain", namespace, {"image": {"url": ref}})))
    serve(controllers, controller_tmp)

    failed_with(kube, namespace, "plain", f"Fetching resources: Fetching image: {ref}: cannot reach 127.0.0.1")
    assert config_map_data(kube, namespace, "plain") is None


# --- http -----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Files:
    """A directory served over http on 127.0.0.1."""

    directory: Path
    host: str

    def put(self, name: str, content: bytes) -> str:
        (self.directory / name).write_bytes(content)
        return f"http://{self.host}/{name}"


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass


@pytest.fixture
def files(tmp_path: Path) -> Iterator[Files]:
    directory = tmp_path / "served"
    directory.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(directory)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="http-files", daemon=True)
    thread.start()
    try:
        yield Files(directory, f"127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def tarball(members: dict[str, bytes | str]) -> bytes:
    """A gzipped tar of files (name -> bytes) and symlinks (name -> target)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, value in members.items():
            info = tarfile.TarInfo(name)
            if isinstance(value, str):
                info.type, info.linkname = tarfile.SYMTYPE, value
                tar.addfile(info)
            else:
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value))
    return buffer.getvalue()


def zipped(members: dict[str, bytes | str]) -> bytes:
    """A zip of files (name -> bytes) and symlinks (name -> target: a unix mode in the external attributes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in members.items():
            info = zipfile.ZipInfo(name)
            if isinstance(value, str):
                info.external_attr = 0o120777 << 16  # S_IFLNK | 0o777
                archive.writestr(info, value.encode())
            else:
                archive.writestr(info, value)
    return buffer.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_an_http_tarball_a_zip_and_a_plain_file_are_deployed_and_a_wrong_sha256_fails(
    controllers: Controllers, kube: Client, namespace: str, files: Files, controller_tmp: Path
):
    archive = tarball({"config/cm.yml": cm("from-tgz", source="tgz"), "other/cm.yml": cm("not-deployed", a="b")})
    tgz = files.put("app.tgz", archive)
    zip_url = files.put("app.zip", zipped({"config/cm.yml": cm("from-zip", source="zip")}))
    plain = files.put("cm.yml", cm("from-file", source="file"))
    create_all(kube, deployer(namespace))
    kube.create(App(**app("tgz", namespace, {"http": {"url": tgz, "sha256": sha256(archive), "subPath": "config"}})))
    wrong = "0" * 64
    kube.create(App(**app("wrong-sha", namespace, {"http": {"url": tgz, "sha256": wrong}})))
    kube.create(App(**app("zip", namespace, {"http": {"url": zip_url, "subPath": "config"}})))
    kube.create(App(**app("plain", namespace, {"http": {"url": plain}})))
    serve(controllers, controller_tmp)  # no flag needed: http sources may use http URLs

    succeeded(kube, namespace, "tgz", "zip", "plain")
    assert config_map_data(kube, namespace, "from-tgz") == {"source": "tgz"}
    assert config_map_data(kube, namespace, "not-deployed") is None  # outside the subPath
    assert config_map_data(kube, namespace, "from-zip") == {"source": "zip"}
    assert config_map_data(kube, namespace, "from-file") == {"source": "file"}
    assert_locked(kube, namespace, "tgz", {"path": ".", "http": {"url": tgz, "sha256": sha256(archive)}})
    reported = failed_with(
        kube,
        namespace,
        "wrong-sha",
        f"Fetching resources: Fetching http {tgz}: Downloading URL: Expected digest to match 'sha256:{wrong}', "
        f"but was 'sha256:{sha256(archive)}'",
    )
    assert reported["fetch"]["exitCode"] != 0, reported


# --- kbld: a bundle's images by their locked digests -------------------------------------------------------------


def pod_template(name: str, *images: str) -> bytes:
    """A PodTemplate (kapp waits for nothing on it) whose containers run `images`."""
    containers = [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]
    document = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name}}
    return yaml.safe_dump({**document, "template": {"spec": {"containers": containers}}}).encode()


def deployed_images(kube: Client, namespace: str, name: str) -> list[str]:
    found = kube.get(PodTemplate, name, namespace=namespace).template
    assert found is not None and found.spec is not None
    return [container.image or "" for container in found.spec.containers]


KBLD_TEMPLATE = [{"ytt": {"paths": ["config"]}}, {"kbld": {"paths": ["-", ".imgpkg/images.yml"]}}]


def test_kbld_rewrites_a_bundles_images_to_the_digests_its_lock_names(
    controllers: Controllers,
    kube: Client,
    namespace: str,
    oci_registry: Registry,
    tmp_path: Path,
    controller_tmp: Path,
):
    """As a Carvel package's App: the bundle's configuration names `example.com/app:v1` (a registry never asked: the
    lock names its digest, relocated to the test's registry); an image the lock does not name is resolved from its
    registry by kbld, as kapp-controller's kbld does."""
    work = tmp_path / "work"
    repository = f"{oci_registry.host}/kapply/e2e/{uuid.uuid4().hex[:8]}"
    app_digest = oci_registry.push_files(f"{repository}/app:v1", {"app": b"app"}, work)
    sidecar_digest = oci_registry.push_files(f"{repository}/sidecar:v2", {"sidecar": b"sidecar"}, work)
    locked = [{"image": f"{repository}/app@{app_digest}", "annotations": {"kbld.carvel.dev/id": "example.com/app:v1"}}]
    config = {"config/pod.yml": pod_template("web", "example.com/app:v1", f"{repository}/sidecar:v2")}
    oci_registry.push_bundle(f"{repository}/bundle:v1", config, locked, work)
    create_all(kube, deployer(namespace))
    source = {"imgpkgBundle": {"image": f"{repository}/bundle:v1"}}
    kube.create(App(**app("packaged", namespace, source, template=KBLD_TEMPLATE)))
    serve(controllers, controller_tmp, FLAG, tools=("ytt", "kbld"))

    succeeded(kube, namespace, "packaged")
    assert deployed_images(kube, namespace, "web") == [
        f"{repository}/app@{app_digest}",
        f"{repository}/sidecar@{sidecar_digest}",
    ]


def test_kbld_paths_leaving_the_fetch_directory_are_refused_and_the_canary_stays_unread(
    controllers: Controllers,
    kube: Client,
    namespace: str,
    oci_registry: Registry,
    tmp_path: Path,
    controller_tmp: Path,
):
    """kbld reads ImagesLocks and its own configuration from every path it is given: one leading out of the fetch
    directory (`..`, a bundle's lock that is a symlink) would let an App's author feed it the controller's files; an
    absolute path is read within the fetched content, as kapp-controller reads it. The canary is an ImagesLock the
    test plants; had kbld read it, its digest would be deployed. A file kbld fails on fails the App as any template
    step does, kbld's own words in usefulErrorMessage."""
    token = f"sha256:{uuid.uuid4().hex * 2}"
    canary = controller_tmp / "canary.yml"
    canary.write_bytes(
        images_lock(
            [{"image": f"stolen.example/app@{token}", "annotations": {"kbld.carvel.dev/id": "example.com/app:v1"}}]
        )
    )
    repository = f"{oci_registry.host}/kapply/e2e/{uuid.uuid4().hex[:8]}"
    config = {"config/pod.yml": pod_template("web", "example.com/app:v1")}
    oci_registry.push_bundle(f"{repository}/bundle:v1", {**config, "extra/bad.yml": b"a: ["}, [], tmp_path / "work")
    linked = tmp_path / "linked.tar"
    linked.write_bytes(tarball({"config/pod.yml": config["config/pod.yml"], ".imgpkg/images.yml": str(canary)}))
    oci_registry.push_layers(f"{repository}/linked:v1", linked)
    oci_registry.crane(
        "mutate", f"{repository}/linked:v1", "--label", f"{BUNDLE_LABEL}=true", "-t", f"{repository}/linked:v1"
    )
    create_all(kube, deployer(namespace))
    bundle = {"imgpkgBundle": {"image": f"{repository}/bundle:v1"}}
    attacks = {
        "climb": (bundle, ["-", "../canary.yml"], "Templating dir: Invalid path: ../canary.yml"),
        # an absolute path names a file of the fetched content, as kapp-controller reads it: not there, kbld fails
        "absolute": (bundle, ["-", str(canary)], "Templating dir: kbld failed (exit status 1)"),
        "linked": (
            {"imgpkgBundle": {"image": f"{repository}/linked:v1"}},
            ["-", ".imgpkg/images.yml"],
            "entry '.imgpkg/images.yml' is a symlink to an absolute path",
        ),
        "not-yaml": (bundle, ["-", "extra/bad.yml"], "Templating dir: kbld failed (exit status 1)"),
    }
    for name, (source, paths, _) in attacks.items():
        template = [{"ytt": {"paths": ["config"]}}, {"kbld": {"paths": paths}}]
        kube.create(App(**app(name, namespace, source, template=template)))
    serve(controllers, controller_tmp, FLAG, tools=("ytt", "kbld"))

    for name, (_, _, message) in attacks.items():
        reported = failed_with(kube, namespace, name, message)
        assert token not in yaml.safe_dump(reported)
    assert "kbld: Error:" in failed_with(kube, namespace, "not-yaml", "kbld failed")["usefulErrorMessage"]
    missing = failed_with(kube, namespace, "absolute", "kbld failed")["usefulErrorMessage"]
    assert f"{canary}: no such file or directory" in missing and f" {canary}:" not in missing  # looked for inside
    with pytest.raises(ApiError):
        kube.get(PodTemplate, "web", namespace=namespace)
    for log in controllers.logs_by_name.values():
        assert token not in log.read_text()


# --- hostile layers and archives --------------------------------------------------------------------------------------


def test_hostile_layers_and_archives_fail_naming_the_entry_and_the_canary_stays_whole(
    controllers: Controllers,
    kube: Client,
    namespace: str,
    oci_registry: Registry,
    files: Files,
    tmp_path: Path,
    controller_tmp: Path,
):
    # The canary sits where a `../` entry would land: an image is unpacked at the root of a temporary directory of
    # the controller's TMPDIR, an http archive one level deeper. Following the symlinks would deploy its ConfigMap.
    token = f"CANARY-{uuid.uuid4()}"
    canary = controller_tmp / "canary"
    original = cm("stolen", token=token)
    canary.write_bytes(original)
    repository = f"{oci_registry.host}/kapply/e2e/{uuid.uuid4().hex[:8]}"
    layer = tmp_path / "climb.tar"
    layer.write_bytes(tarball({"cm.yml": cm("climb", a="b"), "../canary": b"overwritten"}))
    oci_registry.push_layers(f"{repository}/climb:v1", layer)
    linked = tmp_path / "link.tar"
    linked.write_bytes(tarball({"cm.yml": str(canary)}))
    oci_registry.push_layers(f"{repository}/link:v1", linked)
    climbing_tgz = files.put("climb.tgz", tarball({"cm.yml": cm("climb", a="b"), "../../canary": b"overwritten"}))
    linking_zip = files.put("link.zip", zipped({"cm.yml": "../../canary"}))
    create_all(kube, deployer(namespace))
    attacks = {
        "image-climb": ({"image": {"url": f"{repository}/climb:v1"}}, "entry '../canary' leaves the directory (..)"),
        "image-link": ({"image": {"url": f"{repository}/link:v1"}}, "entry 'cm.yml' is a symlink to an absolute path"),
        "http-climb": ({"http": {"url": climbing_tgz}}, "entry '../../canary' leaves the directory (..)"),
        "http-link": ({"http": {"url": linking_zip}}, "entry 'cm.yml' is a symlink that resolves outside"),
    }
    for name, (source, _) in attacks.items():
        kube.create(App(**app(name, namespace, source)))
    serve(controllers, controller_tmp, FLAG)

    for name, (_, entry) in attacks.items():
        reported = failed_with(kube, namespace, name, entry)
        assert "Fetching resources: " in reported["friendlyDescription"], reported
        assert token not in yaml.safe_dump(reported)
    assert canary.read_bytes() == original
    assert config_map_data(kube, namespace, "stolen") is None
    assert config_map_data(kube, namespace, "climb") is None
    for log in controllers.logs_by_name.values():
        assert token not in log.read_text()
    assert base64.b64encode(token.encode()).decode() not in yaml.safe_dump(
        [status(kube, namespace, n) for n in attacks]
    )
