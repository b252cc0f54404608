"""The real kctrl beside `kapply package`, on the same cluster (issue 31): each client in a namespace of its own
(names of equal length, so tables align alike), each namespace reconciled by its own `kapply controller --api-groups
carvel` process: both clients speak kapp-controller's groups (kapply with `--api-groups=carvel`, since kapply's own
CRDs may be served too, and then are spoken first). The CRDs are installed once for both; each controller has its own
global namespace (empty: the packages seen are the namespace's own) and runs without a leader Lease.

Normalising leaves what a user and a script see: the namespaces become `NS`, the program name in `<program>: Error:`
becomes `PROG`, and times of day, ages, timestamps, uids and resource versions become placeholders. What the
cluster's timing decides is left out (`_TIMING`: the output a tail quotes, `Fetch started`; a tailed stage's `(6s
ago)`); kctrl's `Deleting '<Kind>': <name>` lines, in its map's random order, are compared sorted."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from lightkube import Client
from lightkube.resources.core_v1 import Namespace

from tests.compat.harness import Result
from tests.e2e.controller_harness import controller, controller_identity, tool_env
from tests.e2e.harness import Cluster
from tests.e2e.package_cli_harness import PLAIN_HTTP, delete_install_roles
from tests.e2e.packaging_harness import (
    CarvelApp,
    CarvelInstall,
    CarvelRepository,
    carvel_crds,
    carvel_manifests,
    delete_and_wait,
)

TOOLS = ("kctrl", "kapply")


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
# kctrl's informer race: a tail (an install's App, a deleted repository) that ends before kctrl's wait for the
# informer's cache sees it synced (within its 100 ms) fails with this, after telling what it told; tailing having
# failed, the wait then says the resource's conditions. Timing, not behaviour: left out of kctrl's output, with those
# conditions.
_CACHE_RACE = re.compile(
    r"^TIME: Error tailing (or reconciling )?(app|Package Repository): Timed out waiting for caches to sync$"
)
_CONDITION = re.compile(r"^TIME: package(install|repository)/\S+ \(\S+\) namespace: NS: (?!DeletionSucceeded$)\w+$")


# The lines of kctrl's informer tails (an install's App, a kicked repository). What a tail tells depends on the
# cluster's timing: it misses what the object did before its list, it is cut where the wait ends, and how many changes
# come before the object observes its generation (`Waiting for generation N to be observed`, each) varies.
_TAIL = re.compile(
    r"^TIME: (Fetching|Fetch (succeeded|failed)|Template (succeeded|failed)|(Deploy|Delete) (started|succeeded|failed)"
    r"|Deploying|Deleting|App '.*' in namespace 'NS' deleted)$"
)
_GENERATION = re.compile(r"^TIME: Waiting for generation \d+ to be observed$")


_GAVE_UP = "Timed out waiting for caches to sync"  # kctrl's informer, stopped before its cache synced (exit 1)


class Tail(Enum):
    """How two tails are compared (their `Waiting for generation` lines left out): the SAME lines (a wait that ends
    after what it tails, as a deletion's: the App gone before the install), or one WITHIN the other, the two ending
    alike (the App may have reconciled before either tail listed it, or the wait may end first)."""

    SAME = "same"
    WITHIN = "within"


def _tail_apart(lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines but the tail's, and the tail's (without its `Waiting for generation` lines)."""
    rest = [line for line in lines if not (_TAIL.match(line) or _GENERATION.match(line))]
    return rest, [line for line in lines if _TAIL.match(line)]


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
        if tool == "kapply":
            argv.append("--api-groups=carvel")
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
        """Each client's namespace becomes NS (the other's too: a listing of all namespaces shows both)."""
        for name in self.ns.values():
            text = text.replace(name, "NS")
        for pattern, replacement in _REPLACEMENTS:
            text = pattern.sub(replacement, text)
        return text

    def seen(self, result: Result) -> list[str]:
        """What a user sees, normalised, runs of spaces collapsed (an age can widen a column)."""
        out = f"exit {result.code}\n{result.stdout.rstrip()}\n== stderr\n{result.stderr.rstrip()}"
        lines = [re.sub(r" +", " ", line).rstrip() for line in self.normalize(out, result.tool).splitlines()]
        lines = [line for line in lines if not _TIMING.match(line)]
        raced = next((i for i, line in enumerate(lines) if _CACHE_RACE.match(line)), None)
        if raced is not None:
            del lines[raced : raced + (2 if lines[raced + 1 : raced + 2] == [""] else 1)]
            lines = [line for line in lines if not _CONDITION.match(line)]
        for start in range(len(lines)):
            end = start
            while end < len(lines) and _DELETING.match(lines[end]):
                end += 1
            lines[start:end] = sorted(lines[start:end])
        return lines

    def same(self, pair: tuple[Result, Result], *, tail: Tail | None = None) -> None:
        """Both runs look the same to a user (exit status, stdout and stderr, normalised). With `tail` (a command that
        tails an install's App or a repository as kctrl's informer does): the lines of the tail are compared as `tail`
        says, the rest as they are."""
        theirs, ours = (self.seen(r) for r in pair)
        if pair[0].code == 1 and _GAVE_UP in pair[0].stderr:
            # kctrl's informer gave up: the object had reconciled before its cache said it had synced (a fast
            # controller; docs/compatibility.md, Known differences). What it said before its tail is kapply's; the
            # tails saw what each one's timing let it see.
            told, said = (_tail_apart(lines)[0] for lines in (theirs, ours))
            told = told[1 : told.index("== stderr")]
            assert ours[0] == "exit 0" and said[1 : len(told) + 1] == told, "\n".join(
                ("kctrl:", *theirs, "", "kapply:", *ours)
            )
            return
        if tail is not None:
            (theirs, their_tail), (ours, our_tail) = (_tail_apart(lines) for lines in (theirs, ours))
            told = "\n".join(("kctrl's tail:", *their_tail, "", "kapply's tail:", *our_tail))
            if tail is Tail.SAME:
                assert our_tail == their_tail, told
            else:
                shorter, longer = sorted((their_tail, our_tail), key=len)
                assert any(longer[i : i + len(shorter)] == shorter for i in range(len(longer) - len(shorter) + 1)), told
                assert their_tail[-1:] == our_tail[-1:] or not (their_tail and our_tail), told
        assert ours == theirs, "\n".join(("kctrl:", *theirs, "", "kapply:", *ours))


def _namespaces(kube: Client) -> dict[str, str]:
    suffix = uuid.uuid4().hex[:5]
    made = {"kctrl": f"c-kctrl-kctl-{suffix}", "kapply": f"c-kctrl-kply-{suffix}"}
    for name in made.values():
        kube.create(Namespace.from_dict({"metadata": {"name": name}}))
    return made


@contextmanager
def carvel_controllers(cluster: Cluster, kube: Client, namespaces: dict[str, str], directory: Path) -> Iterator[None]:
    """kapp-controller's CRDs (as tests/e2e/test_carvel_mode.py installs them) and, for each namespace, `kapply
    controller --api-groups carvel -n NAMESPACE` with the rights its manifests grant (one identity for both) and a
    global namespace of its own; afterwards the namespaces' installs, repositories and Apps are deleted while they
    run, then the CRDs."""
    logs = [directory / f"{tool}-controller.log" for tool in namespaces]
    with ExitStack() as stack:
        stack.enter_context(carvel_crds(cluster, kube, directory))  # left last: after the objects and namespaces
        identity = stack.enter_context(controller_identity(kube, cluster.kubeconfig, directory, carvel_manifests()))
        for namespace, log in zip(namespaces.values(), logs, strict=True):
            flags = [
                *("-n", namespace, "--leader-elect=false", "--api-groups=carvel", PLAIN_HTTP),
                f"--packaging-global-namespace=t-global-{uuid.uuid4().hex[:6]}",
                "--package-install-default-sync-period=30s",
            ]
            stack.enter_context(controller(identity.kubeconfig, log, *flags, env=tool_env("ytt")))
        try:
            yield
        finally:
            try:
                for namespace in namespaces.values():
                    delete_and_wait(kube, CarvelInstall, namespace)
                    delete_and_wait(kube, CarvelRepository, namespace)
                    delete_and_wait(kube, CarvelApp, namespace)
            finally:
                for log in logs:
                    print(f"--- {log.name} ---\n{log.read_text() if log.exists() else ''}")
    for log in logs:
        assert "Traceback" not in log.read_text(), f"a carvel controller crashed ({log.name} is above)"


@contextmanager
def kctrl_clients(cluster: Cluster, kube: Client, kctrl: Path, directory: Path) -> Iterator[Clients]:
    """The two namespaces, each with its controller running; everything deleted afterwards."""
    namespaces = _namespaces(kube)
    try:
        with carvel_controllers(cluster, kube, namespaces, directory):
            yield Clients(kctrl, cluster.kubeconfig, namespaces)
    finally:
        delete_install_roles(kube, *namespaces.values())
        for name in namespaces.values():
            kube.delete(Namespace, name)


def objects(kube: Client, kind: Any, namespace: str) -> list[dict[str, Any]]:
    """The namespace's objects of `kind` as dicts, by name."""
    found = [dict(o) if isinstance(o, dict) else o.to_dict() for o in kube.list(kind, namespace=namespace)]
    return sorted(found, key=lambda o: o["metadata"]["name"])
