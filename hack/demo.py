"""`make demo`: kapply against the local control plane started by `make cluster-up`.

Deploys examples/simple-app, redeploys it unchanged (no changes), changes it and
shows the diff, lists its history and resources, then deletes it.

Then the controller: it says which template tools it has (helm, kustomize and kbld as
`make tools-build` builds them, which `make demo` runs first; ytt from $KAPPLY_YTT or PATH),
runs `kapply controller` out of cluster for the namespace kapply-demo, deploys an App
templated with helm and one with kustomize (each skipped, saying so, when its tool is
missing), shows their status, and deletes them. The App CRD is installed as the tests
install it (the app kapply-crds in kapply-system), and is left installed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "hack"))
import tools  # noqa: E402  (hack/tools.py: where the built helm, kustomize and kbld are)

CACHE = Path(os.environ.get("KAPPLY_CACHE", Path.home() / ".cache" / "kapply"))
KUBECONFIG = Path(os.environ.get("KAPPLY_CLUSTER_DIR", CACHE / "cluster")) / "kubeconfig"
APP = REPO / "examples" / "simple-app" / "config.yml"
CRD = REPO / "config" / "controller" / "crd.yml"
NAMESPACE = "kapply-demo"
BUILT = ("helm", "kustomize", "kbld")  # what hack/tools.py builds for the controller (crane is the tests')
WAIT = 120.0  # seconds an App of the demo may take to reconcile

DEPLOYER = f"""
apiVersion: v1
kind: ServiceAccount
metadata: {{name: deployer, namespace: {NAMESPACE}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: deployer, namespace: {NAMESPACE}}}
rules: [{{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: deployer, namespace: {NAMESPACE}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: deployer}}
subjects: [{{kind: ServiceAccount, name: deployer, namespace: {NAMESPACE}}}]
"""

# Each App's files are inline (no network); the tool that templates them is its `template` step.
APPS = {
    "helm": f"""
apiVersion: kapply.dev/v1alpha1
kind: App
metadata: {{name: hello-helm, namespace: {NAMESPACE}}}
spec:
  serviceAccountName: deployer
  fetch:
  - inline:
      paths:
        chart/Chart.yaml: |
          {{apiVersion: v2, name: hello, version: 0.1.0}}
        chart/values.yaml: |
          greeting: hello from helm
        chart/templates/configmap.yaml: |
          apiVersion: v1
          kind: ConfigMap
          metadata: {{name: "{{{{ .Release.Name }}}}-greeting"}}
          data: {{greeting: "{{{{ .Values.greeting }}}}"}}
  template:
  - helmTemplate: {{path: chart}}
  deploy:
  - kapp: {{}}
""",
    "kustomize": f"""
apiVersion: kapply.dev/v1alpha1
kind: App
metadata: {{name: hello-kustomize, namespace: {NAMESPACE}}}
spec:
  serviceAccountName: deployer
  fetch:
  - inline:
      paths:
        kustomization.yaml: |
          namePrefix: kustomized-
          commonLabels: {{demo: hello}}
          resources: [configmap.yml]
        configmap.yml: |
          apiVersion: v1
          kind: ConfigMap
          metadata: {{name: greeting}}
          data: {{greeting: hello from kustomize}}
  template:
  - kustomize: {{}}
  deploy:
  - kapp: {{}}
""",
}


def kapply(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> None:
    shown = " ".join(args) + (" -f -" if stdin is not None else "")
    print(f"\n$ kapply {shown}", flush=True)
    extra = ["-f", "-"] if stdin is not None else []
    subprocess.run(
        [sys.executable, "-m", "kapply", *args, *extra],
        input=stdin,
        text=True,
        check=True,
        env={**os.environ, "KUBECONFIG": str(KUBECONFIG), **(env or {})},
    )


def template_tools() -> dict[str, str]:
    """The `$KAPPLY_<TOOL>` variables of the template tools found (a variable already set wins, then what
    `make tools-build` built, then PATH); each tool is listed, a missing one with what lacking it means."""
    found: dict[str, str] = {}
    print("\n# the controller's template tools")
    for name in (*BUILT, "ytt"):
        variable = f"KAPPLY_{name.upper()}"
        built = tools.binary(tools.TOOLS[name]) if name in BUILT else None
        path = os.environ.get(variable) or (str(built) if built and built.exists() else shutil.which(name))
        if path:
            found[variable] = path
            print(f"  {name:<10} {path}")
        else:
            how = "`make tools-build` builds it" if name in BUILT else "set $KAPPLY_YTT to a ytt release binary"
            print(f"  {name:<10} missing: Apps that template with {name} fail ({how})")
    return found


async def _namespaces(*names: str) -> None:
    from kapply.api import AsyncClient
    from kapply.cli.package.kinds import NAMESPACES

    async with AsyncClient(KUBECONFIG) as api:
        for name in names:
            if await api.cluster.get(NAMESPACES, None, name) is None:
                await api.cluster.create(
                    NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                )


async def _condition(name: str) -> tuple[str, str]:
    """The App's latest condition and its error message, if any."""
    from kapply.api import AsyncClient
    from kapply.controller.apps import APPS as APP_TYPE

    async with AsyncClient(KUBECONFIG) as api:
        app = await api.cluster.get(APP_TYPE, NAMESPACE, name) or {}
    status = app.get("status") or {}
    conditions = status.get("conditions") or [{}]
    return str(conditions[-1].get("type", "")), str(status.get("usefulErrorMessage", ""))


def reconciled(name: str) -> None:
    """Wait until the controller reconciled the App; exit with its error when it failed."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        condition, error = asyncio.run(_condition(name))
        if condition == "ReconcileSucceeded":
            return
        if condition == "ReconcileFailed":
            sys.exit(f"App {name} failed: {error}")
        time.sleep(1)
    sys.exit(f"App {name} did not reconcile within {WAIT:.0f}s")


@contextmanager
def controller(env: dict[str, str]) -> Iterator[None]:
    """`kapply controller` for the namespace kapply-demo, logging to a file (named when it stops)."""
    log = Path(tempfile.mkdtemp(prefix="kapply-demo-")) / "controller.log"
    argv = ["controller", "-n", NAMESPACE, "--leader-elect=false", "--packaging=false", "--metrics-bind-address=0"]
    print(f"\n$ kapply {' '.join(argv)} &   # logging to {log}", flush=True)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "kapply", *argv],
            env={**os.environ, "KUBECONFIG": str(KUBECONFIG), **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield
    finally:
        process.terminate()
        process.wait(timeout=30)
        print(f"\n# the controller stopped; its log: {log}")


def controller_demo() -> None:
    env = template_tools()
    print("\n# kapply controller: Apps templated with helm and kustomize, reconciled out of cluster")
    asyncio.run(_namespaces("kapply-system", NAMESPACE))
    kapply("deploy", "-a", "kapply-crds", "-n", "kapply-system", "-f", str(CRD), "-y")
    kapply("deploy", "-a", "demo-deployer", "-n", NAMESPACE, "-y", stdin=DEPLOYER)
    with controller(env):
        deployed = []
        for tool, manifest in APPS.items():
            if f"KAPPLY_{tool.upper()}" not in env:
                print(f"\n# skipped: the App templated with {tool}, which is missing")
                continue
            kapply("deploy", "-a", f"demo-{tool}", "-n", NAMESPACE, "-y", stdin=manifest)
            reconciled(f"hello-{tool}")
            kapply("app", "status", "-a", f"hello-{tool}", "-n", NAMESPACE, "--tty")
            kapply("inspect", "-a", f"hello-{tool}.app", "-n", NAMESPACE, "--tty")  # what the App deployed
            deployed.append(tool)
        if deployed:
            kapply("ls", "-n", NAMESPACE, "--tty")  # the Apps' own apps (`<name>.app`) beside the demo's
        for tool in deployed:  # the controller deletes what each App deployed before the App goes
            kapply("delete", "-a", f"demo-{tool}", "-n", NAMESPACE, "-y")


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
    controller_demo()
    print("\nThe cluster keeps running; stop it with `make cluster-down`.")


if __name__ == "__main__":
    main()
