"""Which kubeconfig and context kapply uses, as kapp and client-go choose them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kapply.errors import KapplyError
from kapply.resources.kubeconfig import KubeconfigFlags, default_namespace, load


def kubeconfig(path: Path, *, current: str | None, contexts: dict[str, tuple[str, str]]) -> Path:
    """contexts: name -> (server, namespace); one cluster and user per context, named like it."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": {"server": server}} for n, (server, _) in contexts.items()],
        "users": [{"name": n, "user": {"token": f"token-{n}"}} for n in contexts],
        "contexts": [
            {"name": n, "context": {"cluster": n, "user": n, "namespace": ns}} for n, (_, ns) in contexts.items()
        ],
    }
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("KUBECONFIG", "KAPP_KUBECONFIG", "KAPP_KUBECONFIG_CONTEXT", "KAPP_KUBECONFIG_YAML", "KAPP_NAMESPACE"):
        monkeypatch.delenv(name, raising=False)


def test_several_kubeconfig_files_merge_with_the_first_definition_of_a_name_winning(tmp_path, monkeypatch):
    first = kubeconfig(tmp_path / "a", current=None, contexts={"shared": ("https://a:6443", "from-a")})
    second = kubeconfig(
        tmp_path / "b",
        current="shared",
        contexts={"shared": ("https://b:6443", "from-b"), "only-b": ("https://b2", "x")},
    )
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'missing'}:{second}")
    selected = load(KubeconfigFlags())
    assert selected.context_name == "shared"  # the first current-context set, from the second file
    assert selected.cluster.server == "https://a:6443" and selected.namespace == "from-a"
    assert load(KubeconfigFlags(context="only-b")).cluster.server == "https://b2"


def test_the_flag_beats_kapps_variable_which_beats_kubeconfig(tmp_path, monkeypatch):
    env = kubeconfig(tmp_path / "env", current="e", contexts={"e": ("https://env", "ns")})
    kapp = kubeconfig(tmp_path / "kapp", current="k", contexts={"k": ("https://kapp", "ns")})
    flag = kubeconfig(tmp_path / "flag", current="f", contexts={"f": ("https://flag", "ns")})
    monkeypatch.setenv("KUBECONFIG", str(env))
    assert load(KubeconfigFlags()).cluster.server == "https://env"
    monkeypatch.setenv("KAPP_KUBECONFIG", str(kapp))
    assert load(KubeconfigFlags()).cluster.server == "https://kapp"
    assert load(KubeconfigFlags(path=str(flag))).cluster.server == "https://flag"


def test_kubeconfig_yaml_wins_and_fills_in_the_service_host(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    text = kubeconfig(
        tmp_path / "y", current="c", contexts={"c": ("https://${KAPP_KUBERNETES_SERVICE_HOST_PORT}", "ns")}
    ).read_text()
    assert load(KubeconfigFlags(path=str(tmp_path / "nope"), yaml=text)).cluster.server == "https://10.0.0.1:443"


def test_the_context_comes_from_the_flag_or_kapps_variable(tmp_path, monkeypatch):
    path = kubeconfig(tmp_path / "k", current="a", contexts={"a": ("https://a", "na"), "b": ("https://b", "nb")})
    monkeypatch.setenv("KAPP_KUBECONFIG_CONTEXT", "b")
    assert load(KubeconfigFlags(path=str(path))).namespace == "nb"
    assert load(KubeconfigFlags(path=str(path), context="a")).namespace == "na"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "Loading kubeconfig: Configuration file .* not found"),
        ("no-current", "Loading kubeconfig: No current context set"),
        ("unknown-context", "Loading kubeconfig"),
    ],
)
def test_kubeconfig_problems_are_one_clear_error(tmp_path, setup, message):
    path = kubeconfig(tmp_path / "k", current=None, contexts={"a": ("https://a", "na")})
    flags = {
        "missing": KubeconfigFlags(path=str(tmp_path / "absent")),
        "no-current": KubeconfigFlags(path=str(path)),
        "unknown-context": KubeconfigFlags(path=str(path), context="zzz"),
    }[setup]
    with pytest.raises(KapplyError, match=message):
        load(flags)


def test_in_cluster_reads_the_service_account_and_needs_the_service_host(tmp_path, monkeypatch):
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "namespace").write_text("pods-ns")
    (tmp_path / "ca.crt").write_text("")
    flags = KubeconfigFlags(in_cluster=True, service_account_dir=str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KapplyError, match="KUBERNETES_SERVICE_HOST is not set"):
        load(flags)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    selected = load(flags)
    assert selected.cluster.server == "https://10.0.0.1:6443" and selected.namespace == "pods-ns"


def test_the_namespace_defaults_to_kapps_variable_then_the_context(monkeypatch):
    assert default_namespace("given", "ctx") == "given"
    assert default_namespace(None, "ctx") == "ctx"
    monkeypatch.setenv("KAPP_NAMESPACE", "env")
    assert default_namespace(None, "ctx") == "env"
    monkeypatch.delenv("KAPP_NAMESPACE")
    with pytest.raises(KapplyError, match="Expected to non-empty namespace name"):
        default_namespace(None, None)


def write(path: Path, doc: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def one_context(cluster: dict, user: dict | None = None) -> dict:
    return {
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user or {}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }


def test_relative_paths_are_relative_to_the_file_that_names_them(tmp_path, monkeypatch):
    first = write(tmp_path / "one" / "config", {"current-context": "x", "clusters": [], "users": [], "contexts": []})
    second = write(
        tmp_path / "two" / "config",
        one_context(
            {"server": "https://s/", "certificate-authority": "ca.crt"},
            {
                "client-certificate": "certs/me.crt",
                "client-key": "/abs/me.key",
                "tokenFile": "tok",
                "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "./bin/plugin", "args": ["a"]},
            },
        ),
    )
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    selected = load(KubeconfigFlags())
    base = (tmp_path / "two").resolve()
    assert selected.cluster.server == "https://s"
    assert selected.cluster.certificate_authority == base / "ca.crt"
    assert selected.user.client_certificate == base / "certs/me.crt"
    assert selected.user.client_key == Path("/abs/me.key")
    assert selected.user.token_file == base / "tok"
    assert selected.user.exec is not None and selected.user.exec.command == str(base / "bin/plugin")
    assert selected.user.exec.args == ("a",)
    assert selected.namespace == "default"  # as client-go, for a context without one


def test_inline_data_is_decoded_and_the_rest_of_the_entry_read(tmp_path):
    path = write(
        tmp_path / "k",
        one_context(
            {
                "server": "https://s",
                "certificate-authority-data": "UEVN",
                "tls-server-name": "api",
                "proxy-url": "http://p",
            },
            {"client-certificate-data": "Q0VSVA==", "client-key-data": "S0VZ", "username": "me", "password": "pw"},
        ),
    )
    selected = load(KubeconfigFlags(path=str(path)))
    assert selected.cluster.certificate_authority_data == b"PEM"
    assert (selected.cluster.tls_server_name, selected.cluster.proxy_url) == ("api", "http://p")
    assert (selected.user.client_certificate_data, selected.user.client_key_data) == (b"CERT", b"KEY")
    assert (selected.user.username, selected.user.password) == ("me", "pw")


@pytest.mark.parametrize(
    ("cluster", "user", "message"),
    [
        (
            {"server": "https://s", "certificate-authority-data": "not base64!"},
            {},
            "cluster 'c': 'certificate-authority-data' is not valid base64",
        ),
        (
            {"server": "https://s", "insecure-skip-tls-verify": "yes"},
            {},
            "cluster 'c': 'insecure-skip-tls-verify' must be true or false",
        ),
        ({"certificate-authority": "ca"}, {}, "cluster 'c': no server"),
        ({"server": "https://s"}, {"token": 12}, "user 'u': 'token' must be a string"),
        ({"server": "https://s"}, {"auth-provider": {"name": "oidc"}}, "user 'u': auth-provider is not supported"),
        ({"server": "https://s"}, {"exec": {"command": "x"}}, "user 'u' exec: 'command' and 'apiVersion' are required"),
        (
            {"server": "https://s"},
            {"exec": {"command": "x", "apiVersion": "v", "env": [{"name": "A"}]}},
            "'env' must be",
        ),
    ],
)
def test_a_bad_entry_is_an_error_naming_it_and_its_file(tmp_path, cluster, user, message):
    path = write(tmp_path / "k", one_context(cluster, user))
    with pytest.raises(KapplyError, match=f"Loading kubeconfig: kubeconfig file '{path}': .*{message}"):
        load(KubeconfigFlags(path=str(path)))


def test_a_context_must_name_a_cluster_and_user_that_exist(tmp_path):
    doc = one_context({"server": "https://s"})
    doc["contexts"].append({"name": "lost", "context": {"cluster": "nowhere", "user": "u"}})
    doc["contexts"].append({"name": "nobody", "context": {"cluster": "c", "user": "ghost"}})
    doc["contexts"].append({"name": "anonymous", "context": {"cluster": "c"}})
    path = write(tmp_path / "k", doc)
    with pytest.raises(KapplyError, match="context 'lost' names no cluster that exists"):
        load(KubeconfigFlags(path=str(path), context="lost"))
    with pytest.raises(KapplyError, match="context 'nobody' names no user that exists"):
        load(KubeconfigFlags(path=str(path), context="nobody"))
    assert load(KubeconfigFlags(path=str(path), context="anonymous")).user.token is None


def test_in_cluster_without_a_token_names_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    with pytest.raises(KapplyError, match=f"Loading kubeconfig: .*{tmp_path / 'token'}"):
        load(KubeconfigFlags(in_cluster=True, service_account_dir=str(tmp_path)))
    (tmp_path / "token").write_text("t")
    (tmp_path / "namespace").write_text("ns\n")
    selected = load(KubeconfigFlags(in_cluster=True, service_account_dir=str(tmp_path)))
    assert selected.cluster.server == "https://[fd00::1]:443" and selected.namespace == "ns"
