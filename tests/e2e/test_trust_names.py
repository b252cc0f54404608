"""No manifest content makes kapply touch an object outside the app's declared resources: a name that would not be
one path segment of a request URL (`..`, `/`, `%2F`, empty, over-long) is refused before any request, naming the
resource (issue 11, "crafted names")."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import ConfigMap, Namespace

import kapply
from tests.e2e.harness import Cluster, KapplyRunner

pytestmark = pytest.mark.e2e

APP = "crafted"


@pytest.fixture
def other_namespace(kube: Client, kapply: KapplyRunner) -> Iterator[str]:
    """A namespace holding ConfigMap `victim`, owned by another app."""
    name = f"t-victim-{uuid.uuid4().hex[:5]}"
    kube.create(Namespace.from_dict({"metadata": {"name": name}}))
    kapply.deploy(name, configmap("victim", "precious"), app="owner")
    yield name
    kube.delete(Namespace, name)


def configmap(name: str, value: str, namespace: str | None = None) -> str:
    ns = f"\n  namespace: {namespace!r}" if namespace is not None else ""
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name!r}{ns}\ndata:\n  v: {value!r}\n"


def crafted_names(other: str) -> list[tuple[str, str]]:
    """(name, what the error says about it)."""
    return [
        (f"../../{other}/configmaps/victim", "may not contain '/'"),
        ("..", "may not be '..'"),
        ("a%2Fb", "may not contain '%'"),
        ("", "non-empty"),
        ("x" * 300, "must be no more than 253 characters"),
    ]


def assert_untouched(kube: Client, namespace: str, other: str, victim_version: str) -> None:
    victim = kube.get(ConfigMap, "victim", namespace=other)
    assert victim.metadata.resourceVersion == victim_version, "the other app's ConfigMap was written to"
    assert victim.data == {"v": "precious"}
    for name in (APP, "innocent"):
        with pytest.raises(ApiError) as missing:
            kube.get(ConfigMap, name, namespace=namespace)
        assert missing.value.status.code == 404, f"{name} was created although the deploy was refused"


@pytest.mark.parametrize("override", [False, True], ids=["plain", "override-ownership"])
def test_crafted_names_are_refused_before_any_request(
    kapply: KapplyRunner, kube: Client, namespace: str, other_namespace: str, override: bool
):
    victim_version = kube.get(ConfigMap, "victim", namespace=other_namespace).metadata.resourceVersion
    flags = ["--dangerous-override-ownership-of-existing-resources"] if override else []
    for name, problem in crafted_names(other_namespace):
        manifest = configmap("innocent", "fine") + "---\n" + configmap(name, "stolen")
        result = kapply.deploy(namespace, manifest, *flags, app=APP, check=False)
        assert result.returncode == 1, f"{name!r}: {result.stdout}{result.stderr}"
        assert "Traceback" not in result.stderr, result.stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("- ")]
        assert len(errors) == 1 and problem in errors[0], f"{name!r}: {result.stderr}"
        assert f"configmap/{name or '*'} (v1)" in errors[0] and "doc 2" in errors[0], errors[0]
        assert_untouched(kube, namespace, other_namespace, victim_version)


def test_a_crafted_namespace_is_refused(kapply: KapplyRunner, kube: Client, namespace: str, other_namespace: str):
    victim_version = kube.get(ConfigMap, "victim", namespace=other_namespace).metadata.resourceVersion
    manifest = configmap("innocent", "fine") + "---\n" + configmap("victim", "stolen", f"x/../{other_namespace}")
    result = kapply.deploy(
        namespace, manifest, "--dangerous-override-ownership-of-existing-resources", app=APP, check=False
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert f"Invalid namespace 'x/../{other_namespace}' on resource 'configmap/victim (v1)" in result.stderr
    assert_untouched(kube, namespace, other_namespace, victim_version)


def test_an_existing_app_refuses_a_crafted_name_and_keeps_its_resources(
    kapply: KapplyRunner, kube: Client, namespace: str, other_namespace: str
):
    """With an app on the cluster, kapply lists its resources before diffing: the name is refused first, and no
    resource of the app is deleted for being "no longer in the manifest"."""
    kapply.deploy(namespace, configmap("kept", "1"), app=APP)
    record_version = kube.get(ConfigMap, APP, namespace=namespace).metadata.resourceVersion
    victim_version = kube.get(ConfigMap, "victim", namespace=other_namespace).metadata.resourceVersion
    manifest = configmap(f"../../{other_namespace}/configmaps/victim", "stolen")
    result = kapply.deploy(
        namespace, manifest, "--dangerous-override-ownership-of-existing-resources", app=APP, check=False
    )
    assert result.returncode == 1 and "may not contain '/'" in result.stderr, result.stdout + result.stderr
    assert kube.get(ConfigMap, "kept", namespace=namespace).data == {"v": "1"}
    assert kube.get(ConfigMap, APP, namespace=namespace).metadata.resourceVersion == record_version
    assert kube.get(ConfigMap, "victim", namespace=other_namespace).metadata.resourceVersion == victim_version


def test_the_api_refuses_crafted_names_from_dicts(cluster: Cluster, kube: Client, namespace: str, other_namespace: str):
    victim_version = kube.get(ConfigMap, "victim", namespace=other_namespace).metadata.resourceVersion
    resources = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "innocent"}, "data": {"v": "fine"}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"../../{other_namespace}/configmaps/victim"},
            "data": {"v": "stolen"},
        },
    ]
    options = kapply.DeployOptions(override_ownership=True)
    refused = pytest.raises(kapply.ManifestError, match="may not contain '/'")
    with kapply.Client(cluster.kubeconfig, namespace=namespace) as api, refused:
        api.deploy(APP, resources=resources, options=options)
    assert_untouched(kube, namespace, other_namespace, victim_version)
