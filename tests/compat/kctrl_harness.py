"""The real kctrl beside `kapply package`, on the same cluster (issue 31): each client in a namespace of its own
(names of equal length, so tables align alike), each namespace reconciled by its own `kapply controller` process:
kctrl's by one in carvel mode (kapp-controller's groups, which kctrl speaks), kapply's by one in kapply mode (the groups
`kapply package` speaks). Their CRDs are disjoint; each has its own global namespace (empty: the packages seen are the
namespace's own) and runs without a leader Lease.

Normalising leaves what a user and a script see: the namespaces become `NS`, the program name in `<program>: Error:`
becomes `PROG`, kapply's group names become kapp-controller's, and times of day, ages, timestamps, uids and resource
versions become placeholders. What the cluster's timing decides is left out (`_TIMING`: the output a tail quotes,
`Fetch started`; a tailed stage's `(6s ago)`); kctrl's `Deleting '<Kind>': <name>` lines, in its map's random order,
are compared sorted."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.core_v1 import Namespace
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding

from kapply.controller.vocabulary import CARVEL, Resource
from tests.e2e.controller_harness import controller, controller_identity, create_if_missing, kapply, tool_env
from tests.e2e.harness import Cluster
from tests.e2e.package_cli_harness import PLAIN_HTTP
from tests.e2e.packaging_harness import delete_and_wait, install_crds, packaging_controller, remove_carvel_crds

TOOLS = ("kctrl", "kapply")


def _carvel(of: Resource) -> Any:
    return create_namespaced_resource(of.group, "v1alpha1", of.kind, of.plural)


CarvelApp, CarvelRepository, CarvelInstall = (_carvel(r) for r in (CARVEL.app, CARVEL.repository, CARVEL.install))


@dataclass(frozen=True)
class Result:
    tool: str
    code: int
    stdout: str
    stderr: str


_GROUPS = (
    ("data.packaging.kapply.dev", "data.packaging.carvel.dev"),
    ("packaging.kapply.dev", "packaging.carvel.dev"),
    ("kapply.dev/v1alpha1", "kappctrl.k14s.io/v1alpha1"),
)
_REPLACEMENTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(kctrl|kapply): Error:", re.M), "PROG: Error:"),
    (re.compile(r"\b\d{1,2}:\d\d:\d\d(AM|PM)"), "TIME"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "TIMESTAMP"),
    (re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4} \w+"), "TIMESTAMP"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "UID"),
    (re.compile(r"(?<=\s)(\d+[smhd])+(?=\s|$)"), "AGE"),
    (re.compile(r"(resourceVersion: )\"\d+\""), r'\1"RV"'),
    # a stage tailed after it happened says how long ago: the tail's timing
    (re.compile(r" \(\d+[smh] ago\)"), ""),
)
# What the cluster's timing decides, and kctrl's own watch with it (one run of kctrl differs from the next): the
# output a tail quotes from the status (`\t    | ...`: the controller's, the same in both modes; where kctrl's watch
# and kapply's polls cut it as it grows varies), and whether a fetch was seen running (`Fetch started`)
_TIMING = re.compile(r"^(\s*\|.*|TIME: Fetch started)$")
# kctrl deletes what an install created in its map's order (random): a run of these lines is compared sorted
_DELETING = re.compile(r"^TIME: Deleting '[A-Za-z]+': ")


@dataclass(frozen=True)
class Clients:
    """The two clients, their namespaces (`{"kctrl": ..., "kapply": ...}`) and the cluster's admin kubeconfig."""

    kctrl: Path
    kubeconfig: Path
    ns: dict[str, str]

    def command(self, tool: str) -> list[str]:
        return [str(self.kctrl)] if tool == "kctrl" else [sys.executable, "-m", "kapply"]

    def run_one(self, tool: str, args: Sequence[str], *, input: str | None = None, timeout: float = 120) -> Result:
        """`{ns}` in an argument or the input becomes the tool's namespace."""
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        for variable in ("KAPP_NAMESPACE", "KCTRL_NAMESPACE", "KCTRL_KUBECONFIG", "KAPP_KUBECONFIG"):
            env.pop(variable, None)
        argv = [*self.command(tool), "package", *(a.replace("{ns}", self.ns[tool]) for a in args)]
        done = subprocess.run(
            argv,
            input=input.replace("{ns}", self.ns[tool]) if input is not None else None,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Result(tool, done.returncode, done.stdout, done.stderr)

    def run(self, *args: str, input: str | None = None) -> tuple[Result, Result]:
        """The command with each client, kctrl first (each against its own namespace and controller)."""
        return self.run_one("kctrl", args, input=input), self.run_one("kapply", args, input=input)

    def normalize(self, text: str, tool: str) -> str:
        text = text.replace(self.ns[tool], "NS")
        if tool == "kapply":
            for ours, theirs in _GROUPS:
                text = text.replace(ours, theirs)
        for pattern, replacement in _REPLACEMENTS:
            text = pattern.sub(replacement, text)
        return text

    def seen(self, result: Result) -> list[str]:
        """What a user sees, normalised, runs of spaces collapsed (an age can widen a column)."""
        out = f"exit {result.code}\n{result.stdout.rstrip()}\n== stderr\n{result.stderr.rstrip()}"
        lines = [re.sub(r" +", " ", line).rstrip() for line in self.normalize(out, result.tool).splitlines()]
        lines = [line for line in lines if not _TIMING.match(line)]
        for start in range(len(lines)):
            end = start
            while end < len(lines) and _DELETING.match(lines[end]):
                end += 1
            lines[start:end] = sorted(lines[start:end])
        return lines

    def same(self, pair: tuple[Result, Result], *, known: re.Pattern[str] | None = None, reason: str = "") -> None:
        """Both runs look the same to a user (exit status, stdout and stderr, normalised). With `known` (a known
        difference, docs/compatibility.md): the rest must be the same, kctrl's lines matching `known` and blank lines
        left out; then the test is an expected failure (`reason`) while those lines differ."""
        theirs, ours = (self.seen(r) for r in pair)
        if known is not None and theirs != ours:
            rest = [[line for line in lines if line and not known.search(line)] for lines in (theirs, ours)]
            assert rest[1] == rest[0], "\n".join(("kctrl:", *rest[0], "", "kapply:", *rest[1]))
            pytest.xfail(reason)
        assert ours == theirs, "\n".join(("kctrl:", *theirs, "", "kapply:", *ours))


def _namespaces(kube: Client) -> dict[str, str]:
    suffix = uuid.uuid4().hex[:5]
    made = {"kctrl": f"c-kctrl-kctl-{suffix}", "kapply": f"c-kctrl-kply-{suffix}"}
    for name in made.values():
        kube.create(Namespace.from_dict({"metadata": {"name": name}}))
    return made


def _delete_cluster_scoped(kube: Client, namespaces: dict[str, str]) -> None:
    """The ClusterRoles and ClusterRoleBindings `package install` made for the namespaces' installs."""
    for kind in (ClusterRoleBinding, ClusterRole):
        for obj in kube.list(kind):
            annotation = (obj.metadata.annotations or {}).get("packaging.carvel.dev/package", "")
            if any(annotation.endswith(f"-{ns}") for ns in namespaces.values()):
                try:
                    kube.delete(kind, obj.metadata.name)
                except ApiError as e:
                    if e.status.code != 404:
                        raise


def _manifests(*flags: str) -> str:
    argv = [sys.executable, "-m", "kapply", "controller", "manifests", "--api-groups", "carvel", *flags]
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout


@contextmanager
def carvel_controller(cluster: Cluster, kube: Client, namespace: str, directory: Path) -> Iterator[Path]:
    """`kapply controller --api-groups carvel -n NAMESPACE` with the rights its manifests grant, its CRDs installed
    (as tests/e2e/test_carvel_mode.py installs them), a global namespace of its own; afterwards the namespace's
    installs, repositories and Apps are deleted while it runs. Yields its log."""
    crds = directory / "carvel-crds.yml"
    crds.write_text(_manifests("--crds-only"))
    create_if_missing(kube, Namespace.from_dict({"metadata": {"name": "kapply-system"}}))
    kapply(cluster.kubeconfig, "deploy", "-a", "kapply-carvel-crds", "-n", "kapply-system", "-y", "-f", str(crds))
    global_namespace = f"t-global-{uuid.uuid4().hex[:6]}"
    log = directory / "carvel-controller.log"
    with ExitStack() as stack:
        stack.callback(remove_carvel_crds, cluster)  # last: after the objects and namespaces
        identity = stack.enter_context(controller_identity(kube, cluster.kubeconfig, directory, _manifests()))
        flags = ("-n", namespace, "--leader-elect=false", "--api-groups=carvel", PLAIN_HTTP)
        flags += (f"--packaging-global-namespace={global_namespace}", "--package-install-default-sync-period=30s")
        stack.enter_context(controller(identity.kubeconfig, log, *flags, env=tool_env("ytt")))
        try:
            yield log
        finally:
            try:
                delete_and_wait(kube, CarvelInstall, namespace)
                delete_and_wait(kube, CarvelRepository, namespace)
                delete_and_wait(kube, CarvelApp, namespace)
            finally:
                print(f"--- carvel controller ---\n{log.read_text() if log.exists() else ''}")
    assert "Traceback" not in log.read_text(), "the carvel controller crashed (its log is above)"


@contextmanager
def kctrl_clients(cluster: Cluster, kube: Client, kctrl: Path, directory: Path) -> Iterator[Clients]:
    """The two namespaces, each with its controller running; everything deleted afterwards."""
    install_crds(cluster, kube)
    for tool in TOOLS:
        (directory / tool).mkdir()
    namespaces = _namespaces(kube)
    try:
        with (
            carvel_controller(cluster, kube, namespaces["kctrl"], directory / "kctrl"),
            packaging_controller(
                cluster,
                kube,
                namespaces["kapply"],
                directory / "kapply",
                PLAIN_HTTP,
                "--package-install-default-sync-period=30s",
            ),
        ):
            yield Clients(kctrl, cluster.kubeconfig, namespaces)
    finally:
        _delete_cluster_scoped(kube, namespaces)
        for name in namespaces.values():
            kube.delete(Namespace, name)


def objects(kube: Client, kind: Any, namespace: str) -> list[dict[str, Any]]:
    """The namespace's objects of `kind` as dicts, by name."""
    found = [dict(o) if isinstance(o, dict) else o.to_dict() for o in kube.list(kind, namespace=namespace)]
    return sorted(found, key=lambda o: o["metadata"]["name"])
