"""How kapply authenticates: a bearer token in the kubeconfig, a client-go exec credential plugin, and
`--kubeconfig-context` picking the user. The working cases deploy to the real API server as a
ServiceAccount that may only touch its own test namespace; the broken ones must fail cleanly."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
import yaml
from lightkube import Client
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import RoleBinding

from tests.e2e.harness import Cluster

pytestmark = pytest.mark.e2e

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: auth-probe
data:
  who: service-account
"""


@pytest.fixture
def token(kube: Client, namespace: str) -> str:
    """A TokenRequest token for a ServiceAccount that is `admin` of the test namespace (and nothing else)."""
    kube.create(ServiceAccount.from_dict({"metadata": {"name": "deployer"}}), namespace=namespace)
    kube.create(
        RoleBinding.from_dict(
            {
                "metadata": {"name": "deployer-admin"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": namespace}],
            }
        ),
        namespace=namespace,
    )
    request = ServiceAccount.Token(metadata=ObjectMeta(), spec=TokenRequestSpec(audiences=[], expirationSeconds=3600))
    return kube.create(request, "deployer", namespace=namespace).status.token


def server_of(cluster: Cluster) -> str:
    return yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]


def write_kubeconfig(path: Path, cluster: Cluster, namespace: str, users: dict[str, dict], current: str) -> Path:
    """A kubeconfig for the test cluster with one context per user (named after it), all in `namespace`."""
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    server = admin["clusters"][0]["cluster"]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "local", "cluster": server}],
                "users": [{"name": name, "user": user} for name, user in users.items()],
                "contexts": [
                    {"name": name, "context": {"cluster": "local", "user": name, "namespace": namespace}}
                    for name in users
                ],
                "current-context": current,
            }
        )
    )
    return path


def write_plugin(path: Path, body: str) -> Path:
    """An executable Python script to use as an exec credential plugin."""
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def exec_user(plugin: Path, api_version: str) -> dict:
    return {"exec": {"apiVersion": api_version, "command": str(plugin), "interactiveMode": "Never"}}


def assert_clean_failure(result, *expected: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "kapply: Error:" in result.stderr
    for text in expected:
        assert text in result.stderr
    assert "Traceback" not in result.stderr


def test_deploys_and_lists_with_a_bearer_token(
    kapply, kube: Client, cluster: Cluster, namespace: str, token: str, tmp_path: Path
):
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster, namespace, {"tok": {"token": token}}, "tok")

    deployed = kapply.deploy(None, CONFIGMAP, app="auth", check=False, env={"KUBECONFIG": str(kubeconfig)})
    assert deployed.returncode == 0, deployed.stderr
    assert kube.get(ConfigMap, "auth-probe", namespace=namespace).data == {"who": "service-account"}

    listed = kapply("ls", env={"KUBECONFIG": str(kubeconfig)})
    assert listed.returncode == 0, listed.stderr
    assert "auth" in listed.stdout


@pytest.mark.parametrize("api_version", ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"])
def test_deploys_with_a_token_from_an_exec_plugin(
    kapply, kube: Client, cluster: Cluster, namespace: str, token: str, tmp_path: Path, api_version: str
):
    exec_info = tmp_path / "exec-info.json"
    plugin = write_plugin(
        tmp_path / "credential-plugin",
        f"""\
import json, os, pathlib
pathlib.Path({str(exec_info)!r}).write_text(os.environ.get("KUBERNETES_EXEC_INFO", ""))
print(json.dumps({{"apiVersion": {api_version!r}, "kind": "ExecCredential", "status": {{"token": {token!r}}}}}))
""",
    )
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig", cluster, namespace, {"plugin": exec_user(plugin, api_version)}, "plugin"
    )

    deployed = kapply.deploy(None, CONFIGMAP, app="auth", check=False, env={"KUBECONFIG": str(kubeconfig)})
    assert deployed.returncode == 0, deployed.stderr
    assert kube.get(ConfigMap, "auth-probe", namespace=namespace).data == {"who": "service-account"}

    info = json.loads(exec_info.read_text())
    assert info["apiVersion"] == api_version
    assert info["kind"] == "ExecCredential"
    assert info["spec"]["cluster"]["server"] == server_of(cluster)


def test_a_failing_exec_plugin_is_a_clean_error(kapply, cluster: Cluster, namespace: str, tmp_path: Path):
    plugin = write_plugin(
        tmp_path / "credential-plugin",
        """\
import sys
sys.exit("no credentials for you: please log in first")
""",
    )
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig",
        cluster,
        namespace,
        {"plugin": exec_user(plugin, "client.authentication.k8s.io/v1")},
        "plugin",
    )

    failed = kapply.deploy(None, CONFIGMAP, app="auth", check=False, env={"KUBECONFIG": str(kubeconfig)})
    assert_clean_failure(failed, str(plugin), "no credentials for you: please log in first")


def test_an_unsupported_exec_plugin_api_version_names_the_supported_ones(
    kapply, cluster: Cluster, namespace: str, tmp_path: Path
):
    plugin = write_plugin(tmp_path / "credential-plugin", "raise SystemExit('must not run')\n")
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig",
        cluster,
        namespace,
        {"plugin": exec_user(plugin, "client.authentication.k8s.io/v1alpha1")},
        "plugin",
    )

    failed = kapply.deploy(None, CONFIGMAP, app="auth", check=False, env={"KUBECONFIG": str(kubeconfig)})
    assert_clean_failure(
        failed,
        "client.authentication.k8s.io/v1alpha1",
        "client.authentication.k8s.io/v1,",
        "client.authentication.k8s.io/v1beta1",
    )
    assert "must not run" not in failed.stderr


def test_kubeconfig_context_flag_selects_the_user(
    kapply, kube: Client, cluster: Cluster, namespace: str, token: str, tmp_path: Path
):
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig",
        cluster,
        namespace,
        {"bad": {"token": "not-a-valid-token"}, "tok": {"token": token}},
        "bad",
    )

    without_flag = kapply.deploy(None, CONFIGMAP, app="auth", check=False, env={"KUBECONFIG": str(kubeconfig)})
    assert_clean_failure(without_flag)

    with_flag = kapply.deploy(
        None, CONFIGMAP, "--kubeconfig-context", "tok", app="auth", check=False, env={"KUBECONFIG": str(kubeconfig)}
    )
    assert with_flag.returncode == 0, with_flag.stderr
    assert kube.get(ConfigMap, "auth-probe", namespace=namespace).data == {"who": "service-account"}


def test_a_rejected_token_is_reported_as_unauthorized(kapply, cluster: Cluster, namespace: str, tmp_path: Path):
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig", cluster, namespace, {"bad": {"token": "not-a-valid-token"}}, "bad"
    )

    failed = kapply.deploy(None, CONFIGMAP, app="auth", check=False, env={"KUBECONFIG": str(kubeconfig)})
    assert_clean_failure(failed, "API server says:\n  Unauthorized (reason: Unauthorized)")


def test_a_missing_exec_plugin_is_a_clean_error(kapply, cluster: Cluster, namespace: str, tmp_path: Path):
    missing = tmp_path / "no-such-plugin"
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig",
        cluster,
        namespace,
        {"plugin": exec_user(missing, "client.authentication.k8s.io/v1")},
        "plugin",
    )

    failed = kapply.deploy(None, CONFIGMAP, app="auth", check=False, env={"KUBECONFIG": str(kubeconfig)})
    assert_clean_failure(failed, f"exec plugin '{missing}' could not be run")
