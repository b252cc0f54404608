#!/usr/bin/env python3
"""Build, start and stop kapply's local Kubernetes control plane.

Everything is built from the Go module proxy with the machine's Go at pinned
versions and cached outside the repository, so a second run builds nothing:

    kube-apiserver, kube-controller-manager, kube-scheduler  (k8s.io/kubernetes)
    etcd                                                      (go.etcd.io/etcd/server/v3)
    kwok, which simulates nodes and kubelets                  (sigs.k8s.io/kwok)

All processes listen on 127.0.0.1 only. `up` writes two kubeconfigs into the
data dir: `kubeconfig` (admin, system:masters) and `restricted.kubeconfig`
(a user bound by RBAC to the namespace `kapply-restricted` only).

Usage: cluster.py build | up | down | status | kubeconfig
       cluster.py pause | resume | kill | restart COMPONENT   (fault injection for tests)

This script uses the standard library and the `openssl` command only, so it
runs before the project's virtualenv exists.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

K8S_VERSION = "v1.34.4"
ETCD_VERSION = "v3.6.8"
KWOK_VERSION = "v0.7.0"

CACHE = Path(os.environ.get("KAPPLY_CACHE", Path.home() / ".cache" / "kapply"))
DATA_DIR = Path(os.environ.get("KAPPLY_CLUSTER_DIR", CACHE / "cluster"))

RESTRICTED_USER = "kapply-restricted"
RESTRICTED_NAMESPACE = "kapply-restricted"
NODE_NAME = "kwok-node-0"
SERVICE_CIDR = "10.96.0.0/16"

# Every request a component makes goes to 127.0.0.1; these make sure no
# proxy setting of the machine sends one anywhere else.
LOOPBACK_ENV = {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


LOG_PREFIX = "[cluster]"  # hack/tools.py, which reuses the build helpers below, sets its own


def log(msg: str) -> None:
    print(f"{LOG_PREFIX} {msg}", flush=True)


# ---------------------------------------------------------------- building


@dataclass(frozen=True)
class Build:
    """One Go build module: requirements, replaces, and the binaries it yields."""

    name: str
    version: str
    requires: dict[str, str]
    binaries: dict[str, str]  # binary name -> Go package
    ldflags: str = ""
    k8s_staging: bool = False  # replace k8s.io staging modules (see staging_replaces)
    main_go: str = ""  # a main package written here when the module ships none
    gomod_extra: tuple[str, ...] = ()  # more go.mod lines, e.g. replace/exclude directives (hack/tools.py)


ETCD_MAIN = """package main

import (
\t"os"

\t"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
"""


def bin_dir(name: str, version: str) -> Path:
    return CACHE / f"{name}-{version}" / "bin"


def go_mod_download(module: str, version: str) -> dict:
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        check=True,
        capture_output=True,
        text=True,
        cwd=CACHE,
    ).stdout
    return json.loads(out)


def staging_replaces(gomod: str, k8s_version: str) -> dict[str, str]:
    """k8s.io/kubernetes replaces each staging module with a local path; as a
    dependency it needs each replaced by the published v0.X.Y of the same release."""
    staging_version = "v0" + k8s_version[2:]
    names = re.findall(r"^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/", gomod, re.M)
    return {name: f"{name} {staging_version}" for name in names}


def builds() -> list[Build]:
    major, minor = K8S_VERSION[1:].split(".")[:2]
    version_pkg = "k8s.io/component-base/version"
    k8s_ldflags = " ".join(
        [
            "-s -w",
            f"-X {version_pkg}.gitVersion={K8S_VERSION}",
            f"-X {version_pkg}.gitMajor={major}",
            f"-X {version_pkg}.gitMinor={minor}",
            f"-X {version_pkg}.gitTreeState=clean",
        ]
    )
    return [
        Build(
            name="etcd",
            version=ETCD_VERSION,
            requires={"go.etcd.io/etcd/server/v3": ETCD_VERSION},
            # the build module is kapply.local/etcd, so its main package builds `etcd`
            binaries={"etcd": "."},
            ldflags="-s -w",
            main_go=ETCD_MAIN,
        ),
        Build(
            name="kwok",
            version=KWOK_VERSION,
            requires={"sigs.k8s.io/kwok": KWOK_VERSION},
            binaries={"kwok": "sigs.k8s.io/kwok/cmd/kwok"},
            ldflags="-s -w",
        ),
        Build(
            name="k8s",
            version=K8S_VERSION,
            requires={"k8s.io/kubernetes": K8S_VERSION},
            binaries={
                "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
                "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
                "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
            },
            ldflags=k8s_ldflags,
            k8s_staging=True,
        ),
    ]


def binary(name: str) -> Path:
    for b in builds():
        if name in b.binaries:
            return bin_dir(b.name, b.version) / name
    raise KeyError(name)


def is_built(build: Build) -> bool:
    return all((bin_dir(build.name, build.version) / n).exists() for n in build.binaries)


def run_go_build(build: Build, workdir: Path, out_dir: Path) -> None:
    """One `go build` for all of a module's binaries, so that 2 cores stay busy."""
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod -buildvcs=false"}
    names = ", ".join(build.binaries)
    log(f"building {names} {build.version} (go build; minutes on 2 cores)")
    cmd = ["go", "build", "-v", "-trimpath", "-ldflags", build.ldflags, "-o", f"{out_dir}/", *build.binaries.values()]
    started = last_report = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    tail: list[str] = []
    for compiled, line in enumerate(proc.stderr, start=1):
        tail = (tail + [line.rstrip()])[-30:]
        if time.monotonic() - last_report > 20:
            last_report = time.monotonic()
            log(f"  {compiled} packages compiled, {int(last_report - started)}s, now {line.strip()}")
    if proc.wait() != 0:
        sys.exit(f"{LOG_PREFIX} go build of {names} failed:\n" + "\n".join(tail))
    log(f"  {names} built in {int(time.monotonic() - started)}s")


def build_one(build: Build) -> None:
    out_dir = bin_dir(build.name, build.version)
    workdir = CACHE / "build" / f"{build.name}-{build.version}"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    lines = [f"module kapply.local/{build.name}", "", "go 1.24.0", "", "require ("]
    lines += [f"\t{m} {v}" for m, v in build.requires.items()]
    lines += [")", ""]
    if build.k8s_staging:
        gomod = Path(go_mod_download("k8s.io/kubernetes", build.version)["GoMod"]).read_text()
        replaces = staging_replaces(gomod, build.version)
        lines += ["replace ("] + [f"\t{m} => {r}" for m, r in replaces.items()] + [")"]
    lines += build.gomod_extra
    (workdir / "go.mod").write_text("\n".join(lines) + "\n")
    if build.main_go:
        (workdir / "main.go").write_text(build.main_go)
    log(f"resolving modules for {build.name} {build.version}")
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    subprocess.run(
        ["go", "mod", "tidy"]
        if build.main_go
        else ["go", "get", *[f"{p}@{build.version}" for p in build.binaries.values()]],
        cwd=workdir,
        env=env,
        check=True,
    )
    tmp_out = out_dir.with_name("bin.partial")
    shutil.rmtree(tmp_out, ignore_errors=True)
    tmp_out.mkdir(parents=True)
    run_go_build(build, workdir, tmp_out)
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp_out.rename(out_dir)


def build_all() -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    missing = [b for b in builds() if not is_built(b)]
    if missing and shutil.which("go") is None:
        sys.exit("[cluster] Go is required to build the control plane; none is on PATH")
    for build in missing:
        build_one(build)
    log(f"binaries ready in {CACHE}")


# ---------------------------------------------------------------- certificates


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certs(pki: Path) -> None:
    """A CA, the serving cert of the API server, client certs for the admin
    (system:masters) and the restricted user, and the service-account key pair."""
    pki.mkdir(parents=True, exist_ok=True)
    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "3650",
        "-subj",
        "/CN=kapply-local-ca",
        cwd=pki,
    )
    (pki / "serving.ext").write_text(
        "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n"
        "extendedKeyUsage=serverAuth\n"
    )
    (pki / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name, subject, ext in [
        ("apiserver", "/CN=kube-apiserver", "serving.ext"),
        ("admin", "/O=system:masters/CN=kapply-admin", "client.ext"),
        ("restricted", f"/CN={RESTRICTED_USER}", "client.ext"),
    ]:
        openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            subject,
            cwd=pki,
        )
        openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "3650",
            "-extfile",
            ext,
            "-out",
            f"{name}.crt",
            cwd=pki,
        )
    openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def write_kubeconfig(path: Path, server: str, pki: Path, user: str, cert: str, namespace: str) -> None:
    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "kapply-local", "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")}}
        ],
        "users": [
            {
                "name": user,
                "user": {"client-certificate-data": b64(f"{cert}.crt"), "client-key-data": b64(f"{cert}.key")},
            }
        ],
        "contexts": [{"name": user, "context": {"cluster": "kapply-local", "user": user, "namespace": namespace}}],
        "current-context": user,
    }
    path.write_text(json.dumps(config, indent=2))  # JSON is valid kubeconfig YAML
    path.chmod(0o600)


# ---------------------------------------------------------------- talking to the API server


class Api:
    """Just enough of a client to bootstrap the cluster, with the admin cert."""

    def __init__(self, server: str, pki: Path) -> None:
        self.server = server
        self.ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        self.opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=self.ctx)
        )

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict | str]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.server + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with self.opener.open(req, timeout=10) as resp:
                raw = resp.read().decode()
                status = resp.status
        except urllib.error.HTTPError as e:
            raw, status = e.read().decode(), e.code
        except OSError as e:
            return 0, str(e)
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw

    def create(self, path: str, body: dict) -> None:
        status, resp = self.request("POST", path, body)
        if status not in (201, 409):
            raise RuntimeError(f"POST {path}: {status} {resp}")


def wait_for(what: str, check, timeout: float, procs: dict[str, subprocess.Popen] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        for name, proc in (procs or {}).items():
            if proc.poll() is not None:
                sys.exit(
                    f"[cluster] {name} exited with {proc.returncode} while waiting for {what}; "
                    f"see {DATA_DIR / 'logs' / (name + '.log')}"
                )
        time.sleep(0.5)
    sys.exit(f"[cluster] timed out after {timeout:.0f}s waiting for {what}; logs in {DATA_DIR / 'logs'}")


# ---------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def state_path() -> Path:
    return DATA_DIR / "state.json"


def read_state() -> dict | None:
    try:
        return json.loads(state_path().read_text())
    except (OSError, ValueError):
        return None


def pid_alive(pid: int, exe: str) -> bool:
    """True when pid runs `exe`; guards against a recycled PID."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(cmdline) and cmdline[0].decode(errors="replace") == exe


def start(name: str, args: list[str], procs: dict[str, subprocess.Popen]) -> None:
    logs = DATA_DIR / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    exe = str(binary(name))
    with open(logs / f"{name}.log", "ab") as out:
        procs[name] = subprocess.Popen(
            [exe, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **LOOPBACK_ENV},
            cwd=DATA_DIR,
        )
    log(f"started {name} (pid {procs[name].pid})")


def component_args(ports: dict[str, int]) -> dict[str, list[str]]:
    pki = DATA_DIR / "pki"
    kubeconfig = str(DATA_DIR / "kubeconfig")
    return {
        "etcd": [
            "--name=kapply",
            f"--data-dir={DATA_DIR / 'etcd'}",
            f"--listen-client-urls=http://127.0.0.1:{ports['etcd']}",
            f"--advertise-client-urls=http://127.0.0.1:{ports['etcd']}",
            f"--listen-peer-urls=http://127.0.0.1:{ports['etcd_peer']}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{ports['etcd_peer']}",
            f"--initial-cluster=kapply=http://127.0.0.1:{ports['etcd_peer']}",
            "--quota-backend-bytes=4294967296",
            "--unsafe-no-fsync",  # a throwaway test cluster; saves seconds per deploy
        ],
        "kube-apiserver": [
            f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={ports['apiserver']}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            "--profiling=false",
            "--endpoint-reconciler-type=none",
        ],
        "kube-controller-manager": [
            f"--kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={ports['controller_manager']}",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}",
            f"--cluster-signing-key-file={pki / 'ca.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--use-service-account-credentials=false",
            "--profiling=false",
            # kwok's heartbeats can run late on a loaded 2-core machine; a node marked NotReady gets its
            # pods marked not ready, which kwok never undoes, and rollouts hang. Tests never want that.
            "--node-monitor-grace-period=1h",
        ],
        "kube-scheduler": [
            f"--kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={ports['scheduler']}",
            "--profiling=false",
        ],
        "kwok": [
            f"--kubeconfig={kubeconfig}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            "--cidr=10.244.0.1/16",
            "--node-ip=127.0.0.1",
            f"--server-address=127.0.0.1:{ports['kwok']}",
            f"--config={DATA_DIR / 'kwok-stages.yaml'}",
            *kwok_pod_logs(ports["kwok"]),
        ],
    }


# Pod logs (`kubectl logs`, `kapp logs`): kwok serves POD_LOGS as the log of every container, in the CRI log format
# (`2026-01-01T00:00:00.000000000Z stdout F <line>`, one line each), which tests write and append to (a follower sees
# what is appended). The API server reaches kwok's kubelet API on the node's port over TLS (without a kubelet CA
# configured it does not verify the certificate, so the API server's own serves).
POD_LOGS = DATA_DIR / "pod.log"


def kwok_pod_logs(port: int) -> list[str]:
    """kwok's arguments that serve POD_LOGS; writes the config they name (so that `restart kwok` adds it too)."""
    config = DATA_DIR / "kwok-logs.yaml"
    config.write_text(
        "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: ClusterLogs\nmetadata:\n  name: pod-logs\n"
        f"spec:\n  selector: {{}}\n  logs:\n  - logsFile: {POD_LOGS}\n    follow: true\n"
    )
    POD_LOGS.touch()
    pki = DATA_DIR / "pki"
    return [
        f"--config={config}",
        f"--node-port={port}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
    ]


# kwok's default pod stages (pods become Ready; Job pods Succeed; deleted pods go), plus three that
# tests select by image, so that failures are real pod states the controllers react to:
#   registry.invalid/kapply-test:image-pull-backoff  -> Pending, waiting ImagePullBackOff
#   registry.invalid/kapply-test:crash-loop-backoff  -> Running, not Ready, waiting CrashLoopBackOff
#   registry.invalid/kapply-test:exit-1              -> Failed, terminated with exit code 1
FAILING_IMAGES = {
    "image-pull-backoff": "registry.invalid/kapply-test:image-pull-backoff",
    "crash-loop-backoff": "registry.invalid/kapply-test:crash-loop-backoff",
    "exit-1": "registry.invalid/kapply-test:exit-1",
}

_NOT_DELETED = """    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
"""
_NO_STATUS_YET = (
    _NOT_DELETED
    + """    - key: '.status.podIP'
      operator: 'DoesNotExist'
"""
)


def _stage(name: str, selector: str, next_: str) -> str:
    return (
        f"apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: {name}\nspec:\n"
        f"  resourceRef:\n    apiGroup: v1\n    kind: Pod\n  selector:\n    matchExpressions:\n{selector}"
        f"  next:\n{next_}"
    )


def _image_is(image: str, negate: bool = False) -> str:
    values = "".join(f"      - '{i}'\n" for i in ([image] if not negate else FAILING_IMAGES.values()))
    return (
        f"    - key: '.spec.containers.[].image'\n      operator: '{'NotIn' if negate else 'In'}'\n"
        f"      values:\n{values}"
    )


def _status(body: str) -> str:
    body = body.replace("ADDRESSES", _ADDRESSES)
    return "    statusTemplate: |\n" + "".join(f"      {line}\n" for line in body.strip().splitlines())


# Where kwok says the pod runs; templates write it where this marker stands.
_ADDRESSES = (
    "hostIP: {{ NodeIPWith .spec.nodeName | Quote }}\n"
    'podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) '
    '( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}'
)

_CONTAINERS = """
{{ $now := Now }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: %(restarts)s
  state:
    %(state)s
{{ end }}
ADDRESSES
startTime: {{ $now | Quote }}
"""


def kwok_stages() -> str:
    ready = _status("""
{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: ContainersReady
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
{{ end }}
ADDRESSES
phase: Running
startTime: {{ $now | Quote }}
""")
    complete = _status("""
{{ $now := Now }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
{{ end }}
phase: Succeeded
""")
    job_running = (
        _NOT_DELETED
        + """    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'In'
      values:
      - 'Job'
"""
    )
    waiting = "waiting:\n      reason: %s\n      message: %s"
    pull = _status(
        _CONTAINERS
        % {"restarts": 0, "state": waiting % ("ImagePullBackOff", "'Back-off pulling image \"{{ .image }}\"'")}
        + "phase: Pending\n"
    )
    crash = _status(
        _CONTAINERS
        % {"restarts": 3, "state": waiting % ("CrashLoopBackOff", "'back-off 40s restarting failed container'")}
        + """phase: Running
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  reason: ContainersNotReady
  type: Ready
"""
    )
    failed = _status(
        _CONTAINERS
        % {
            "restarts": 0,
            "state": (
                "terminated:\n      exitCode: 1\n      reason: Error\n      startedAt: {{ $now | Quote }}\n"
                "      finishedAt: {{ $now | Quote }}"
            ),
        }
        + "phase: Failed\n"
    )
    return "---\n".join(
        [
            _stage("pod-ready", _NO_STATUS_YET + _image_is("", negate=True), ready),
            _stage("pod-complete", job_running, complete),
            _stage(
                "pod-delete",
                "    - key: '.metadata.deletionTimestamp'\n      operator: 'Exists'\n",
                "    finalizers:\n      empty: true\n    delete: true\n",
            ),
            _stage("pod-image-pull-backoff", _NO_STATUS_YET + _image_is(FAILING_IMAGES["image-pull-backoff"]), pull),
            _stage("pod-crash-loop-backoff", _NO_STATUS_YET + _image_is(FAILING_IMAGES["crash-loop-backoff"]), crash),
            _stage("pod-exit-1", _NO_STATUS_YET + _image_is(FAILING_IMAGES["exit-1"]), failed),
        ]
    )


def fake_node() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE_NAME,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": NODE_NAME,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/role": "agent",
            },
        },
        "spec": {},
        "status": {
            "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "1000"},
            "capacity": {"cpu": "64", "memory": "256Gi", "pods": "1000"},
        },
    }


def restricted_rbac() -> list[tuple[str, dict]]:
    ns = RESTRICTED_NAMESPACE
    return [
        ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        (
            f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": f"{RESTRICTED_USER}-admin", "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": RESTRICTED_USER}],
            },
        ),
    ]


def node_ready(api: Api) -> bool:
    status, node = api.request("GET", f"/api/v1/nodes/{NODE_NAME}")
    if status != 200 or not isinstance(node, dict):
        return False
    conditions = node.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def ready(state: dict) -> bool:
    """Every component runs and the API server answers /readyz, now."""
    if not all(pid_alive(p["pid"], p["exe"]) for p in state["processes"].values()):
        return False
    status, _ = Api(state["server"], DATA_DIR / "pki").request("GET", "/readyz")
    return status == 200


def healthy(state: dict) -> bool:
    """`ready`, once no test holds a component paused or killed (see `pause`): a test session that starts meanwhile
    (and `up`) must wait for the fault to be undone, not take the cluster for a broken one and replace it."""
    deadline = time.monotonic() + FAULT_GRACE
    if active_faults():
        log(f"waiting for a test to undo its faults: {active_faults()}")
    while active_faults() and time.monotonic() < deadline:
        time.sleep(0.5)
    return ready(read_state() or state)


def up() -> None:
    build_all()
    state = read_state()
    if state and healthy(state):
        log(f"cluster already running at {state['server']}; KUBECONFIG={DATA_DIR / 'kubeconfig'}")
        return
    if state:
        log("found a stale or partial cluster; stopping it first")
        down()
    started = time.monotonic()
    shutil.rmtree(DATA_DIR, ignore_errors=True)
    DATA_DIR.mkdir(parents=True)
    pki = DATA_DIR / "pki"
    make_certs(pki)
    ports = {k: free_port() for k in ["etcd", "etcd_peer", "apiserver", "controller_manager", "scheduler", "kwok"]}
    server = f"https://127.0.0.1:{ports['apiserver']}"
    write_kubeconfig(DATA_DIR / "kubeconfig", server, pki, "kapply-admin", "admin", "default")
    write_kubeconfig(
        DATA_DIR / "restricted.kubeconfig", server, pki, RESTRICTED_USER, "restricted", RESTRICTED_NAMESPACE
    )
    (DATA_DIR / "kwok-stages.yaml").write_text(kwok_stages())
    args = component_args(ports)
    procs: dict[str, subprocess.Popen] = {}

    def save_state() -> None:
        state_path().write_text(
            json.dumps(
                {
                    "server": server,
                    "ports": ports,
                    "processes": {n: {"pid": p.pid, "exe": str(binary(n))} for n, p in procs.items()},
                },
                indent=2,
            )
        )

    try:
        start("etcd", args["etcd"], procs)
        save_state()
        start("kube-apiserver", args["kube-apiserver"], procs)
        save_state()
        api = Api(server, pki)
        wait_for("kube-apiserver /readyz", lambda: api.request("GET", "/readyz")[0] == 200, 120, procs)
        for name in ["kube-controller-manager", "kube-scheduler", "kwok"]:
            start(name, args[name], procs)
        save_state()
        for path, body in restricted_rbac():
            api.create(path, body)
        api.create("/api/v1/nodes", fake_node())
        wait_for(f"node {NODE_NAME} Ready", lambda: node_ready(api), 120, procs)
        wait_for(
            "the default ServiceAccount",
            lambda: api.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")[0] == 200,
            120,
            procs,
        )
    except BaseException:
        down()
        raise
    log(f"cluster up at {server} in {time.monotonic() - started:.1f}s")
    log(f"KUBECONFIG={DATA_DIR / 'kubeconfig'}")


def down() -> None:
    state = read_state()
    if state:
        # Stop in reverse start order; only PIDs we started and that still run our binaries.
        for name, proc in reversed(list(state["processes"].items())):
            if pid_alive(proc["pid"], proc["exe"]):
                os.kill(proc["pid"], signal.SIGTERM)
                deadline = time.monotonic() + 15
                while pid_alive(proc["pid"], proc["exe"]) and time.monotonic() < deadline:
                    time.sleep(0.1)
                if pid_alive(proc["pid"], proc["exe"]):
                    os.kill(proc["pid"], signal.SIGKILL)
                log(f"stopped {name} (pid {proc['pid']})")
    if DATA_DIR.exists():
        shutil.rmtree(DATA_DIR, ignore_errors=True)
        log(f"removed {DATA_DIR}")


def _running(name: str) -> tuple[dict, dict]:
    state = read_state()
    if not state or name not in state["processes"]:
        sys.exit(f"{LOG_PREFIX} {name} is not part of a running cluster")
    return state, state["processes"][name]


# Faults a test has injected and not yet undone, by component, in `faults.json` next to the state: while there are
# any, `healthy` waits (up to FAULT_GRACE seconds) rather than report a cluster that is about to recover as broken.
FAULT_GRACE = 300


def faults_path() -> Path:
    return DATA_DIR / "faults.json"


def active_faults() -> dict[str, str]:
    try:
        return json.loads(faults_path().read_text())
    except (OSError, ValueError):
        return {}


def _note_fault(name: str, fault: str | None) -> None:
    faults = {k: v for k, v in active_faults().items() if k != name}
    if fault:
        faults[name] = fault
    if faults:
        faults_path().write_text(json.dumps(faults))
    else:
        faults_path().unlink(missing_ok=True)


def pause(name: str) -> None:
    """Freeze a component (SIGSTOP): its port stays open but nothing answers, as a hung server's would."""
    _, proc = _running(name)
    if pid_alive(proc["pid"], proc["exe"]):
        _note_fault(name, "paused")
        os.kill(proc["pid"], signal.SIGSTOP)
        log(f"paused {name} (pid {proc['pid']})")


def resume(name: str) -> None:
    _, proc = _running(name)
    if pid_alive(proc["pid"], proc["exe"]):
        os.kill(proc["pid"], signal.SIGCONT)
        log(f"resumed {name} (pid {proc['pid']})")
    _note_fault(name, None)


def kill(name: str) -> None:
    """Kill a component outright (SIGKILL), as a crash would; `restart` brings it back."""
    _, proc = _running(name)
    if pid_alive(proc["pid"], proc["exe"]):
        _note_fault(name, "killed")
        os.kill(proc["pid"], signal.SIGKILL)
        while pid_alive(proc["pid"], proc["exe"]):
            time.sleep(0.05)
        log(f"killed {name} (pid {proc['pid']})")


def restart(name: str) -> None:
    """Start a component again on the ports it had (killing it first if it still runs); waits until the API server
    is ready again."""
    kill(name)
    state, _ = _running(name)
    procs: dict[str, subprocess.Popen] = {}
    start(name, component_args(state["ports"])[name], procs)
    state["processes"][name] = {"pid": procs[name].pid, "exe": str(binary(name))}
    state_path().write_text(json.dumps(state, indent=2))
    api = Api(state["server"], DATA_DIR / "pki")
    wait_for("kube-apiserver /readyz", lambda: api.request("GET", "/readyz")[0] == 200, 120, procs)
    _note_fault(name, None)


def status() -> int:
    state = read_state()
    if not state:
        print("not running")
        return 1
    faults = active_faults()
    for name, proc in state["processes"].items():
        running = "running" if pid_alive(proc["pid"], proc["exe"]) else "dead"
        print(f"{name:24} pid {proc['pid']:<8} {running}" + (f" ({faults[name]} by a test)" if name in faults else ""))
    ok = ready(state)
    print(f"server {state['server']} {'ready' if ok else 'NOT ready'}")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "command", choices=["build", "up", "down", "status", "kubeconfig", "pause", "resume", "kill", "restart"]
    )
    parser.add_argument("component", nargs="?", help="for pause, resume, kill and restart: e.g. kube-apiserver")
    parsed = parser.parse_args()
    command = parsed.command
    faults = {"pause": pause, "resume": resume, "kill": kill, "restart": restart}
    if command in faults:
        if not parsed.component:
            parser.error(f"{command} needs a component (etcd, kube-apiserver, ...)")
        faults[command](parsed.component)
    elif command == "build":
        build_all()
    elif command == "up":
        up()
    elif command == "down":
        down()
    elif command == "status":
        return status()
    else:
        print(DATA_DIR / "kubeconfig")
    return 0


if __name__ == "__main__":
    sys.exit(main())
