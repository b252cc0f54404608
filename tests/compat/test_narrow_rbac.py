"""Users with less than `admin`, as kapp serves them:

- one who may create, update, get, list and delete but not `patch`: kapp records the last-applied copy after a create
  with an update, so the deploy succeeds and the object carries kapp's annotations;
- one who may not list Pods (here: only ConfigMaps, in two namespaces): the deploy succeeds, and kapp says that Pods
  cannot be watched for their logs (`Pod watching error: ...`, on stdout in every mode but `--json`); `logs` says so
  too, and ends well.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap, Secret

from tests.compat.accounts import service_account_kubeconfig
from tests.compat.harness import DEPLOY_STDIN, TOOLS, Harness, Pair
from tests.e2e.harness import Cluster

pytestmark = pytest.mark.compat


def kubeconfigs(
    both: Harness, kube: Client, cluster: Cluster, tmp_path: Path, rules: list[dict], pairs: int = 1
) -> dict[str, dict[str, str]]:
    """Each tool's environment: a ServiceAccount allowed `rules` in that tool's namespaces (of the first `pairs`)."""
    envs = {}
    for tool in TOOLS:
        namespaces = [pair[tool] for pair in both.namespaces.pairs[:pairs]]
        path = service_account_kubeconfig(
            kube, cluster.kubeconfig, namespaces[0], rules, namespaces, tmp_path / f"{tool}.kubeconfig"
        )
        envs[tool] = {"KUBECONFIG": str(path)}
    return envs


def run(both: Harness, envs: dict[str, dict[str, str]], *args: str, input: str) -> Pair:
    return Pair(*(both.run_one(tool, args, input=input, env=envs[tool]) for tool in TOOLS))


NO_PATCH = [
    {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list", "create", "update", "delete"]}
]
# the server adds `type: Opaque`: the object stored differs from the one sent, so the record needs a second write
SECRET = "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: s3cret}\n"


def test_a_user_without_patch_can_deploy(both: Harness, kube: Client, cluster: Cluster, tmp_path: Path):
    envs = kubeconfigs(both, kube, cluster, tmp_path, NO_PATCH)
    deploy = (*DEPLOY_STDIN, "-y")
    pair, _ = without_watching_error(both, run(both, envs, *deploy, input=SECRET))
    both.same(pair, exact=False)
    assert pair.kapply.code == 0, pair.kapply.output
    both.same_objects((ConfigMap, Secret))
    pair, _ = without_watching_error(both, run(both, envs, *deploy, "--diff-run", "--diff-exit-status", input=SECRET))
    both.same(pair, exact=False)
    assert pair.kapply.code == 2  # the record holds: nothing to change


CONFIG_MAPS_ONLY = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]
MANIFEST = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-1}\ndata: {foo: bar}\n---\n"
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-2, namespace: '{ns2}'}\ndata: {foo: bar}\n"
)
WATCHING = re.compile(
    r'Pod watching error: pods is forbidden: [^\n]*in the namespace\(s\) "[^"\n]*"(?:, "[^"\n]*")*\n?'
)


def without_watching_error(both: Harness, pair: Pair) -> tuple[Pair, list[str]]:
    """The runs without kapp's `Pod watching error: ...`, and that error as each printed it (normalised). kapp writes
    it past its UI when its watch gives up, at a moment that varies, with no newline: it takes the place of the blank
    line before the next section, or the next line is glued to it. So blank lines are left out of the comparison."""
    found = [[both.normalize(m.rstrip("\n"), r.tool) for m in WATCHING.findall(r.stdout)] for r in pair]
    stripped = Pair(
        *(replace(r, stdout="\n".join(line for line in WATCHING.sub("", r.stdout).split("\n") if line)) for r in pair)
    )
    return stripped, [text for texts in found for text in texts]


def test_a_user_who_may_not_list_pods_is_told(both: Harness, kube: Client, cluster: Cluster, tmp_path: Path):
    both.namespaces.new()
    envs = kubeconfigs(both, kube, cluster, tmp_path, CONFIG_MAPS_ONLY, pairs=2)
    pair = run(both, envs, *DEPLOY_STDIN, "-y", input=MANIFEST)
    stripped, errors = without_watching_error(both, pair)
    both.same(stripped, exact=False)
    assert (
        errors
        == [
            'Pod watching error: pods is forbidden: User cannot list resource "pods" in API group "" in the '
            'namespace(s) "NS", "NS2"'
        ]
        * 2
    )
    for result in pair:
        assert result.code == 0, result.output
    pair = run(both, envs, *DEPLOY_STDIN, "-y", "--tty=false", input=MANIFEST)
    stripped, errors = without_watching_error(both, pair)
    both.same(stripped, exact=False)
    assert len(errors) in (0, 2)  # nothing to apply: no logs to show, with either tool
    pair = run(
        both,
        envs,
        *DEPLOY_STDIN,
        "-y",
        "--logs=false",
        input=MANIFEST.replace("bar", "baz"),
    )
    both.same(pair, exact=False)
    assert "Pod watching error" not in pair.kapply.stdout
    stripped, errors = without_watching_error(both, run(both, envs, "logs", "-a", "app", "-n", "{ns}", input=""))
    both.same(stripped)
    assert (
        errors
        == [
            'Pod watching error: pods is forbidden: User cannot list resource "pods" in API group "" in the '
            'namespace(s) "NS"'
        ]
        * 2
    )


NO_WATCH = [
    {
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "verbs": ["get", "list", "create", "update", "patch", "delete"],
    },
    {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]},
]
SLOW_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  minReadySeconds: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: registry.invalid/web:1}]}
"""


def test_a_user_who_may_not_watch_waits_at_the_check_interval(
    both: Harness, kube: Client, cluster: Cluster, tmp_path: Path
):
    """kapply's wake watches (kapply.apply.observe.Wakes) refused: the wait goes on at the interval, as kapp's, and
    ends as kapp's, with nothing said of the refusal. minReadySeconds makes the first look find it not done."""
    envs = kubeconfigs(both, kube, cluster, tmp_path, NO_WATCH)
    args = (*DEPLOY_STDIN, "-y", "--logs=false", "--wait-check-interval=1s")
    pair = run(both, envs, *args, input=SLOW_DEPLOYMENT)
    for result in pair:
        assert result.code == 0, result.output
        assert "ongoing: reconcile deployment/web" in result.stdout, result.output
        assert "ok: reconcile deployment/web" in result.stdout, result.output
    assert "forbidden" not in pair.kapply.output.lower(), pair.kapply.output
    # the refusal, seen only under --debug: the watch was asked for and the wait went on without it
    kube.delete(Deployment, "web", namespace=both.ns["kapply"])
    debug = both.run_one("kapply", (*args, "--debug"), input=SLOW_DEPLOYMENT, env=envs["kapply"])
    assert debug.code == 0, debug.output
    assert re.search(r"Watching /apis/apps/v1/namespaces/\S+/deployments for changes: .*forbidden", debug.output)
