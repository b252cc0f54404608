"""Seed 000 ("Identify ghost diff during kapp Controller reconciliation") as its reader types it: the real kctrl and
the real kubectl, each command word for word, against `kapply controller --api-groups carvel` (issue 31). Two things
are the test's own: the registry (a repository bundle `my-pkg-repo:1.0.0` pushed to the test registry, as
tests/e2e/test_seed_000_packages.py pushes it) and the namespace, which the kubeconfig's context names (kctrl 0.53
refuses `default` for the service account it creates), so no command needs `-n`. An HPA-like actor scales the
Deployment down after every sync, as the blog's HPA does.

What the blog shows is asserted by its shape and key lines (kctrl 0.53 tails the reconcile's stages where the blog's
older kctrl printed condition lines; kapp-controller 0.53, like kapply, names the kapp app `pkg-demo.app` where the
blog's named it `pkg-demo-ctrl`: docs/compatibility.md "Known differences"). Then kapply's own: the ghost diff named on
the PackageInstall's status, and the overlay that status suggests, added as it says, ending the app-changes."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Namespace
from lightkube.types import PatchType

from tests.e2e.controller_harness import (
    controller,
    controller_identity,
    endpoint,
    tool_env,
    wait_syncs,
)
from tests.e2e.harness import Cluster, eventually, external_tool
from tests.e2e.package_cli_harness import (
    PLAIN_HTTP,
    REF,
    delete_install_roles,
    keeps_scaling,
    package_document,
    push_simple_app,
    replicas,
)
from tests.e2e.packaging_harness import (
    CarvelApp,
    CarvelInstall,
    CarvelRepository,
    carvel_crds,
    carvel_manifests,
    delete_and_wait,
    get,
    status,
)
from tests.e2e.registry import Registry

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
INSTALL = "pkg-demo"
CHANGE = re.compile(rf"^{INSTALL}\.app-change-[a-z0-9]+$")
GHOST_CHANGE = "update: Op: 0 create, 0 delete, 1 update, 0 noop, 0 exists / Wait to: 1 reconcile, 0 delete, 0 noop"


TIME = re.compile(r"^\d{1,2}:\d\d:\d\d[AP]M: ")
AGO = re.compile(r" \((\d+[smh])+ ago\)$")
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Shell:
    """A reader's terminal: `bash` in a pseudo-terminal (`script`), as the blog's reader types, so kctrl prints what
    it prints to a terminal; in a working directory of its own, the real kctrl and kubectl on PATH, a kubeconfig
    whose context names the story's namespace, a discovery cache of its own for kubectl."""

    directory: Path
    env: dict[str, str]

    def __call__(self, command: str) -> str:
        """What the terminal shows (stdout and stderr, colours left out); the command must exit 0."""
        done = subprocess.run(
            ["script", "-qec", shlex.join(["bash", "-o", "pipefail", "-c", command]), "/dev/null"],
            cwd=self.directory,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
        )
        shown = ESCAPES.sub("", done.stdout.replace("\r\n", "\n"))
        print(f"[{time.strftime('%H:%M:%S')}] $ {command}\n{shown}")  # the session, shown when the test fails
        assert done.returncode == 0, f"$ {command}\nexit {done.returncode}\n{shown}{done.stderr}"
        return shown


@dataclass(frozen=True)
class Story:
    namespace: str
    sh: Shell
    log: Path  # the carvel controller's
    repository: str  # the repository bundle's reference, in the blog's place of docker.io/rohitagg2020/...


def _shell(cluster: Cluster, kctrl: Path, namespace: str, directory: Path) -> Shell:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for context in config["contexts"]:
        context["context"]["namespace"] = namespace
    kubeconfig = directory / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    tools = directory / "bin"
    tools.mkdir()
    (tools / "kctrl").symlink_to(kctrl)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KCTRL_", "KAPP_"))}
    env |= {
        "KUBECONFIG": str(kubeconfig),
        "KUBECACHEDIR": str(directory / "kube-cache"),
        "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    work = directory / "home"
    work.mkdir()
    return Shell(work, env)


@pytest.fixture(scope="module")
def story(
    cluster: Cluster, kube: Client, oci_registry: Registry, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Story]:
    """The namespace; kapp-controller's CRDs and `kapply controller --api-groups carvel -n NAMESPACE` with the rights
    its manifests grant (as tests/e2e/test_carvel_mode.py runs it; a global namespace of its own, plain http to the
    test registry); the reader's shell and the pushed repository bundle. Afterwards the install, repository and App
    are deleted while the controller runs, then the CRDs, what kctrl made outside the namespace, and the namespace."""
    kctrl = external_tool("kctrl", "KAPPLY_KCTRL")
    directory = tmp_path_factory.mktemp("seed-000-kctrl")
    pushed = push_simple_app(oci_registry, directory / "bundles")
    repository = pushed.repository("1.0.0", package_document("1.0.0", pushed.app_image))
    namespace = f"seed-000-{uuid.uuid4().hex[:5]}"
    log = directory / "controller.log"
    with ExitStack() as stack:
        kube.create(Namespace.from_dict({"metadata": {"name": namespace}}))
        stack.callback(kube.delete, Namespace, namespace)
        stack.callback(delete_install_roles, kube, namespace)
        stack.enter_context(carvel_crds(cluster, kube, directory))  # left after the objects
        identity = stack.enter_context(controller_identity(kube, cluster.kubeconfig, directory, carvel_manifests()))
        flags = ("-n", namespace, "--leader-elect=false", "--api-groups=carvel", PLAIN_HTTP)
        flags += (f"--packaging-global-namespace=t-global-{uuid.uuid4().hex[:6]}",)
        flags += ("--package-install-default-sync-period=30s",)
        stack.enter_context(controller(identity.kubeconfig, log, *flags, env=tool_env("ytt")))
        try:
            yield Story(namespace, _shell(cluster, kctrl, namespace, directory), log, repository)
            for kind in (CarvelInstall, CarvelRepository, CarvelApp):
                delete_and_wait(kube, kind, namespace)
        finally:
            print(f"--- controller ---\n{log.read_text() if log.exists() else ''}")
    assert "Traceback" not in log.read_text(), "the controller crashed (its log is above)"


def kctrl_said(out: str, *lines: str) -> list[str]:
    """kctrl's output, its lines stripped (a line's time, `1:38:45PM: `, and a tailed stage's `(1s ago)` left out):
    it starts with the target cluster, ends with `Succeeded`, and has `lines` in this order (each a regular
    expression matching a whole line)."""
    said = [AGO.sub("", TIME.sub("", line)).strip() for line in out.strip().splitlines()]
    assert re.fullmatch(r"Target cluster 'https://127\.0\.0\.1:\d+' \(nodes: [\w-]+(, \d+ more)?\)", said[0]), out
    assert said[-1] == "Succeeded", out
    at = 0
    for line in lines:
        found = next((i for i in range(at, len(said)) if re.fullmatch(line, said[i])), None)
        assert found is not None, f"no line {line!r} after line {at} of:\n{out}"
        at = found + 1
    return said


def available(out: str, namespace: str) -> list[list[str]]:
    """The rows of kctrl's `package available list --summary=false`, checked to be laid out as the blog shows them."""
    said = kctrl_said(out, f"Available packages in namespace '{namespace}'", "Name +Version +Released at")
    header = next(i for i, line in enumerate(said) if line.startswith("Name "))
    rows = said[header + 1 : said.index("", header)]
    return [re.split(r"  +", row) for row in rows]


def replicas_diff(namespace: str) -> tuple[str, ...]:
    """The lines of kapp's diff setting the replicas back from 1 to 2 (`missing` patterns)."""
    return (
        rf"@@ update deployment/simple-app \(apps/v1\) namespace: {namespace} @@",
        r"\d+ +- +replicas: 1",
        r"\d+ \+ +replicas: 2",
    )


def missing(out: str, patterns: tuple[str, ...]) -> list[str]:
    """The `patterns` (regular expressions, each matching a whole stripped line, in this order) that `out` lacks."""
    lines = [line.strip() for line in out.splitlines()]
    at, lacking = 0, []
    for pattern in patterns:
        found = next((i for i in range(at, len(lines)) if re.fullmatch(pattern, lines[i])), None)
        if found is None:
            lacking.append(pattern)
        else:
            at = found + 1
    return lacking


def described(namespace: str) -> tuple[str, ...]:
    """What `kubectl describe app pkg-demo` shows after the upgrade, in order: the blog's fields (the deploy's output
    with `--diff-changes=true`: the replicas set back to 2), then the field kapply names. The actor's write may land
    while kapp waits on the deploy, before kapply records what it applied: that record must not take the actor's
    replicas for kapply's (kapply.apply.execute `_record`), or the next sync finds nothing to do and says nothing."""
    return (
        r"Status:",
        r"Type: +ReconcileSucceeded",
        r"Consecutive Reconcile Successes: +\d+",
        r"Deploy:",
        r"Exit Code: +0",
        r"Finished: +true",
        r"Started At: +\S+",
        r"Stdout: +Target cluster .*",
        *replicas_diff(namespace),
        r"Changes",
        rf"{namespace} +simple-app +Deployment +\S+ +update +- +reconcile +ok +-",
        r"Op: +0 create, 0 delete, 1 update, 0 noop, 0 exists",
        r"Wait to: 1 reconcile, 0 delete, 0 noop",
        # kapply's: the field and its writer, held (the actor set it again) or a ghost diff (set back once more)
        r"(Field Owners|Ghost Diffs):",
        r"Path: +spec\.replicas",
        rf"Resource: +deployment/simple-app \(apps/v1\) namespace: {namespace}",
        r"Written By: +kubectl \(Update, scale\)",
    )


def table(out: str) -> list[list[str]]:
    """A kubectl table's rows, cells split at runs of two or more spaces (or one, for grep's output)."""
    return [re.split(r"\s+", line.strip()) for line in out.strip().splitlines()]


def change_maps(sh: Shell) -> dict[str, list[str]]:
    """`kubectl get configmaps | grep pkg-demo`, by name: the kapp app's record and its app-changes."""
    rows = {row[0]: row[1:] for row in table(sh("kubectl get configmaps | grep pkg-demo"))}
    assert f"{INSTALL}.app" in rows, rows
    assert all(name == f"{INSTALL}.app" or CHANGE.match(name) for name in rows), rows
    return rows


def changes(sh: Shell) -> set[str]:
    return {name for name in change_maps(sh) if CHANGE.match(name)}


def overlaid(kube: Client, namespace: str) -> bool:
    """The App has the overlays Secret among its ytt step's files, and has reconciled that spec successfully."""
    app = get(kube, CarvelApp, namespace, INSTALL) or {}
    paths = app["spec"]["template"][0]["ytt"].get("inline", {}).get("pathsFrom", [])
    reported = app.get("status") or {}
    return (
        {"secretRef": {"name": f"{INSTALL}-ghost-diffs"}} in paths
        and reported.get("observedGeneration") == app["metadata"]["generation"]
        and (reported.get("conditions") or [{}])[0].get("type") == "ReconcileSucceeded"
    )


def scale_up_once(kube: Client, namespace: str) -> None:
    """The Deployment scaled up once, as `kubectl scale` (the actor brings it back down): a write the drift watch
    sees, calling for a sync."""
    kube.patch(
        Deployment.Scale,
        "simple-app",
        {"spec": {"replicas": 3}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
        field_manager="kubectl",
    )


def edited(package: dict[str, Any]) -> dict[str, Any]:
    """The blog's edit of `copy-simple-app-package.yaml`: labels starting with `kapp` removed, `--diff-changes=true`
    added to the kapp section's rawOptions, 1.0.0 changed to 2.0.0 in `spec.version` and `metadata.name`."""
    metadata = package["metadata"]
    metadata["labels"] = {k: v for k, v in (metadata.get("labels") or {}).items() if not k.startswith("kapp")}
    (kapp,) = (step["kapp"] for step in package["spec"]["template"]["spec"]["deploy"])
    kapp["rawOptions"] = [*kapp.get("rawOptions", []), "--diff-changes=true"]
    package["spec"]["version"] = "2.0.0"
    metadata["name"] = metadata["name"].replace("1.0.0", "2.0.0")
    return package


def test_seed_000_the_ghost_diff_story_typed_with_kctrl_and_kubectl(story: Story, kube: Client) -> None:
    sh, ns = story.sh, story.namespace

    # "First, we need to install the package repository."
    out = sh(f"kctrl package repository add -r demo-pkg-repo --url {story.repository}")
    kctrl_said(out, "Waiting for package repository to be added", "Deploy succeeded")

    # "... we can check the list of available packages."
    out = sh("kctrl package available list --summary=false")
    assert available(out, ns) == [[REF, "1.0.0", "2022-04-21 00:00:00 +0000 UTC"]], out

    # "Let's install the package."
    out = sh("kctrl package install -i pkg-demo -p simple-app.corp.com --version 1.0.0")
    kctrl_said(
        out,
        f"Creating service account 'pkg-demo-{ns}-sa'",
        f"Creating cluster admin role 'pkg-demo-{ns}-cluster-role'",
        f"Creating cluster role binding 'pkg-demo-{ns}-cluster-rolebinding'",
        "Creating package install resource",
        "Waiting for PackageInstall reconciliation for 'pkg-demo'",
        "Deploy succeeded",
    )

    # "The output should show two running pods which is part of simple-app"
    def pods() -> list[list[str]] | None:
        rows = table(sh("kubectl get pods"))
        running = [r for r in rows[1:] if re.fullmatch(r"simple-app-[a-z0-9]+-[a-z0-9]{5}", r[0]) and r[2] == "Running"]
        return rows if rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] and len(running) == 2 else None

    eventually(pods, timeout=30, what="two running simple-app pods")

    # "Let's check the configmaps.": the app's record and the install's app-change (kapply's app-changes also keep
    # the deploy's masked diff: DATA 2)
    listed = change_maps(sh)
    first = {name for name in listed if CHANGE.match(name)}
    assert len(first) == 1 and listed[f"{INSTALL}.app"][0] == "1", listed

    # The HPA scales the Deployment down after each sync: the controller sets it back (a ghost diff, one more
    # app-change), then holds the field its writer keeps setting (kapply's; kapp-controller sets it back every sync
    # period, one app-change each).
    with keeps_scaling(kube, ns, 1) as scaled:
        # "We can see that one more configmap is generated. If I check the configmap content, I can see that there
        # has been one update"
        ghost = eventually(lambda: changes(sh) - first, timeout=60, what=f"a ghost diff's app-change ({scaled})")
        (name,) = ghost  # type: ignore[misc]

        def finished() -> dict[str, Any] | None:
            shown = yaml.safe_load(sh(f"kubectl get configmap {name} -oyaml"))
            assert (shown["apiVersion"], shown["kind"]) == ("v1", "ConfigMap")
            return shown if "successful" in json.loads(shown["data"]["spec"]) else None

        shown: dict[str, Any] = eventually(finished, timeout=30, what=f"{name} finished")  # type: ignore[assignment]
        spec = json.loads(shown["data"]["spec"])
        assert spec["successful"] is True and spec["namespaces"] == [ns], spec
        assert spec["description"] == GHOST_CHANGE, spec
        assert {"startedAt", "finishedAt"} <= spec.keys(), spec
        # "... but I don't know which resource got updated": kapply's app-change says (the blog's closing note
        # wishes kapp did)
        assert not missing(shown["data"]["diff"], replicas_diff(ns)), shown["data"]["diff"]

        # kapply's own, without a copy of the package: the PackageInstall names the ghost diff, and suggests the overlay
        # that ends it (added once the blog's story is told)
        reported = eventually(
            lambda: (
                (status(kube, CarvelInstall, ns, INSTALL).get("ghostDiffs") or {}).get("suggestedOverlay")
                and status(kube, CarvelInstall, ns, INSTALL)["ghostDiffs"]
            ),
            timeout=60,
            what="the install's ghost diff",
        )
        diff = next(d for d in reported["diffs"] if d["path"] == "spec.replicas")  # type: ignore[index]
        assert diff["resource"] == f"deployment/simple-app (apps/v1) namespace: {ns}"
        assert diff["desired"] == "2" and diff["writtenBy"].startswith("kubectl (Update, scale)"), diff
        overlay = str(reported["suggestedOverlay"])  # type: ignore[index]
        save, *add = [line.removeprefix("#!   ") for line in overlay.splitlines() if line.startswith("#!   kubectl ")]
        sh(save)  # as the overlay's own comment says
        assert (sh.directory / "ghost-diffs.yml").read_text().strip() == overlay.strip()
        assert len(add) == 2, overlay

        # "we will make a copy of the package"
        sh("kubectl get pkg simple-app.corp.com.1.0.0 -oyaml > copy-simple-app-package.yaml")
        copy = sh.directory / "copy-simple-app-package.yaml"
        copy.write_text(yaml.safe_dump(edited(yaml.safe_load(copy.read_text()))))
        out = sh("kubectl apply -f copy-simple-app-package.yaml")
        assert out.strip() == "package.data.packaging.carvel.dev/simple-app.corp.com.2.0.0 created", out

        # "we can see our locally created package as well"
        out = sh("kctrl package available list --summary=false")
        assert [row[:2] for row in available(out, ns)] == [[REF, "1.0.0"], [REF, "2.0.0"]], out

        # "Let's update the package to the version 2.0.0"
        before = changes(sh)
        out = sh("kctrl package installed update -i pkg-demo -p simple-app.corp.com --version 2.0.0")
        kctrl_said(
            out,
            f"Updating package install for 'pkg-demo' in namespace '{ns}'",  # kctrl 0.53's words
            "Waiting for PackageInstall reconciliation for 'pkg-demo'",
            "Deploy succeeded",
        )
        assert status(kube, CarvelInstall, ns, INSTALL)["version"] == "2.0.0"

        # "Now, if we will run `app describe` again, we will see the exact diff": the new version's deploy options end
        # the hold, so its deploy sets the replicas back with the diff; retyped until that deploy has ended. kapply's
        # App status also names the field and its writer.
        eventually(
            lambda: not missing(sh("kubectl describe app pkg-demo"), described(ns)),
            timeout=30,
            what="kubectl describe app pkg-demo showing the deploy's diff and the field (the session is above)",
        )
        # "we will see that another configmap has been generated"
        assert changes(sh) > before

        # The overlay saved above, added as its own comment says, ends the app-changes
        for command in add:
            sh(command)
        eventually(lambda: overlaid(kube, ns), timeout=30, what="the App reconciled with the overlay")
        settled = changes(sh)
        scale_up_once(kube, ns)
        wait_syncs(endpoint(story.log), ns, INSTALL)
        assert changes(sh) == settled, "no new app-change once the overlay is in place"
        assert replicas(kube, ns) == 1, "the cluster's value is kept"
