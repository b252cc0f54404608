"""How long `kapply deploy` (and kapp, when found) takes to fail against a cluster nothing can be asked of: a closed
port, a name that does not resolve, a server whose certificate the kubeconfig does not trust, and a file that does not
parse with the closed port (issue 30, "Fail fast where nothing can succeed"). The tests assert the messages and exit
statuses (tests/compat/test_unreachable_cluster.py); the times are here.

    python bench/unreachable.py [--kapp PATH] [--kubeconfig PATH] [--repeat N]

`--kubeconfig` (the local cluster's) gives the server the untrusting kubeconfig points at; without it that case is
left out. Prints a Markdown table of median wall seconds.
"""

from __future__ import annotations

import argparse
import base64
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

GOOD = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n"
BAD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\n"


def kubeconfig(path: Path, server: str, ca: str | None = None) -> Path:
    cluster = {"server": server, **({"certificate-authority-data": ca} if ca else {"insecure-skip-tls-verify": True})}
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "default"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def closed_port() -> tuple[socket.socket, int]:
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    return held, held.getsockname()[1]


def seconds(argv: list[str]) -> tuple[float, int]:
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, timeout=600)
    return time.monotonic() - started, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kapp", default=shutil.which("kapp"))
    parser.add_argument("--kubeconfig", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        (tmp / "good.yml").write_text(GOOD)
        (tmp / "bad.yml").write_text(BAD)
        held, port = closed_port()
        cases = {
            "closed port": (kubeconfig(tmp / "refused", f"https://127.0.0.1:{port}"), "good.yml"),
            "unknown host": (kubeconfig(tmp / "dns", "https://kapply-bench.invalid:6443"), "good.yml"),
            "bad YAML, closed port": (tmp / "refused", "bad.yml"),
        }
        if args.kubeconfig:
            server = yaml.safe_load(args.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=other"]
                + ["-keyout", str(tmp / "ca.key"), "-out", str(tmp / "ca.crt")],
                check=True,
                capture_output=True,
            )
            ca = base64.b64encode((tmp / "ca.crt").read_bytes()).decode()
            cases["untrusted certificate"] = (kubeconfig(tmp / "tls", server, ca), "good.yml")
        tools = {"kapply": [sys.executable, "-m", "kapply"], **({"kapp": [args.kapp]} if args.kapp else {})}
        print("| case | " + " | ".join(f"{tool} (s)" for tool in tools) + " |")
        print("|---|" + "---:|" * len(tools))
        for case, (config, manifest) in cases.items():
            cells = []
            for command in tools.values():
                argv = [*command, "deploy", "-a", "x", "-f", str(tmp / manifest), "-y", "--kubeconfig", str(config)]
                runs = [seconds(argv) for _ in range(args.repeat)]
                codes = sorted({code for _, code in runs})
                cells.append(f"{statistics.median(s for s, _ in runs):.2f} (exit {', '.join(map(str, codes))})")
            print(f"| {case} | " + " | ".join(cells) + " |")
        held.close()


if __name__ == "__main__":
    main()
