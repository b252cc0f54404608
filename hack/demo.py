"""`make demo`: kapply against the local control plane started by `make cluster-up`.

Deploys examples/simple-app, redeploys it unchanged (no changes), changes it and
shows the diff, lists its history and resources, then deletes it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("KAPPLY_CACHE", Path.home() / ".cache" / "kapply"))
KUBECONFIG = Path(os.environ.get("KAPPLY_CLUSTER_DIR", CACHE / "cluster")) / "kubeconfig"
APP = REPO / "examples" / "simple-app" / "config.yml"


def kapply(*args: str, stdin: str | None = None) -> None:
    shown = " ".join(args) + (" -f -" if stdin is not None else "")
    print(f"\n$ kapply {shown}", flush=True)
    extra = ["-f", "-"] if stdin is not None else []
    subprocess.run(
        [sys.executable, "-m", "kapply", *args, *extra],
        input=stdin,
        text=True,
        check=True,
        env={**os.environ, "KUBECONFIG": str(KUBECONFIG)},
    )


def main() -> None:
    print(f"KUBECONFIG={KUBECONFIG}")
    kapply("version")
    kapply("deploy", "-a", "simple-app", "-n", "default", "-f", str(APP), "-y")
    print("\n# the same manifests again: nothing to do")
    kapply("deploy", "-a", "simple-app", "-n", "default", "-f", str(APP), "-y")
    print("\n# a changed environment variable: one update, shown as a line diff")
    changed = APP.read_text().replace("value: stranger", "value: demo")
    kapply("deploy", "-a", "simple-app", "-n", "default", "-c", "-y", stdin=changed)
    kapply("app-change", "list", "-a", "simple-app", "-n", "default", "--tty")
    kapply("inspect", "-a", "simple-app", "-n", "default", "--tree", "--tty")
    kapply("ls", "-n", "default", "--tty")
    kapply("delete", "-a", "simple-app", "-n", "default", "-y")
    print("\nThe cluster keeps running; stop it with `make cluster-down`.")


if __name__ == "__main__":
    main()
