"""`kapply package`, one test per command, against the real cluster and a real packaging controller (limited to this
module's namespace; a real OCI registry for repository bundles): what each command writes, what it prints (kctrl's
messages, tables and `--json` row keys), its waiting, its confirmation and its errors (exit 1, `kapply: Error: ...`).
The command tree itself (every flag, shorthand and default) is checked by tests/unit/test_package_commands.py."""

from __future__ import annotations

import base64
import functools
import io
import subprocess
import tarfile
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import ConfigMap, Namespace, Secret, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding
from lightkube.types import PatchType

from kapply.packaging import names
from kapply.ui.packages import truncated
from tests.e2e.controller_harness import App, config_map_data, deployer
from tests.e2e.controller_harness import create_all as create_objects
from tests.e2e.harness import Cluster, KapplyRunner, eventually
from tests.e2e.package_cli_harness import (
    REF,
    Pushed,
    package_cli_controller,
    package_document,
    push_simple_app,
)
from tests.e2e.packaging_harness import (
    Package,
    PackageInstall,
    PackageRepository,
    Running,
    condition,
    create,
    get,
    package_names,
    status,
)
from tests.e2e.registry import Registry

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
CM_REF = "cm.test.carvel.dev"
BARE_REF = "bare.test.carvel.dev"  # a values schema without properties
TOKEN_CACHE_TTL = 10.0  # seconds kube-apiserver keeps a token's successful authentication
SHARED_REFUSAL = (
    "kapply: Error: Creating sensitive resources in a shared namespace (default) (hint: Specify a namespace"
)


@pytest.fixture(scope="module")
def namespace(kube: Client) -> Iterator[str]:
    """One namespace for the module's commands (and its controller); each test uses names of its own."""
    name = f"t-package-cli-{uuid.uuid4().hex[:5]}"
    kube.create(Namespace.from_dict({"metadata": {"name": name}}))
    yield name
    kube.delete(Namespace, name)


@pytest.fixture(scope="module")
def running(
    cluster: Cluster, kube: Client, namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Running]:
    with package_cli_controller(cluster, kube, namespace, tmp_path_factory.mktemp("package-cli")) as process:
        create(kube, namespace, cm_package("1.0.0"), cm_package("2.0.0"), cm_metadata())
        yield process


@pytest.fixture(scope="module")
def pushed(oci_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Pushed:
    return push_simple_app(oci_registry, tmp_path_factory.mktemp("package-cli-bundles"))


def cm_package(version: str) -> dict[str, Any]:
    """A Package deploying, through ytt, a ConfigMap named by the data value `name` saying the version and the data
    value `hello_msg`."""
    files = {
        "values.yml": "#@data/values\n---\nname: cm\nhello_msg: stranger\n",
        "cm.yml": (
            '#@ load("@ytt:data", "data")\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n'
            f"  name: #@ data.values.name\ndata:\n  version: {version}\n  hello_msg: #@ data.values.hello_msg\n"
        ),
    }
    schema = {
        "openAPIv3": {
            "properties": {
                "name": {"type": "string", "default": "cm", "description": "Name of the ConfigMap"},
                "hello_msg": {"type": "string", "default": "stranger", "description": "Hello message"},
            }
        }
    }
    return {
        "apiVersion": names.DATA_API_VERSION,
        "kind": "Package",
        "metadata": {"name": names.package_name(CM_REF, version)},
        "spec": {
            "refName": CM_REF,
            "version": version,
            "releaseNotes": f"cm {version}",
            "licenses": ["Apache 2.0"],
            "valuesSchema": schema,
            "template": {
                "spec": {
                    "fetch": [{"inline": {"paths": files}}],
                    "template": [{"ytt": {}}],
                    "deploy": [{"kapp": {"rawOptions": ["--wait-check-interval=0.5s"]}}],
                }
            },
        },
    }


def cm_metadata() -> dict[str, Any]:
    return {
        "apiVersion": names.DATA_API_VERSION,
        "kind": "PackageMetadata",
        "metadata": {"name": CM_REF},
        "spec": {"displayName": "ConfigMap", "shortDescription": "A ConfigMap", "categories": ["demo"]},
    }


def ok(result: subprocess.CompletedProcess[str]) -> str:
    """The stdout of a command that must have succeeded."""
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def refused(result: subprocess.CompletedProcess[str], message: str) -> None:
    """The command failed with exit 1 and kapply's error line."""
    assert result.returncode == 1, result.stdout + result.stderr
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def values_file(path: Path, **values: str) -> str:
    path.write_text(yaml.safe_dump(values))
    return str(path)


def install(kapply: KapplyRunner, namespace: str, name: str, *args: str) -> str:
    return ok(
        kapply("package", "install", "-i", name, "-p", CM_REF, "-n", namespace, "--wait-check-interval=0.5s", *args)
    )


def secret_data(kube: Client, namespace: str, name: str) -> dict[str, str]:
    secret = kube.get(Secret, name, namespace=namespace)
    return {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}


def exists(kube: Client, kind: type, name: str, namespace: str | None = None) -> bool:
    try:
        kube.get(kind, name, namespace=namespace) if namespace else kube.get(kind, name)
    except ApiError as e:
        if e.status.code == 404:
            return False
        raise
    return True


# --- package repository -----------------------------------------------------------------------------------------------


def test_repository_add(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, pushed: Pushed) -> None:
    url = pushed.repository("add-1.0.0", package_document("1.0.0", pushed.app_image))
    dry_run = ("package", "repository", "add", "-r", "added", "--url", url, "-n", namespace, "--dry-run")
    dry = ok(kapply(*dry_run, "--tty=false"))  # the YAML alone, without kctrl's `Succeeded`
    assert yaml.safe_load(dry) == {
        "apiVersion": "packaging.kapply.dev/v1alpha1",
        "kind": "PackageRepository",
        "metadata": {"name": "added", "namespace": namespace, "creationTimestamp": None},  # as kctrl prints it
        "spec": {"fetch": {"imgpkgBundle": {"image": url}}},
        "status": {"conditions": None, "friendlyDescription": "", "observedGeneration": 0},
    }
    assert get(kube, PackageRepository, namespace, "added") is None, "a dry run creates nothing"

    out = ok(kapply("package", "repository", "add", "-r", "added", "--url", url, "-n", namespace))
    assert f"Creating package repository resource 'added' in namespace '{namespace}'" in out
    assert "Waiting for package repository to be added" in out
    assert "Fetch succeeded" in out and "Deploy succeeded" in out
    assert out.rstrip().endswith("Succeeded")
    assert condition(kube, PackageRepository, namespace, "added") == "ReconcileSucceeded", "waited for"
    assert f"{REF}.1.0.0" in package_names(kube, namespace)

    # adding it again changes nothing and returns at once, telling the last reconcile again (as kctrl tails it)
    again = ok(kapply("package", "repository", "add", "-r", "added", "--url", url, "-n", namespace))
    assert "Updating package repository resource" not in again
    for line in ("Fetch succeeded", "Template succeeded", "Deploy succeeded"):
        assert line in again, again

    refused(kapply("package", "repository", "add", "-r", "x", "--url", url, "-n", "default"), SHARED_REFUSAL)
    refused(
        kapply("package", "repository", "add", "-r", "x", "-n", namespace),
        "kapply: Error: Expected package repository url to be non-empty",
    )
    refused(
        kapply("package", "repository", "add", "--url", url, "-n", namespace),
        "kapply: Error: Expected package repository name to be non-empty",
    )

    created = f"t-package-cli-new-{uuid.uuid4().hex[:5]}"
    try:
        out = ok(
            kapply(
                "package",
                "repository",
                "add",
                "-r",
                "elsewhere",
                "--url",
                url,
                "-n",
                created,
                "--create-namespace",
                "--wait=false",
            )
        )
        assert f"Creating namespace '{created}'" in out
        assert get(kube, PackageRepository, created, "elsewhere") is not None
    finally:
        if exists(kube, Namespace, created):
            kube.delete(PackageRepository, "elsewhere", namespace=created)
            kube.delete(Namespace, created)


def test_repository_add_takes_git_and_http_urls(
    running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path
) -> None:
    """kapply's: the fetch kind read from the URL (a `.git` repository, an http archive)."""
    package = yaml.safe_dump(
        {
            "apiVersion": "data.packaging.carvel.dev/v1alpha1",
            "kind": "Package",
            "metadata": {"name": "git.test.carvel.dev.3.0.0"},
            "spec": {"refName": "git.test.carvel.dev", "version": "3.0.0", "template": {"spec": {}}},
        }
    )
    repo = tmp_path / "packages.git"
    (repo / "packages").mkdir(parents=True)
    (repo / "packages" / "git.yml").write_text(package)
    git = ["git", "-c", "user.name=kapply", "-c", "user.email=kapply@example.com"]
    for args in (["init", "-q", "--initial-branch=main"], ["add", "-A"], ["commit", "-q", "-m", "packages"]):
        subprocess.run([*git, *args], cwd=repo, check=True)
    ok(kapply("package", "repository", "add", "-r", "from-git", "--url", f"file://{repo}", "-n", namespace))
    fetched = (get(kube, PackageRepository, namespace, "from-git") or {})["spec"]["fetch"]
    assert fetched == {"git": {"url": f"file://{repo}"}}
    assert "git.test.carvel.dev.3.0.0" in package_names(kube, namespace)

    served = tmp_path / "served"
    served.mkdir()
    with tarfile.open(served / "repo.tgz", "w:gz") as tar:
        content = package.replace("git.test", "http.test").encode()
        info = tarfile.TarInfo("packages/http.yml")
        info.size = len(content)
        tar.addfile(info, io.BytesIO(content))
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(served))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/repo.tgz"
        ok(kapply("package", "repository", "add", "-r", "from-http", "--url", url, "-n", namespace))
    finally:
        server.shutdown()
        thread.join()
    assert (get(kube, PackageRepository, namespace, "from-http") or {})["spec"]["fetch"] == {"http": {"url": url}}
    assert "http.test.carvel.dev.3.0.0" in package_names(kube, namespace)
    listed = kapply.json("package", "repository", "list", "-n", namespace).table()
    sources = {row["name"]: row["source"] for row in listed.rows}
    assert sources["from-git"] == truncated(f"(git) file://{repo}", 60), "as kctrl cuts sources"
    assert sources["from-http"] == f"(http) {url}"
    # any other URL is an OCI reference, read as kctrl reads one (test_repository_update fetches one)
    page = ["package", "repository", "add", "-r", "x", "--url", "https://example.com/page", "--dry-run", "--tty=false"]
    dry = ok(kapply(*page, "-n", namespace))
    assert yaml.safe_load(dry)["spec"]["fetch"] == {
        "imgpkgBundle": {"image": "https://example.com/page", "tagSelection": {"semver": {}}}
    }


def test_repository_update(
    running: Running, kube: Client, kapply: KapplyRunner, namespace: str, pushed: Pushed
) -> None:
    first = pushed.repository("update-1.0.0", package_document("1.0.0", pushed.app_image))
    ok(kapply("package", "repository", "add", "-r", "updated", "--url", first, "-n", namespace))
    generation = (get(kube, PackageRepository, namespace, "updated") or {})["metadata"]["generation"]
    second = pushed.repository("update-2.0.0", package_document("2.0.0", pushed.app_image))
    out = ok(kapply("package", "repository", "update", "-r", "updated", "--url", second, "-n", namespace))
    assert f"Updating package repository resource 'updated' in namespace '{namespace}'" in out
    assert "Waiting for package repository reconciliation for 'updated'" in out
    assert "Waiting for package repository to be updated" not in out, "kctrl 0.53 has no such line"
    repository = get(kube, PackageRepository, namespace, "updated") or {}
    assert repository["spec"]["fetch"] == {"imgpkgBundle": {"image": second}}
    assert repository["metadata"]["generation"] == generation + 1
    assert repository["status"]["observedGeneration"] == generation + 1, "waited for the new generation"
    assert f"{REF}.2.0.0" in package_names(kube, namespace)
    refused(
        kapply("package", "repository", "update", "-r", "nowhere", "--url", second, "-n", namespace),
        f"kapply: Error: Repository 'nowhere' does not exist in namespace '{namespace}'",
    )
    # an unchanged repository: its last reconcile told again, without waiting (as kctrl tails it)
    same = ok(kapply("package", "repository", "update", "-r", "updated", "--url", second, "-n", namespace))
    for line in ("Fetch started", "Fetch succeeded", "Template succeeded", "Deploy started", "Deploy succeeded"):
        assert line in same, same
    assert "Waiting for package repository reconciliation" not in same

    # kctrl's weak reference parsing takes `https://carvel.dev`: the repository is made, its fetch fails, and an
    # update mends it
    weak = kapply("package", "repository", "add", "-r", "weak", "--url", "https://carvel.dev", "-n", namespace)
    refused(weak, "kapply: Error: Reconciling repository:")
    assert "Invalid image reference 'https://carvel.dev'" in weak.stderr and "Fetch failed" in weak.stdout, weak
    fetch = (get(kube, PackageRepository, namespace, "weak") or {})["spec"]["fetch"]
    assert fetch == {"imgpkgBundle": {"image": "https://carvel.dev", "tagSelection": {"semver": {}}}}
    ok(kapply("package", "repository", "update", "-r", "weak", "--url", second, "-n", namespace))
    assert condition(kube, PackageRepository, namespace, "weak") == "ReconcileSucceeded"


def test_repository_list(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, pushed: Pushed) -> None:
    url = pushed.repository("list-1.0.0", package_document("1.0.0", pushed.app_image))
    ok(kapply("package", "repository", "add", "-r", "listed", "--url", url, "-n", namespace))
    source = truncated(f"(imgpkg) {url}", 60)
    rows = kapply.json("package", "repository", "ls", "-n", namespace).table().rows
    assert {"name": "listed", "source": source, "status": "Reconcile succeeded"} in rows
    every = kapply.json("package", "repo", "l", "-A").table().rows
    assert {
        "namespace": namespace,
        "name": "listed",
        "source": source,
        "status": "Reconcile succeeded",
    } in every
    text = ok(kapply("package", "repository", "list", "-n", namespace, "--tty"))
    assert f"Repositories in namespace '{namespace}'" in text and "Name  " in text


def test_repository_get(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, pushed: Pushed) -> None:
    url = pushed.repository("get-1.0.0", package_document("1.0.0", pushed.app_image))
    ok(kapply("package", "repository", "add", "-r", "got", "--url", url, "-n", namespace))
    row = kapply.json("package", "r", "g", "-r", "got", "-n", namespace).table().rows[0]
    assert row == {
        "namespace": namespace,
        "name": "got",
        "source": f"(imgpkg) {url}",
        "status": "Reconcile succeeded",
        "conditions": '- type: ReconcileSucceeded\n  status: "True"\n  reason: ""\n  message: ""',
        "useful_error_message": "",
    }
    refused(
        kapply("package", "repository", "get", "-r", "nowhere", "-n", namespace),
        f"kapply: Error: Repository 'nowhere' does not exist in namespace '{namespace}'",
    )


def test_repository_kick(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, pushed: Pushed) -> None:
    url = pushed.repository("kick-1.0.0", package_document("1.0.0", pushed.app_image))
    ok(kapply("package", "repository", "add", "-r", "kicked", "--url", url, "-n", namespace))
    generation = (get(kube, PackageRepository, namespace, "kicked") or {})["metadata"]["generation"]
    out = ok(kapply("package", "repository", "kick", "-r", "kicked", "-n", namespace, "-y"))
    assert f"Triggering reconciliation for package repository 'kicked' in namespace '{namespace}'" in out
    repository = get(kube, PackageRepository, namespace, "kicked") or {}
    assert repository["metadata"]["generation"] == generation + 2, "paused and resumed"
    assert "paused" not in repository["spec"]
    assert repository["status"]["observedGeneration"] == generation + 2
    assert condition(kube, PackageRepository, namespace, "kicked") == "ReconcileSucceeded"
    refused(
        kapply("package", "repository", "kick", "-r", "nowhere", "-n", namespace, "-y"),
        f"kapply: Error: Repository 'nowhere' does not exist in namespace '{namespace}'",
    )


def test_repository_delete(
    running: Running, kube: Client, kapply: KapplyRunner, namespace: str, pushed: Pushed
) -> None:
    package = package_document("9.0.0", pushed.app_image)
    url = pushed.repository("delete-9.0.0", package)
    ok(kapply("package", "repository", "add", "-r", "deleted", "--url", url, "-n", namespace))
    assert f"{REF}.9.0.0" in package_names(kube, namespace)
    stopped = kapply("package", "repository", "delete", "-r", "deleted", "-n", namespace, input="n\n")
    refused(stopped, "kapply: Error: Stopped")
    assert "Continue? [yN]:" in stopped.stdout
    assert get(kube, PackageRepository, namespace, "deleted") is not None, "not confirmed: kept"
    out = ok(kapply("package", "repository", "delete", "-r", "deleted", "-n", namespace, input="y\n"))
    assert f"Deleting package repository 'deleted' in namespace '{namespace}'" in out
    assert "DeletionSucceeded" in out
    assert get(kube, PackageRepository, namespace, "deleted") is None, "waited until gone"
    assert f"{REF}.9.0.0" not in package_names(kube, namespace), "its packages went with it"


# --- package available ------------------------------------------------------------------------------------------------


def test_available_list(running: Running, kapply: KapplyRunner, namespace: str) -> None:
    summary = kapply.json("package", "available", "list", "-n", namespace).table().rows
    assert {"name": CM_REF, "display_name": "ConfigMap"} in summary
    wide = kapply.json("package", "a", "ls", "-n", namespace, "--wide").table().rows
    assert {"name": CM_REF, "display_name": "ConfigMap", "short_description": "A ConfigMap"} in wide
    versions = kapply.json("package", "available", "list", "-p", CM_REF, "-n", namespace).table().rows
    assert versions == [
        {"name": CM_REF, "version": "1.0.0", "released_at": "-"},
        {"name": CM_REF, "version": "2.0.0", "released_at": "-"},
    ]
    every = kapply.json("package", "available", "list", "--summary=false", "-A").table().rows
    assert {"namespace": namespace, "name": CM_REF, "version": "2.0.0", "released_at": "-"} in every
    # --column names a column kctrl hides (Namespace without -A); unknown names are all named, in order
    named = kapply.json("package", "available", "list", "-n", namespace, "--column=name,namespace").table().rows
    assert {"name": CM_REF, "namespace": namespace} in named
    unknown = kapply("package", "available", "list", "-n", namespace, "--column=name,invalid,namespace,ns")
    refused(unknown, "kapply: Error: invalid column names: invalid,ns")
    text = ok(kapply("package", "available", "list", "-n", namespace, "--summary=false", "--tty"))
    assert f"Available packages in namespace '{namespace}'" in text


def test_available_get(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path) -> None:
    shown = kapply.json("package", "available", "get", "-p", CM_REF, "-n", namespace)
    details, versions = shown.tables
    assert details.rows[0]["name"] == CM_REF and details.rows[0]["display_name"] == "ConfigMap"
    assert details.rows[0]["categories"] == "- demo"
    assert [r["version"] for r in versions.rows] == ["1.0.0", "2.0.0"]
    one = kapply.json("package", "a", "g", "-p", f"{CM_REF}/2.0.0", "-n", namespace).table().rows[0]
    assert (one["version"], one["release_notes"], one["licenses"]) == ("2.0.0", "cm 2.0.0", "Apache 2.0")
    schema = kapply.json("package", "available", "get", "-p", f"{CM_REF}/1.0.0", "--values-schema", "-n", namespace)
    assert schema.table().rows == [
        {"key": "hello_msg", "default": "stranger", "type": "string", "description": "Hello message"},
        {"key": "name", "default": "cm", "type": "string", "description": "Name of the ConfigMap"},
    ]
    defaults = tmp_path / "defaults.yml"
    saved = kapply(
        "package",
        "available",
        "get",
        "-p",
        f"{CM_REF}/1.0.0",
        "--default-values-file-output",
        str(defaults),
        "-n",
        namespace,
        "--tty",
    )
    assert f"Created default values file at {defaults}" in ok(saved)
    assert defaults.read_text() == "# hello_msg: stranger\n# name: cm\n"
    bare = {**cm_package("1.0.0"), "metadata": {"name": names.package_name(BARE_REF, "1.0.0")}}
    bare["spec"] = {**bare["spec"], "refName": BARE_REF, "valuesSchema": {"openAPIv3": {"title": "No properties"}}}
    create(kube, namespace, bare)
    bare_get = ("package", "available", "get", "-p", f"{BARE_REF}/1.0.0", "-n", namespace)
    refused(kapply(*bare_get, "--values-schema"), "(hint: the valuesSchema might not have any properties)")
    none = tmp_path / "none.yml"
    told = kapply(*bare_get, "--default-values-file-output", str(none), "--tty")
    no_values = f"Package '{BARE_REF}/1.0.0' does not have any user configurable values"
    assert f"{no_values} in the '{namespace}' namespace" in told.stderr and "Release notes" in ok(told)
    assert not none.exists()
    refused(
        kapply("package", "available", "get", "-p", CM_REF, "--values-schema", "-n", namespace),
        "kapply: Error: Package version is required when --values-schema flag is declared",
    )
    refused(
        kapply("package", "available", "get", "-p", "nothing.corp.com", "-n", namespace),
        f"kapply: Error: Package 'nothing.corp.com' not found in namespace '{namespace}'",
    )
    refused(
        kapply("package", "available", "get", "-p", f"{CM_REF}/7.0.0", "-n", namespace),
        f"kapply: Error: Package '{CM_REF}/7.0.0' not found in namespace '{namespace}'",
    )


# --- package install and installed ------------------------------------------------------------------------------------


def test_install(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path) -> None:
    values = values_file(tmp_path / "values.yml", name="installed-cm", hello_msg="hi")
    dry_run = ("package", "install", "-i", "installed", "-p", CM_REF, "-n", namespace, "--values-file", values)
    dry = ok(kapply(*dry_run, "--dry-run", "--tty=false"))  # the YAML alone, without kctrl's `Succeeded`
    assert [d["kind"] for d in yaml.safe_load_all(dry)] == [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Secret",
        "PackageInstall",
    ]
    assert get(kube, PackageInstall, namespace, "installed") is None, "a dry run creates nothing"

    out = install(kapply, namespace, "installed", "--version", "1.0.0", "--values-file", values)
    owner = f"installed-{namespace}"
    for line in (
        f"Creating service account '{owner}-sa'",
        f"Creating cluster admin role '{owner}-cluster-role'",
        f"Creating cluster role binding '{owner}-cluster-rolebinding'",
        f"Creating secret '{owner}-values'",
        "Creating package install resource",
        "Waiting for PackageInstall reconciliation for 'installed'",
        "Deploy succeeded",
    ):
        assert line in out, out
    assert "ReconcileSucceeded" not in out, "kctrl says the install's condition only when tailing its App failed"
    assert out.rstrip().endswith("Succeeded")
    assert config_map_data(kube, namespace, "installed-cm") == {"version": "1.0.0", "hello_msg": "hi"}
    assert secret_data(kube, namespace, f"{owner}-values") == {"values.yaml": "hello_msg: hi\nname: installed-cm\n"}
    account = kube.get(ServiceAccount, f"{owner}-sa", namespace=namespace)
    assert account.metadata.annotations["packaging.carvel.dev/package"] == owner
    role = kube.get(ClusterRole, f"{owner}-cluster-role")
    assert role.rules[0].verbs == ["*"] and role.metadata.annotations["tkg.tanzu.vmware.com/tanzu-package"] == owner
    assert kube.get(ClusterRoleBinding, f"{owner}-cluster-rolebinding").subjects[0].name == f"{owner}-sa"
    pkgi = get(kube, PackageInstall, namespace, "installed") or {}
    assert pkgi["spec"]["serviceAccountName"] == f"{owner}-sa"
    assert pkgi["spec"]["packageRef"] == {
        "refName": CM_REF,
        "versionSelection": {"constraints": "1.0.0", "prereleases": {}},
    }
    assert pkgi["metadata"]["annotations"]["packaging.carvel.dev/package-Secret"] == f"{owner}-values"

    # with an existing service account: nothing else made, the account used
    create_objects(kube, deployer(namespace, "existing-sa"))
    values = values_file(tmp_path / "other.yml", name="other-cm")
    out = install(kapply, namespace, "other", "--service-account-name", "existing-sa", "--values-file", values)
    assert "Creating service account" not in out
    assert (get(kube, PackageInstall, namespace, "other") or {})["spec"]["serviceAccountName"] == "existing-sa"
    assert config_map_data(kube, namespace, "other-cm") == {"version": "2.0.0", "hello_msg": "stranger"}, "the highest"
    assert "Version constraint defaulted to '>= 0.0.0'" in out

    refused(kapply("package", "install", "-i", "x", "-p", CM_REF, "-n", "default"), SHARED_REFUSAL)
    refused(
        kapply("package", "install", "-i", "x", "-n", namespace), "kapply: Error: Expected package name to be non empty"
    )
    refused(
        kapply("package", "install", "-i", "x", "-p", CM_REF, "-n", namespace, "--service-account-name", "nobody"),
        f"kapply: Error: Finding service account 'nobody' in namespace '{namespace}'",
    )


def test_installed_create(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path) -> None:
    """`installed create` is `install`; a failing package fails the command with the install's error."""
    values = values_file(tmp_path / "values.yml", name="created-cm")
    out = ok(
        kapply(
            "package",
            "installed",
            "create",
            "-i",
            "created",
            "-p",
            CM_REF,
            "-v",
            "1.0.0",
            "--values-file",
            values,
            "-n",
            namespace,
        )
    )
    assert "Deploy succeeded" in out
    assert config_map_data(kube, namespace, "created-cm") == {"version": "1.0.0", "hello_msg": "stranger"}
    failing = kapply(
        "package", "i", "create", "-i", "failing", "-p", CM_REF, "-v", "9.9.9", "-n", namespace, "--wait-timeout=60s"
    )
    refused(
        failing,
        f"kapply: Error: packageinstall/failing (packaging.kapply.dev/v1alpha1) namespace: {namespace}: Reconciling: ",
    )


def test_installed_update(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path) -> None:
    install(
        kapply,
        namespace,
        "updated",
        "-v",
        "1.0.0",
        "--values-file",
        values_file(tmp_path / "v1.yml", name="updated-cm"),
    )
    owner = f"updated-{namespace}"
    generation = (get(kube, PackageInstall, namespace, "updated") or {})["metadata"]["generation"]
    values = values_file(tmp_path / "v2.yml", name="updated-cm", hello_msg="updated")
    out = ok(kapply("package", "installed", "update", "-i", "updated", "--values-file", values, "-n", namespace))
    for line in (
        f"Pausing reconciliation for package installation 'updated' in namespace '{namespace}'",
        f"Updating secret '{owner}-values'",
        f"Resuming reconciliation for package installation 'updated' in namespace '{namespace}'",
        "Waiting for PackageInstall reconciliation for 'updated'",
    ):
        assert line in out, out
    assert config_map_data(kube, namespace, "updated-cm") == {"version": "1.0.0", "hello_msg": "updated"}, "waited for"
    pkgi = get(kube, PackageInstall, namespace, "updated") or {}
    assert pkgi["metadata"]["generation"] == generation + 2 and "paused" not in pkgi["spec"]

    out = ok(
        kapply("package", "installed", "update", "-i", "updated", "-p", CM_REF, "--version", "2.0.0", "-n", namespace)
    )
    assert f"Updating package install for 'updated' in namespace '{namespace}'" in out and "Pausing" not in out
    assert status(kube, PackageInstall, namespace, "updated")["version"] == "2.0.0"
    assert config_map_data(kube, namespace, "updated-cm") == {"version": "2.0.0", "hello_msg": "updated"}

    same = ok(kapply("package", "installed", "update", "-i", "updated", "--version", "2.0.0", "-n", namespace))
    assert f"No changes to package install 'updated' in namespace '{namespace}'" in same

    # --values=false drops the values Secret install made, and its reference
    ok(kapply("package", "installed", "update", "-i", "updated", "--values=false", "-n", namespace))
    pkgi = get(kube, PackageInstall, namespace, "updated") or {}
    assert "values" not in pkgi["spec"] and "packaging.carvel.dev/package-Secret" not in pkgi["metadata"]["annotations"]
    assert not exists(kube, Secret, f"{owner}-values", namespace)

    refused(
        kapply("package", "installed", "update", "-i", "updated", "-n", namespace),
        "kapply: Error: Expected either package version, values file or overlays to update the package",
    )
    refused(
        kapply(
            "package", "installed", "update", "-i", "updated", "-p", "other.corp.com", "-v", "1.0.0", "-n", namespace
        ),
        f"kapply: Error: Installed package 'updated' is already associated with package '{CM_REF}'",
    )
    refused(
        kapply("package", "installed", "update", "-i", "nowhere", "-v", "1.0.0", "-n", namespace),
        f"kapply: Error: Package install 'nowhere' does not exist in namespace '{namespace}'",
    )


def test_installed_list(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path) -> None:
    install(
        kapply, namespace, "listed", "-v", "1.0.0", "--values-file", values_file(tmp_path / "v.yml", name="listed-cm")
    )
    rows = kapply.json("package", "installed", "list", "-n", namespace).table().rows
    assert {
        "name": "listed",
        "package_name": CM_REF,
        "package_version": "1.0.0",
        "status": "Reconcile succeeded",
    } in rows
    wide = kapply.json("package", "i", "ls", "-A", "--wide").table().rows
    found = next(r for r in wide if r["name"] == "listed" and r["namespace"] == namespace)
    assert set(found) == {"namespace", "name", "package_name", "package_version", "status", "message"}
    text = ok(kapply("package", "installed", "list", "-n", namespace, "--tty"))
    assert f"Installed packages in namespace '{namespace}'" in text and "Package Version" in text


def test_installed_get(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path) -> None:
    install(kapply, namespace, "got", "-v", "1.0.0", "--values-file", values_file(tmp_path / "v.yml", name="got-cm"))
    row = kapply.json("package", "installed", "get", "-i", "got", "-n", namespace).table().rows[0]
    assert row == {
        "namespace": namespace,
        "name": "got",
        "package_name": CM_REF,
        "package_version": "1.0.0",
        "status": "Reconcile succeeded",
        "conditions": '- type: ReconcileSucceeded\n  status: "True"\n  reason: ""\n  message: ""',
    }
    shown = kapply.json("package", "i", "g", "-i", "got", "-n", namespace, "--values")
    assert shown.blocks == ["name: got-cm\n"]
    saved = tmp_path / "saved.yml"
    ok(kapply("package", "installed", "get", "-i", "got", "-n", namespace, "--values-file-output", str(saved)))
    assert saved.read_text() == "name: got-cm\n"
    refused(
        kapply(
            "package",
            "installed",
            "get",
            "-i",
            "got",
            "-n",
            namespace,
            "--ghost-diffs-overlay-output",
            str(tmp_path / "g.yml"),
        ),
        "kapply: Error: Package install 'got' has no ghost diffs with a suggested overlay",
    )
    refused(
        kapply("package", "installed", "get", "-i", "nowhere", "-n", namespace),
        f"kapply: Error: Package install 'nowhere' does not exist in namespace '{namespace}'",
    )


def test_installed_pause(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path) -> None:
    install(
        kapply, namespace, "paused", "-v", "1.0.0", "--values-file", values_file(tmp_path / "v.yml", name="paused-cm")
    )
    out = ok(kapply("package", "installed", "pause", "-i", "paused", "-n", namespace, "-y"))
    assert f"Pausing reconciliation for package install 'paused' in namespace '{namespace}'" in out
    assert (get(kube, PackageInstall, namespace, "paused") or {})["spec"]["paused"] is True
    eventually(
        lambda: (get(kube, App, namespace, "paused") or {})["spec"].get("paused"), timeout=30, what="the App paused"
    )
    rows = kapply.json("package", "installed", "list", "-n", namespace).table().rows
    assert next(r for r in rows if r["name"] == "paused")["status"] == "Paused"


def test_installed_kick(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path) -> None:
    install(
        kapply, namespace, "kicked", "-v", "1.0.0", "--values-file", values_file(tmp_path / "v.yml", name="kicked-cm")
    )
    generation = (get(kube, PackageInstall, namespace, "kicked") or {})["metadata"]["generation"]
    kube.delete(ConfigMap, "kicked-cm", namespace=namespace)
    out = ok(
        kapply("package", "installed", "kick", "-i", "kicked", "-n", namespace, "-y", "--wait-check-interval=0.5s")
    )
    assert f"Triggering reconciliation for package install 'kicked' in namespace '{namespace}'" in out
    assert f"Starting reconciliation for package install 'kicked' in namespace '{namespace}'" in out
    pkgi = get(kube, PackageInstall, namespace, "kicked") or {}
    assert pkgi["metadata"]["generation"] == generation + 2 and "paused" not in pkgi["spec"]
    assert config_map_data(kube, namespace, "kicked-cm") is not None, "reconciled again"


def test_installed_status(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path) -> None:
    install(
        kapply, namespace, "watched", "-v", "1.0.0", "--values-file", values_file(tmp_path / "v.yml", name="watched-cm")
    )
    out = ok(kapply("package", "installed", "status", "-i", "watched", "-n", namespace))
    assert "Name       watched" in out and f"Namespace  {namespace}" in out and "Reconcile succeeded" in out
    assert "Fetch succeeded" in out and "Deploy succeeded" in out
    refused(
        kapply("package", "installed", "s", "-i", "nowhere", "-n", namespace),
        f"kapply: Error: Could not find app associated with package install 'nowhere' in namespace '{namespace}'",
    )


def test_installed_delete(running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path) -> None:
    install(
        kapply, namespace, "deleted", "-v", "1.0.0", "--values-file", values_file(tmp_path / "v.yml", name="deleted-cm")
    )
    overlay = tmp_path / "overlay.yml"
    overlay.write_text(
        '#@ load("@ytt:overlay", "overlay")\n'
        '#@overlay/match by=overlay.subset({"kind": "ConfigMap"})\n'
        "---\n"
        "data:\n"
        "  #@overlay/match missing_ok=True\n"
        '  overlaid: "yes"\n'
    )
    ok(kapply("package", "installed", "update", "-i", "deleted", "--ytt-overlay-file", str(overlay), "-n", namespace))
    assert config_map_data(kube, namespace, "deleted-cm") == {
        "version": "1.0.0",
        "hello_msg": "stranger",
        "overlaid": "yes",
    }
    owner = f"deleted-{namespace}"
    stopped = kapply("package", "installed", "delete", "-i", "deleted", "-n", namespace, input="no\n")
    refused(stopped, "kapply: Error: Stopped")
    out = ok(kapply("package", "installed", "delete", "-i", "deleted", "-n", namespace, "-y"))
    assert f"Deleting package install 'deleted' from namespace '{namespace}'" in out
    assert "DeletionSucceeded" in out
    for kind, name in (
        ("ServiceAccount", f"{owner}-sa"),
        ("ClusterRole", f"{owner}-cluster-role"),
        ("ClusterRoleBinding", f"{owner}-cluster-rolebinding"),
        ("Secret", f"{owner}-values"),
    ):
        assert f"Deleting '{kind}': {name}" in out, out
    assert f"{owner}-overlays" not in out, "kctrl deletes the overlays Secret quietly"
    assert get(kube, PackageInstall, namespace, "deleted") is None
    assert config_map_data(kube, namespace, "deleted-cm") is None, "what it deployed went with it"
    assert not exists(kube, ServiceAccount, f"{owner}-sa", namespace)
    assert not exists(kube, ClusterRole, f"{owner}-cluster-role")
    assert not exists(kube, ClusterRoleBinding, f"{owner}-cluster-rolebinding")
    assert not exists(kube, Secret, f"{owner}-overlays", namespace)

    # without the install: what `install` would have named, if it is the install's, as kctrl names it
    leftover = {"metadata": {"name": f"{owner}-overlays", "annotations": {"packaging.carvel.dev/package": owner}}}
    kube.create(Secret.from_dict(leftover), namespace=namespace)
    out = ok(kapply("package", "installed", "delete", "-i", "deleted", "-n", namespace, "-y"))
    assert f"Could not find package install 'deleted' in namespace '{namespace}'. Cleaning up created resources." in out
    assert f"Deleting 'secrets': {owner}-overlays" in out, out
    assert not exists(kube, Secret, f"{owner}-overlays", namespace)

    # --noop: the install goes, what it deployed stays
    install(kapply, namespace, "kept", "-v", "1.0.0", "--values-file", values_file(tmp_path / "k.yml", name="kept-cm"))
    ok(kapply("package", "installed", "delete", "-i", "kept", "-n", namespace, "-y", "--noop"))
    assert get(kube, PackageInstall, namespace, "kept") is None
    assert config_map_data(kube, namespace, "kept-cm") == {"version": "1.0.0", "hello_msg": "stranger"}
    assert not exists(kube, ClusterRole, f"kept-{namespace}-cluster-role")


def test_install_again_under_the_same_name_and_update_a_version_that_left(
    running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path
) -> None:
    """Two of kctrl's behaviours scripts rely on (issue 31). `installed delete` deletes the service account `install`
    made, and `install` makes it anew under the same name: another account (its uid), whose first deploy must not
    use the deleted account's token, which the API server refuses once its token cache forgot it (kapp-controller
    keys its tokens by uid too). And `installed update` of an install whose version left the repositories: the
    install fails (`Expected to find at least one version`) before pausing its App, so the update stops waiting for
    the pause, sets the new version and succeeds. (The second runs while the first waits for the API server.)"""
    values = values_file(tmp_path / "again.yml", name="again-cm")
    install(kapply, namespace, "again", "-v", "1.0.0", "--values-file", values)
    ok(kapply("package", "installed", "delete", "-i", "again", "-n", namespace, "-y", "--wait-check-interval=0.5s"))
    deleted = time.monotonic()

    ref = "left.test.carvel.dev"
    create(kube, namespace, *(renamed(cm_package(version), ref) for version in ("1.0.0", "2.0.0")))
    left = values_file(tmp_path / "left.yml", name="left-cm")
    install_left = ["package", "install", "-i", "left", "-p", ref, "-v", "1.0.0", "--values-file", left]
    ok(kapply(*install_left, "-n", namespace, "--wait-check-interval=0.5s"))
    kube.delete(Package, names.package_name(ref, "1.0.0"), namespace=namespace)
    eventually(
        lambda: "Expected to find at least one version" in str(status(kube, PackageInstall, namespace, "left")),
        timeout=30,
        what="the install to say its version is gone",
    )
    update = ["package", "installed", "update", "-i", "left", "--version", "2.0.0", "--values-file", "-"]
    waits = ["--wait-check-interval=0.5s", "--wait-timeout=60s"]
    out = ok(kapply(*update, "-n", namespace, *waits, input="name: left-cm\nhello_msg: again\n"))
    assert "Resuming reconciliation for package installation 'left'" in out, out
    assert config_map_data(kube, namespace, "left-cm") == {"version": "2.0.0", "hello_msg": "again"}

    # kube-apiserver takes a token it authenticated within the last 10 s without looking at its account again: the
    # deleted account's token stops working only then (a wait for the API server's cache, not for a sync)
    time.sleep(max(0.0, deleted + TOKEN_CACHE_TTL - time.monotonic()))
    out = install(kapply, namespace, "again", "-v", "1.0.0", "--values-file", values)
    assert "Deploy succeeded" in out and "Unauthorized" not in out
    assert config_map_data(kube, namespace, "again-cm") == {"version": "1.0.0", "hello_msg": "stranger"}


def renamed(package: dict[str, Any], ref: str) -> dict[str, Any]:
    """`package` as a version of the package `ref`."""
    version = package["spec"]["version"]
    return {
        **package,
        "metadata": {"name": names.package_name(ref, version)},
        "spec": {**package["spec"], "refName": ref},
    }


def test_installed_history_and_rollback(
    running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path
) -> None:
    """kapply's own (issue 34): the controller keeps a revision of each (version, values) the install ran, with the
    install's service account; `history` lists them, `rollback` goes back to the previous one, its version and its
    values, and no value appears in any output, in the status or in the controller's log."""
    first, second = f"first-{uuid.uuid4().hex[:8]}", f"second-{uuid.uuid4().hex[:8]}"
    a = values_file(tmp_path / "a.yml", name="rolled-cm", hello_msg=first)
    said = [install(kapply, namespace, "rolled", "-v", "1.0.0", "--values-file", a)]
    update = ["package", "installed", "update", "-i", "rolled", "-v", "2.0.0", "-n", namespace]
    b = values_file(tmp_path / "b.yml", name="rolled-cm", hello_msg=second)
    said.append(ok(kapply(*update, "--values-file", b, "--wait-check-interval=0.5s")))
    assert config_map_data(kube, namespace, "rolled-cm") == {"version": "2.0.0", "hello_msg": second}

    history = ["package", "installed", "history", "-i", "rolled", "-n", namespace, "--json"]
    said.append(ok(kapply(*history)))
    rows = yaml.safe_load(said[-1])["Tables"][0]["Rows"]
    assert [(r["revision"], r["version"]) for r in rows] == [("2", "2.0.0"), ("1", "1.0.0")], rows
    assert rows[0]["values_digest"] != rows[1]["values_digest"]

    rollback = ["package", "installed", "rollback", "-i", "rolled", "-n", namespace, "--wait-check-interval=0.5s"]
    said.append(ok(kapply(*rollback, "-y")))
    for line in ("to revision 1", "version: 2.0.0 -> 1.0.0", "values: changed (keys: hello_msg)", "Resuming"):
        assert line in said[-1], said[-1]
    assert config_map_data(kube, namespace, "rolled-cm") == {"version": "1.0.0", "hello_msg": first}
    pkgi = get(kube, PackageInstall, namespace, "rolled") or {}
    assert pkgi["spec"]["packageRef"]["versionSelection"]["constraints"] == "1.0.0"
    assert condition(kube, PackageInstall, namespace, "rolled") == "ReconcileSucceeded"
    said.append(ok(kapply(*history)))
    rows = yaml.safe_load(said[-1])["Tables"][0]["Rows"]  # the rollback is a revision of its own, with 1's values
    assert [(r["revision"], r["version"]) for r in rows[:2]] == [("3", "1.0.0"), ("2", "2.0.0")], rows
    assert rows[0]["values_digest"] == rows[2]["values_digest"]

    shown = "\n".join([*said, yaml.safe_dump(pkgi["status"]), running.log.read_text()])
    assert first not in shown and second not in shown


def test_installed_history_and_rollback_use_the_installs_own_revisions_only(
    running: Running, kube: Client, kapply: KapplyRunner, namespace: str, tmp_path: Path
) -> None:
    """The tenant's forgeries beside an install's revision, on the real API server (its metadata LIST, the install's
    account's LIST, CREATE and pruning): a Secret of the next revision's name carrying the install's label but no
    owner, and one labelled and owned as the install's under another name. `history` shows the install's own
    revision only (no value), a rollback to the forged number is refused with nothing changed, and the controller's
    next revision (a new version, set as a person would) cannot take the squatted name: the install succeeds, its
    condition says why no revision was kept, and both forgeries are left as they were. The install moved to another
    package (its refName edited), a rollback to its revision of the first is refused naming both, nothing changed.
    The install's own revision made malformed is one error naming it, from `history` and `rollback` alike, and
    nothing is changed."""
    first = f"first-{uuid.uuid4().hex[:8]}"
    a = values_file(tmp_path / "a.yml", name="forged-cm", hello_msg=first)
    install(kapply, namespace, "forged", "-v", "1.0.0", "--values-file", a)
    real = kube.get(Secret, "forged.pkgi-v1", namespace=namespace).to_dict()
    meta = real["metadata"]
    annotations = {**meta["annotations"], "packaging.kapply.dev/revision": "2"}
    squatter = {"name": "forged.pkgi-v2", "labels": meta["labels"], "annotations": annotations}
    backup = {**squatter, "name": "forged-backup", "ownerReferences": meta["ownerReferences"]}
    create(
        kube,
        namespace,
        *({"apiVersion": "v1", "kind": "Secret", "metadata": m, "data": real["data"]} for m in (squatter, backup)),
    )
    versions = {
        n: (get(kube, Secret, namespace, n) or {})["metadata"]["resourceVersion"]
        for n in ("forged.pkgi-v2", "forged-backup")
    }

    history = ["package", "installed", "history", "-i", "forged", "-n", namespace, "--json"]
    said = ok(kapply(*history))
    assert [(r["revision"], r["version"]) for r in yaml.safe_load(said)["Tables"][0]["Rows"]] == [("1", "1.0.0")]
    rollback = ["package", "installed", "rollback", "-i", "forged", "-n", namespace, "--to-revision", "2", "-y"]
    refused(kapply(*rollback), "Expected revision 2 to be one of the revisions kept (1)")
    pkgi = get(kube, PackageInstall, namespace, "forged") or {}
    assert pkgi["spec"]["packageRef"]["versionSelection"]["constraints"] == "1.0.0" and "paused" not in pkgi["spec"]

    constraint = {"spec": {"packageRef": {"versionSelection": {"constraints": "2.0.0"}}}}
    kube.patch(PackageInstall, "forged", constraint, namespace=namespace, patch_type=PatchType.MERGE)

    def at_two() -> dict[str, Any]:
        if condition(kube, PackageInstall, namespace, "forged") != "ReconcileSucceeded":
            return {}
        reported = status(kube, PackageInstall, namespace, "forged")
        return reported if reported.get("version") == "2.0.0" else {}

    succeeded = eventually(at_two, timeout=60, what="the install at 2.0.0, succeeded")
    message = str(succeeded["conditions"][0].get("message", ""))  # type: ignore[index]
    assert message.startswith("No revision kept for rollback:") and "already exists" in message, message
    assert {n: (get(kube, Secret, namespace, n) or {})["metadata"]["resourceVersion"] for n in versions} == versions
    after = ok(kapply(*history))
    assert [r["revision"] for r in yaml.safe_load(after)["Tables"][0]["Rows"]] == ["1"]
    assert first not in said + after

    # the install moved to another package (its refName edited): its revision of the first is not rolled back to
    other = {"spec": {"packageRef": {"refName": "other.test.carvel.dev"}}}
    kube.patch(PackageInstall, "forged", other, namespace=namespace, patch_type=PatchType.MERGE)
    moved = (get(kube, PackageInstall, namespace, "forged") or {})["metadata"]
    refused(
        kapply(*rollback[:-3], "--to-revision", "1", "-y"),
        "(Secret 'forged.pkgi-v1') to be of the package the install selects, 'other.test.carvel.dev', not "
        f"'{CM_REF}': a rollback does not change an install's package",
    )
    pkgi = get(kube, PackageInstall, namespace, "forged") or {}
    assert (pkgi["metadata"]["generation"], pkgi["metadata"].get("annotations")) == (
        moved["generation"],
        moved.get("annotations"),
    )
    assert pkgi["spec"]["packageRef"]["versionSelection"]["constraints"] == "2.0.0" and "paused" not in pkgi["spec"]

    # the install's own revision, its version made a constraint: one error naming it, from either command
    def edited() -> tuple[object, object]:
        meta = (get(kube, PackageInstall, namespace, "forged") or {})["metadata"]
        return meta["generation"], meta.get("annotations")

    before = edited()
    bad = {"metadata": {"annotations": {"packaging.kapply.dev/package-version": ">=0.0.0"}}}
    kube.patch(Secret, "forged.pkgi-v1", bad, namespace=namespace, patch_type=PatchType.MERGE)
    said = "kapply: Error: Reading revision Secret 'forged.pkgi-v1': not a revision (its version annotation is not a "
    refused(kapply(*history[:-1]), said)  # (without --json: its errors are in the JSON)
    refused(kapply(*rollback[:-3], "-y"), said)
    assert edited() == before


def test_an_install_whose_account_may_not_touch_secrets_keeps_no_revision_and_says_why(
    running: Running, kube: Client, kapply: KapplyRunner, namespace: str
) -> None:
    """An install whose service account may deploy ConfigMaps but not read or write Secrets (the controller itself has
    no rights on Secrets): it succeeds, its condition says why no revision was kept, there is none, `history` lists
    none and `rollback` says so."""
    ref = "nosecrets.test.carvel.dev"
    package = renamed(cm_package("1.0.0"), ref)
    files = package["spec"]["template"]["spec"]["fetch"][0]["inline"]["paths"]
    files["values.yml"] = files["values.yml"].replace("name: cm", "name: nosecrets-cm")
    create(kube, namespace, package)
    create_objects(
        kube,
        deployer(namespace, "no-secrets", rules=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]),
    )
    selection = {"refName": ref, "versionSelection": {"constraints": "1.0.0"}}
    pkgi = {"metadata": {"name": "nosecrets"}, "spec": {"serviceAccountName": "no-secrets", "packageRef": selection}}
    create(kube, namespace, {"apiVersion": f"{names.GROUP}/{names.VERSION}", "kind": "PackageInstall", **pkgi})
    eventually(
        lambda: condition(kube, PackageInstall, namespace, "nosecrets") == "ReconcileSucceeded",
        timeout=60,
        what="the install succeeded",
    )
    assert config_map_data(kube, namespace, "nosecrets-cm") == {"version": "1.0.0", "hello_msg": "stranger"}
    assert status(kube, PackageInstall, namespace, "nosecrets")["conditions"][0]["message"] == (
        "No revision kept for rollback: service account 'no-secrets' may not read and write Secrets in namespace "
        f"'{namespace}'"
    )
    assert get(kube, Secret, namespace, "nosecrets.pkgi-v1") is None
    history = ok(kapply("package", "installed", "history", "-i", "nosecrets", "-n", namespace, "--json"))
    assert yaml.safe_load(history)["Tables"][0]["Rows"] == []
    refused(
        kapply("package", "installed", "rollback", "-i", "nosecrets", "-n", namespace, "-y"),
        f"Package install 'nosecrets' in namespace '{namespace}' has no revisions",
    )
