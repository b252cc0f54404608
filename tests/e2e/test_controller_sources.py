"""The App controller's sources and templates as real processes run them: fetch from a git repository (a local bare
one over file://), from ConfigMaps and Secrets, template with kustomize, helm and ytt chained; a missing tool, a
malformed App and a service account without rights each end ReconcileFailed with a message that names the cause,
while the controller goes on serving the other Apps."""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import ConfigMap, Service
from lightkube.types import PatchType

from tests.e2e.controller_harness import (
    App,
    Controllers,
    condition,
    config_map,
    config_map_data,
    create_all,
    deployer,
    exists,
    inline_app,
    install_crd,
    status,
    tool_env,
)
from tests.e2e.harness import Cluster, eventually, external_tool

pytestmark = pytest.mark.e2e


def succeeded(kube: Client, namespace: str, *apps: str, timeout: float = 30) -> None:
    for app in apps:
        eventually(
            lambda app=app: condition(kube, namespace, app) == "ReconcileSucceeded",
            timeout=timeout,
            what=f"App {app} to succeed",
        )


def failed_with(kube: Client, namespace: str, app: str, message: str, timeout: float = 30) -> dict:
    """The App's status once it is ReconcileFailed; its description must contain `message`."""
    eventually(lambda: condition(kube, namespace, app) == "ReconcileFailed", timeout=timeout, what=f"{app} to fail")
    reported = status(kube, namespace, app)
    assert reported["friendlyDescription"].startswith("Reconcile failed: "), reported
    assert message in reported["friendlyDescription"], reported
    assert [(c["type"], c["status"]) for c in reported["conditions"]] == [("ReconcileFailed", "True")], reported
    assert reported["usefulErrorMessage"] and reported["consecutiveReconcileFailures"] >= 1, reported
    return reported


@pytest.fixture(scope="module")
def crd(cluster: Cluster, kube: Client) -> None:
    install_crd(cluster.kubeconfig, kube)


@pytest.fixture
def controllers(crd: None, cluster: Cluster, kube: Client, namespace: str, tmp_path: Path) -> Iterator[Controllers]:
    running = Controllers(cluster.kubeconfig, kube, namespace, tmp_path)
    try:
        yield running
    finally:
        running.close()


def serve(controllers: Controllers, *tools: str, **env: str) -> subprocess.Popen:
    """One controller for the test's namespace, with ytt and `tools` (and `env` over them); its Apps may fetch the
    tests' local git repositories (file:// URLs)."""
    return controllers.start(
        "--leader-elect=false", "--dangerous-allow-file-urls", env={**tool_env("ytt", *tools), **env}
    )


# --- git ----------------------------------------------------------------------------------------------------------


def git(*args: str, cwd: Path) -> str:
    command = [str(external_tool("git", "KAPPLY_GIT")), "-c", "user.name=kapply tests", "-c", "user.email=t@kapply"]
    result = subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"git {' '.join(args)}:\n{result.stderr}"
    return result.stdout.strip()


def commit(work: Path, files: dict[str, str], message: str) -> str:
    for relative, content in files.items():
        (work / relative).parent.mkdir(parents=True, exist_ok=True)
        (work / relative).write_text(content)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", message, cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


def git_app(name: str, namespace: str, url: str, ref: str, sub_path: str) -> dict:
    return inline_app(
        name, namespace, {}, syncPeriod="1s", fetch=[{"git": {"url": url, "ref": ref, "subPath": sub_path}}]
    )


def test_git_fetch_deploys_a_branch_and_a_tag_and_the_next_commit_on_the_branch(
    controllers: Controllers, kube: Client, namespace: str, tmp_path: Path
):
    bare, work = tmp_path / "repo.git", tmp_path / "work"
    git("init", "-q", "--bare", "--initial-branch=main", str(bare), cwd=tmp_path)
    git("init", "-q", "--initial-branch=main", str(work), cwd=tmp_path)
    git("remote", "add", "origin", str(bare), cwd=work)
    first = commit(
        work,
        {
            "on-main/cm.yml": config_map("from-main", version="1"),
            "on-tag/cm.yml": config_map("from-tag", version="1"),
            "elsewhere/cm.yml": config_map("outside-sub-path", version="1"),
        },
        "first",
    )
    git("tag", "v1", cwd=work)
    git("push", "-q", "origin", "main", "v1", cwd=work)
    create_all(kube, deployer(namespace))
    url = f"file://{bare}"
    kube.create(App(**git_app("branch", namespace, url, "origin/main", "on-main")))
    kube.create(App(**git_app("tag", namespace, url, "v1", "on-tag")))
    serve(controllers)

    succeeded(kube, namespace, "branch", "tag")
    assert config_map_data(kube, namespace, "from-main") == {"version": "1"}
    assert config_map_data(kube, namespace, "from-tag") == {"version": "1"}
    assert config_map_data(kube, namespace, "outside-sub-path") is None  # only subPath is deployed
    lock = yaml.safe_load(status(kube, namespace, "branch")["fetch"]["stdout"])
    assert lock["kind"] == "LockConfig" and lock["directories"][0]["git"] == {"sha": first, "url": url}

    second = commit(
        work,
        {"on-main/cm.yml": config_map("from-main", version="2"), "on-tag/cm.yml": config_map("from-tag", version="2")},
        "second",
    )
    git("push", "-q", "origin", "main", cwd=work)
    eventually(
        lambda: config_map_data(kube, namespace, "from-main") == {"version": "2"},
        timeout=20,
        what="the new commit deployed",
    )
    eventually(
        lambda: (
            yaml.safe_load(status(kube, namespace, "branch")["fetch"]["stdout"])["directories"][0]["git"]["sha"]
            == second
        ),
        timeout=10,
        what="the lock to name the new commit",
    )
    assert config_map_data(kube, namespace, "from-tag") == {"version": "1"}  # the tag still names the first commit
    assert yaml.safe_load(status(kube, namespace, "tag")["fetch"]["stdout"])["directories"][0]["git"]["sha"] == first


# --- inline paths and pathsFrom -------------------------------------------------------------------------------------


def test_inline_paths_and_paths_from_config_maps_and_secrets_with_and_without_directory_path(
    controllers: Controllers, kube: Client, namespace: str
):
    # Every source holds a file named cm.yml: each lands where its directoryPath says, or they would overwrite each
    # other, and ytt reads exactly the four paths (it fails on a path that does not exist).
    secret_manifest = base64.b64encode(config_map("from-secret", source="secret").encode()).decode()
    create_all(
        kube,
        deployer(namespace)
        + "---\n"
        + yaml.safe_dump_all(
            [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "files", "namespace": namespace},
                    "data": {"cm.yml": config_map("from-config-map", source="configmap")},
                },
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "secret-files", "namespace": namespace},
                    "data": {"cm.yml": secret_manifest},
                },
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "nested-files", "namespace": namespace},
                    "data": {"cm.yml": config_map("from-nested", source="nested")},
                },
            ]
        ),
    )
    app = inline_app("sources", namespace, {"inline/cm.yml": config_map("from-inline", source="inline")})
    app["spec"]["syncPeriod"] = "1s"
    app["spec"]["fetch"][0]["inline"]["pathsFrom"] = [
        {"configMapRef": {"name": "files"}},
        {"secretRef": {"name": "secret-files", "directoryPath": "from-secret"}},
        {"configMapRef": {"name": "nested-files", "directoryPath": "deeper/still"}},
    ]
    app["spec"]["template"] = [{"ytt": {"paths": ["inline/cm.yml", "cm.yml", "from-secret/cm.yml", "deeper/still"]}}]
    kube.create(App(**app))
    serve(controllers)

    succeeded(kube, namespace, "sources")
    assert config_map_data(kube, namespace, "from-inline") == {"source": "inline"}
    assert config_map_data(kube, namespace, "from-config-map") == {"source": "configmap"}
    assert config_map_data(kube, namespace, "from-secret") == {"source": "secret"}
    assert config_map_data(kube, namespace, "from-nested") == {"source": "nested"}

    # A change to a referenced ConfigMap is deployed at the next sync.
    kube.patch(
        ConfigMap,
        "files",
        {"data": {"cm.yml": config_map("from-config-map", source="changed")}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )
    eventually(
        lambda: config_map_data(kube, namespace, "from-config-map") == {"source": "changed"},
        timeout=15,
        what="the ConfigMap's new content deployed",
    )


# --- templates ------------------------------------------------------------------------------------------------------

YTT_LABEL = """#@ load("@ytt:overlay", "overlay")
#@overlay/match by=overlay.all, expects="1+"
---
metadata:
  #@overlay/match missing_ok=True
  labels:
    #@overlay/match missing_ok=True
    templated-by: ytt
"""

CHART = {
    "chart/Chart.yaml": "apiVersion: v2\nname: greeter\nversion: 0.1.0\n",
    "chart/values.yaml": "greeting: chart-default\nsize: chart-default\ncolour: chart-default\nwinner: chart\n",
    "chart/templates/cm.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-greeting\n"
        "  namespace: {{ .Release.Namespace }}\ndata:\n"
        "  greeting: {{ .Values.greeting | quote }}\n  size: {{ .Values.size | quote }}\n"
        "  colour: {{ .Values.colour | quote }}\n  winner: {{ .Values.winner | quote }}\n"
    ),
    "values/prod.yml": "colour: from-path\nwinner: path\n",
}


def test_kustomize_and_helm_template_then_ytt_as_kapp_controller_users_chain_them(
    controllers: Controllers, kube: Client, namespace: str
):
    create_all(
        kube,
        deployer(namespace)
        + "---\n"
        + yaml.safe_dump_all(
            [
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "helm-secret", "namespace": namespace},
                    "stringData": {"values.yml": "greeting: from-secret\nwinner: secret\n"},
                },
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "helm-config-map", "namespace": namespace},
                    "data": {"values.yml": "size: from-config-map\nwinner: configmap\n"},
                },
            ]
        ),
    )
    kustomized = inline_app(
        "kustomized",
        namespace,
        {
            "kustomization.yaml": "resources: [cm.yml]\nnamePrefix: k-\ncommonLabels: {team: blue}\n",
            "cm.yml": config_map("settings", mode="kustomized"),
        },
        template=[{"kustomize": {}}, {"ytt": {"inline": {"paths": {"label.yml": YTT_LABEL}}}}],
    )
    charted = inline_app(
        "charted",
        namespace,
        CHART,
        template=[
            {
                "helmTemplate": {
                    "path": "chart",
                    "valuesFrom": [
                        {"secretRef": {"name": "helm-secret"}},
                        {"configMapRef": {"name": "helm-config-map"}},
                        {"path": "values/prod.yml"},
                    ],
                }
            },
            {"ytt": {"inline": {"paths": {"label.yml": YTT_LABEL}}}},
        ],
    )
    kube.create(App(**kustomized))
    kube.create(App(**charted))
    serve(controllers, "helm", "kustomize")

    succeeded(kube, namespace, "kustomized", "charted")
    settings = kube.get(ConfigMap, "k-settings", namespace=namespace)  # kustomize's namePrefix
    assert settings.data == {"mode": "kustomized"}
    assert settings.metadata.labels["team"] == "blue"  # kustomize's commonLabels
    assert settings.metadata.labels["templated-by"] == "ytt"  # ytt read kustomize's output
    greeting = kube.get(ConfigMap, "charted-greeting", namespace=namespace)  # release name: the App's name
    # values files in valuesFrom order, later ones winning; the chart's defaults under them
    assert greeting.data == {
        "greeting": "from-secret",
        "size": "from-config-map",
        "colour": "from-path",
        "winner": "path",
    }
    assert greeting.metadata.labels["templated-by"] == "ytt"


def test_a_missing_template_tool_fails_the_app_clearly_and_other_apps_go_on(
    controllers: Controllers, kube: Client, namespace: str, tmp_path: Path
):
    create_all(kube, deployer(namespace))
    kube.create(App(**inline_app("charted", namespace, CHART, template=[{"helmTemplate": {"path": "chart"}}])))
    kustomization = {"kustomization.yaml": "resources: [cm.yml]\n", "cm.yml": config_map("settings", a="b")}
    kube.create(App(**inline_app("kustomized", namespace, kustomization, template=[{"kustomize": {}}])))
    kube.create(App(**inline_app("plain", namespace, {"cm.yml": config_map("plain", a="b")})))
    missing = tmp_path / "no-such-dir"
    serve(
        controllers, "helm", "kustomize", KAPPLY_HELM=str(missing / "helm"), KAPPLY_KUSTOMIZE=str(missing / "kustomize")
    )

    for app, tool, variable, prefix in (
        ("charted", "helm", "KAPPLY_HELM", "Templating helm chart"),
        ("kustomized", "kustomize", "KAPPLY_KUSTOMIZE", "Templating dir"),
    ):
        expected = f"{prefix}: {tool} is not available: ${variable} names {missing / tool}, which is not an executable"
        reported = failed_with(kube, namespace, app, expected)
        assert reported["template"]["exitCode"] != 0 and expected in reported["template"]["error"], reported
        assert reported["fetch"]["exitCode"] == 0, reported  # the fetch went well: only the template step failed
    succeeded(kube, namespace, "plain")


# --- malformed Apps -------------------------------------------------------------------------------------------------

# name -> (spec fields, message); none of them deploys anything, so none gets the finalizer
MALFORMED = {
    "template-step-not-a-map": (
        {"template": [{"ytt": "yes"}]},
        "Expected spec.template[0].ytt to be a map, got str",
    ),
    "unknown-fetch": (
        {"fetch": [{"svn": {"url": "https://example.invalid/charts"}}]},
        "Fetching (0): Unsupported way to fetch templates (svn; kapply fetches inline, image, http, git, helmChart, "
        "imgpkgBundle)",
    ),
    "bogus-sync-period": ({"syncPeriod": "bogus"}, "Expected spec.syncPeriod to be a duration"),
    "two-deploys": ({"deploy": [{"kapp": {}}, {"kapp": {}}]}, "Expected exactly one deploy option"),
    "no-service-account": (
        {"serviceAccountName": None},
        "Preparing kapp: Expected service account or cluster specified",
    ),
    "cluster": ({"cluster": {"namespace": "elsewhere"}}, "spec.cluster is not supported"),
    "missing-secret": (
        {"fetch": [{"inline": {"pathsFrom": [{"secretRef": {"name": "not-there"}}]}}]},
        "Fetching resources: Secret 'not-there' not found",
    ),
    "bad-raw-option": (
        {"deploy": [{"kapp": {"rawOptions": ["--app=other"]}}]},
        "Deploying: Unexpected flag 'app' specified (either forbidden or unknown)",
    ),
}


def test_malformed_apps_fail_with_useful_messages_and_the_controller_serves_the_others(
    controllers: Controllers, kube: Client, namespace: str
):
    create_all(kube, deployer(namespace))
    # What the CRD's schema already refuses never reaches the controller.
    not_a_list = inline_app("fetch-not-a-list", namespace, {}, fetch={"inline": {}})
    with pytest.raises(ApiError) as refused:
        kube.create(App(**not_a_list))
    assert refused.value.status.code == 422 and "spec.fetch" in refused.value.status.message

    cm = config_map("good", a="b")
    for name, (spec, _) in MALFORMED.items():
        app = inline_app(name, namespace, {"cm.yml": config_map(name, a="b")}, **spec)
        app["spec"] = {k: v for k, v in app["spec"].items() if v is not None}
        kube.create(App(**app))
    kube.create(App(**inline_app("good", namespace, {"cm.yml": cm})))
    process = serve(controllers)

    for name, (_, message) in MALFORMED.items():
        reported = failed_with(kube, namespace, name, message)
        assert reported["observedGeneration"] == 1, reported
        assert not kube.get(App, name, namespace=namespace).metadata.finalizers, "a finalizer before any deploy"
        assert config_map_data(kube, namespace, name) is None  # nothing of a malformed App was deployed
    succeeded(kube, namespace, "good")
    kube.patch(
        App,
        "good",
        {"spec": {"fetch": [{"inline": {"paths": {"cm.yml": config_map("good", a="changed")}}}]}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )
    eventually(
        lambda: config_map_data(kube, namespace, "good") == {"a": "changed"}, timeout=15, what="the good App's change"
    )

    # A malformed App that is fixed is deployed.
    kube.patch(
        App, "bogus-sync-period", {"spec": {"syncPeriod": "1s"}}, namespace=namespace, patch_type=PatchType.MERGE
    )
    succeeded(kube, namespace, "bogus-sync-period")
    assert config_map_data(kube, namespace, "bogus-sync-period") == {"a": "b"}
    assert process.poll() is None  # still running


# --- RBAC -----------------------------------------------------------------------------------------------------------

SERVICE = yaml.safe_dump(
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
)


@pytest.mark.parametrize(
    ("service_verbs", "denied"),
    [
        pytest.param([], 'cannot get resource "services"', id="services-not-even-readable"),
        pytest.param(
            ["get", "list", "watch"],
            'cannot create resource "services"',
            id="services-readable",
            marks=pytest.mark.xfail(
                strict=True,
                reason="kapply.deploy.run applies the ConfigMap before the Service's create is refused: nothing checks "
                "that every write of the plan is allowed before the first one",
            ),
        ),
    ],
)
def test_a_service_account_that_may_not_create_a_service_fails_naming_itself_and_creates_nothing(
    controllers: Controllers, kube: Client, namespace: str, service_verbs: list[str], denied: str
):
    rules = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]  # its app record is a ConfigMap too
    if service_verbs:
        rules.append({"apiGroups": [""], "resources": ["services"], "verbs": service_verbs})
    create_all(kube, deployer(namespace, rules=rules))
    kube.create(App(**inline_app("web", namespace, {"cm.yml": config_map("web-settings", a="b"), "svc.yml": SERVICE})))
    serve(controllers)

    reported = failed_with(kube, namespace, "web", "Deploying: ")
    useful = reported["usefulErrorMessage"]
    assert f'User "system:serviceaccount:{namespace}:deployer" {denied}' in useful and "forbidden" in useful, useful
    assert reported["deploy"]["exitCode"] != 0 and reported["deploy"]["finished"] is True, reported
    # Later syncs fail the same way, and nothing of the App is ever created.
    eventually(
        lambda: status(kube, namespace, "web")["consecutiveReconcileFailures"] >= 2, timeout=20, what="a second try"
    )
    assert not exists(kube, ConfigMap, "web-settings", namespace), "the ConfigMap was created before the failure"
    assert not exists(kube, Service, "web", namespace)
