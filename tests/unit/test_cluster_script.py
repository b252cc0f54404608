"""The pure parts of hack/cluster.py (building and starting are covered by the e2e run)."""

import json

GOMOD = """module k8s.io/kubernetes

require (
\tk8s.io/api v0.0.0
\tgo.etcd.io/etcd/server/v3 v3.6.4 // indirect
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tk8s.io/kube-openapi => k8s.io/kube-openapi v0.0.0-2025
)
"""


def test_staging_replaces_point_each_staging_module_at_the_matching_v0_release(cluster_script):
    assert cluster_script.staging_replaces(GOMOD, "v1.34.4") == {
        "k8s.io/api": "k8s.io/api v0.34.4",
        "k8s.io/client-go": "k8s.io/client-go v0.34.4",
    }


def test_kubeconfig_for_the_restricted_user_defaults_to_its_namespace(cluster_script, tmp_path):
    pki = tmp_path
    for name in ["ca.crt", "restricted.crt", "restricted.key"]:
        (pki / name).write_text(name)
    path = tmp_path / "kc"
    cluster_script.write_kubeconfig(path, "https://127.0.0.1:1", pki, "u", "restricted", "ns1")
    config = json.loads(path.read_text())
    assert config["contexts"][0]["context"]["namespace"] == "ns1"
    assert config["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:1"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
