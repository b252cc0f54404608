"""`make demo`: run kapply against the local control plane started by `make cluster-up`.

Until `kapply deploy` exists this shows the version and the cluster's nodes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lightkube import Client, KubeConfig
from lightkube.resources.core_v1 import Node

CACHE = Path(os.environ.get("KAPPLY_CACHE", Path.home() / ".cache" / "kapply"))
KUBECONFIG = Path(os.environ.get("KAPPLY_CLUSTER_DIR", CACHE / "cluster")) / "kubeconfig"


def main() -> None:
    env = {**os.environ, "KUBECONFIG": str(KUBECONFIG)}
    print(f"$ KUBECONFIG={KUBECONFIG} kapply version", flush=True)
    subprocess.run([sys.executable, "-m", "kapply", "version"], env=env, check=True)
    client = Client(KubeConfig.from_file(KUBECONFIG))
    print(f"\nNodes of the cluster at {client.config.cluster.server}:")
    print(f"{'NAME':16} {'READY':6} {'VERSION':10}")
    for node in client.list(Node):
        ready = next(c.status for c in node.status.conditions if c.type == "Ready")
        print(f"{node.metadata.name:16} {ready:6} {node.status.nodeInfo.kubeletVersion:10}")
    print("\nThe cluster keeps running; stop it with `make cluster-down`.")


if __name__ == "__main__":
    main()
