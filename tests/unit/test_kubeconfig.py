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
