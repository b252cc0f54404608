"""`kapply dashboard` on the local cluster, opened in headless Chromium (Debian's package, driven by Playwright): one
controller, one App and one dashboard server for the module (and a second server as the restricted user). The list
follows the App live (one watch per kind, server-sent events), its page shows the drifted field with its writer,
its actions patch it as `kapply app kick|pause` do and are refused with the API server's message when RBAC forbids;
a rollback to an earlier change shows its diff, pauses the App and deploys it; a PackageInstall's rollback to its
first revision shows what changes and brings its version and values back; no Secret value appears in any page or
answer.

`$KAPPLY_DASHBOARD_SCREENSHOT` names a file for a screenshot of the App's page (docs/dashboard.png is made so)."""

from __future__ import annotations

import os
import re
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.resources.core_v1 import ConfigMap, Namespace, Secret
from lightkube.types import PatchType
from playwright.sync_api import Browser, Page, expect

from tests.e2e.controller_harness import (
    App,
    condition,
    create_if_missing,
    delete_apps_and_show_log,
    deployer,
    inline_app,
    running_controller,
    status,
)
from tests.e2e.diff_ui_harness import Serving, get, headless_chromium, post
from tests.e2e.harness import Cluster, eventually
from tests.e2e.packaging_harness import PackageInstall, config_map_package, create, delete_and_wait, install_crds
from tests.e2e.packaging_harness import install as package_install

pytestmark = pytest.mark.e2e

PASSWORD, DRIFTED_PASSWORD = "dash-hunter2-do-not-show", "dash-drifted-hunter2-do-not-show"
URL_LINE = re.compile(r"^Dashboard: (http://\S+)$", re.M)
FILES = {
    "config.yml": f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: web-config}}
data: {{mode: blue}}
---
apiVersion: v1
kind: Secret
metadata: {{name: web-creds}}
stringData: {{password: "{PASSWORD}"}}
"""
}


GHOST_FILES = {
    "config.yml": """
apiVersion: v1
kind: ConfigMap
metadata: {name: ghost-config}
data: {mode: blue}
"""
}


@pytest.fixture(scope="module")
def app_namespace(kube: Client) -> Iterator[str]:
    name = f"t-dashboard-{uuid.uuid4().hex[:5]}"
    kube.create(Namespace.from_dict({"metadata": {"name": name}}))
    yield name
    kube.delete(Namespace, name)


@pytest.fixture(scope="module")
def app(cluster: Cluster, kube: Client, app_namespace: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The controller (as the admin user) and the App `web` (drift policy warn), deployed."""
    install_crds(cluster, kube)  # the packaging CRDs too, so that the controller reconciles PackageInstalls
    with running_controller(cluster, kube, cluster.kubeconfig, tmp_path_factory.mktemp("controller")) as process:
        for doc in yaml.safe_load_all(deployer(app_namespace)):
            create_if_missing(kube, from_dict(doc))
        kube.create(App(**inline_app("web", app_namespace, FILES, driftPolicy="warn")))
        kube.create(App(**inline_app("ghost", app_namespace, GHOST_FILES)))
        for name in ("web", "ghost"):
            eventually(lambda: condition(kube, app_namespace, name) == "ReconcileSucceeded", timeout=60, what=name)  # noqa: B023
        yield "web"
        delete_apps_and_show_log(kube, app_namespace, process)


def dashboard(kubeconfig: Path) -> tuple[Serving, str]:
    serving = Serving([sys.executable, "-m", "kapply", "dashboard"], {**os.environ, "KUBECONFIG": str(kubeconfig)})
    deadline = time.monotonic() + 30
    while not (found := URL_LINE.findall(serving.stdout)):
        if not serving.running or time.monotonic() > deadline:
            serving.stop()
            pytest.fail(f"no `Dashboard:` line:\n{serving.output}")
        time.sleep(0.05)
    return serving, str(found[0])


@pytest.fixture(scope="module")
def url(cluster: Cluster, app: str) -> Iterator[str]:
    serving, found = dashboard(cluster.kubeconfig)
    yield found
    serving.stop()


@pytest.fixture(scope="module")
def restricted_url(cluster: Cluster, app: str) -> Iterator[str]:
    if cluster.restricted_kubeconfig is None:
        pytest.skip("no restricted kubeconfig for this cluster (set KAPPLY_RESTRICTED_KUBECONFIG)")
    serving, found = dashboard(cluster.restricted_kubeconfig)
    yield found
    serving.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with headless_chromium() as launched:
        yield launched


@pytest.fixture
def tab(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    opened = context.new_page()
    yield opened
    context.close()


def app_url(url: str, namespace: str, name: str = "web") -> str:
    return url + "app?" + urllib.parse.urlencode({"key": f"App.kapply.dev/{namespace}/{name}"})


def read(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.read().decode())


def first_event(url: str) -> str:
    """The first server-sent event of the stream at `url` (its snapshot)."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        lines = []
        while (line := answer.readline().decode()) != "\n":
            lines.append(line)
        return "".join(lines)


def test_the_list_follows_the_app_live(tab: Page, kube: Client, url: str, app_namespace: str, app: str):
    tab.goto(url)
    row = tab.locator("#apps tbody tr", has_text=app_namespace).filter(
        has=tab.get_by_role("link", name=app, exact=True)
    )
    expect(row).to_contain_text("ReconcileSucceeded", timeout=10_000)
    expect(row).to_contain_text("warn")
    tab.fill("#f-namespace", "no-such-namespace")
    expect(row).to_have_count(0)
    tab.fill("#f-namespace", app_namespace)
    expect(row).to_have_count(1)
    kube.patch(
        App, app, {"metadata": {"labels": {"tier": "front"}}}, namespace=app_namespace, patch_type=PatchType.MERGE
    )
    tab.fill("#f-label", "tier=front")
    expect(row).to_have_count(1, timeout=2_000)
    kube.patch(App, app, {"spec": {"paused": True}}, namespace=app_namespace, patch_type=PatchType.MERGE)
    try:
        expect(row).to_contain_text("Paused", timeout=2_000)  # within 2 s of the change
    finally:
        kube.patch(App, app, {"spec": {"paused": None}}, namespace=app_namespace, patch_type=PatchType.MERGE)
    expect(row).not_to_contain_text("Paused", timeout=2_000)
    tab.get_by_role("link", name="Packages").click()  # the packages page: one LIST per served kind, as it loads
    expect(tab.locator("#live")).to_contain_text("Loaded")


def test_the_app_page_shows_drift_with_its_writer_and_no_secret(
    tab: Page, kube: Client, url: str, app_namespace: str, app: str
):
    kube.patch(
        ConfigMap,
        "web-config",
        {"data": {"mode": "green"}},
        namespace=app_namespace,
        patch_type=PatchType.MERGE,
        field_manager="intruder",
    )
    kube.patch(
        Secret,
        "web-creds",
        {"stringData": {"password": DRIFTED_PASSWORD}},
        namespace=app_namespace,
        patch_type=PatchType.MERGE,
        field_manager="intruder",
    )
    tab.goto(app_url(url, app_namespace))
    drift = tab.locator("#drift tbody")
    expect(drift).to_contain_text("data.mode", timeout=15_000)
    expect(drift).to_contain_text("intruder")
    expect(drift).to_contain_text("green")
    expect(tab.locator("#conditions")).to_contain_text("ReconcileSucceeded")
    expect(tab.locator("#tree")).to_contain_text("web-config")
    expect(tab.locator("#history tbody tr").first).to_be_visible()
    expect(tab.locator("#history details pre").first).to_contain_text("web-creds")  # the masked diffs, in the page
    if screenshot := os.environ.get("KAPPLY_DASHBOARD_SCREENSHOT"):
        tab.screenshot(path=screenshot, full_page=False)
    key = urllib.parse.quote(f"App.kapply.dev/{app_namespace}/{app}")
    answers = [
        tab.content(),
        read(url + "api/apps"),
        read(url + f"api/app?key={key}"),
        first_event(url + "events"),
        first_event(url + f"events?key={key}"),
    ]
    tab.goto(url)
    expect(tab.locator("#apps tbody")).to_contain_text(app_namespace)
    answers.append(tab.content())
    for text in answers:
        for value in (PASSWORD, DRIFTED_PASSWORD):
            assert value not in text
    assert "(masked" in answers[2], "the drifted Secret field is listed, its values masked"


def test_a_ghost_diffs_copied_rule_once_added_ends_it(
    browser: Browser, kube: Client, url: str, app_namespace: str, app: str
):
    """The App `ghost` (drift policy enforce): a field another writer changes is set back by a sync of an unchanged
    desired state (a ghost diff); the page's copy button gives the suggested rule, which added to the App's files
    ends it."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    tab = context.new_page()
    try:
        kube.patch(
            ConfigMap,
            "ghost-config",
            {"data": {"mode": "green"}},
            namespace=app_namespace,
            patch_type=PatchType.MERGE,
            field_manager="intruder",
        )
        tab.goto(app_url(url, app_namespace, "ghost"))
        ghosts = tab.locator("#ghosts tbody")
        expect(ghosts).to_contain_text("data.mode", timeout=15_000)
        expect(ghosts).to_contain_text("intruder")
        expect(tab.locator("#suggested")).to_contain_text("rebaseRules")
        tab.get_by_role("button", name="Copy the suggested rule").click()
        expect(tab.locator("#live")).to_contain_text("copied")
        rule = str(tab.evaluate("navigator.clipboard.readText()"))
        assert "rebaseRules" in rule
        kube.patch(
            App,
            "ghost",
            {"spec": {"fetch": [{"inline": {"paths": {**GHOST_FILES, "rules.yml": rule}}}]}},
            namespace=app_namespace,
            patch_type=PatchType.MERGE,
        )
        expect(ghosts.locator("tr")).to_have_count(0, timeout=15_000)  # gone at the first checked sync after it
    finally:
        context.close()


def test_actions_pause_resume_and_kick(tab: Page, kube: Client, url: str, app_namespace: str, app: str):
    tab.goto(app_url(url, app_namespace))
    expect(tab.locator("#summary")).to_contain_text("ReconcileSucceeded", timeout=10_000)

    def act(label: str) -> None:
        tab.get_by_role("button", name=label, exact=True).click()
        tab.locator("#confirm-yes").click()

    act("Pause")
    expect(tab.locator("#action-result")).to_contain_text("Paused")
    assert kube.get(App, app, namespace=app_namespace)["spec"].get("paused") is True
    expect(tab.locator("#summary")).to_contain_text("Paused", timeout=2_000)
    act("Resume")
    expect(tab.locator("#action-result")).to_contain_text("Resumed")
    assert not kube.get(App, app, namespace=app_namespace)["spec"].get("paused")
    generation = int(kube.get(App, app, namespace=app_namespace).metadata.generation)
    act("Sync now")
    expect(tab.locator("#action-result")).to_contain_text("Reconciliation triggered")
    app_now = kube.get(App, app, namespace=app_namespace)
    assert int(app_now.metadata.generation) == generation + 2 and not app_now["spec"].get("paused")
    eventually(
        lambda: status(kube, app_namespace, app).get("observedGeneration") == generation + 2,
        timeout=15,
        what="the kicked sync",
    )


def test_a_rollback_shows_its_diff_pauses_the_app_and_is_refused_when_rbac_forbids(
    tab: Page, browser: Browser, kube: Client, url: str, restricted_url: str, app_namespace: str, app: str
):
    """v2 (the ConfigMap's mode red) deployed by the controller; the page's "Roll back to this change" of the oldest
    kept change (v1: blue) shows the masked diff, and once confirmed pauses the App (saying so) and deploys v1. The
    restricted user's rollback is refused with the API server's message, changing nothing."""
    v2 = {"config.yml": FILES["config.yml"].replace("mode: blue", "mode: red")}
    generation = int(kube.get(App, app, namespace=app_namespace).metadata.generation)
    spec = {"spec": {"fetch": [{"inline": {"paths": v2}}]}}
    kube.patch(App, app, spec, namespace=app_namespace, patch_type=PatchType.MERGE)
    try:
        eventually(
            lambda: (
                status(kube, app_namespace, app).get("observedGeneration") == generation + 1
                and condition(kube, app_namespace, app) == "ReconcileSucceeded"
            ),
            timeout=30,
            what="v2 deployed",
        )
        assert kube.get(ConfigMap, "web-config", namespace=app_namespace).data == {"mode": "red"}
        tab.goto(app_url(url, app_namespace))
        oldest = tab.get_by_role("button", name=re.compile(r"^Roll back to this change: ")).last
        expect(oldest).to_be_visible(timeout=10_000)
        change = str(oldest.get_attribute("aria-label")).rpartition(" ")[2]
        restricted = browser.new_page()
        try:
            restricted.goto(app_url(restricted_url, app_namespace))
            refused = restricted.evaluate(
                """async ([key, change]) => {
                  const csrf = document.querySelector('meta[name="kapply-csrf"]').content;
                  const answer = await fetch("api/action?" + new URLSearchParams({ key, action: "rollback", change }),
                    { method: "POST", headers: { "X-Kapply-CSRF": csrf } });
                  return [answer.status, (await answer.json()).message];
                }""",
                [f"App.kapply.dev/{app_namespace}/{app}", change],
            )
        finally:
            restricted.close()
        assert refused[0] == 403 and "forbidden" in refused[1], refused
        assert not kube.get(App, app, namespace=app_namespace)["spec"].get("paused")
        oldest.click()
        expect(tab.locator("#rollback-diff")).to_contain_text("mode: blue")
        expect(tab.locator("#rollback-diff")).not_to_contain_text(PASSWORD)
        tab.locator("#rollback-yes").click()
        result = tab.locator("#action-result")
        expect(result).to_contain_text(f"Rolled back to app change '{change}'", timeout=30_000)
        expect(result).to_contain_text("Paused App 'web' (kapply.dev")
        assert kube.get(App, app, namespace=app_namespace)["spec"].get("paused") is True
        assert kube.get(ConfigMap, "web-config", namespace=app_namespace).data == {"mode": "blue"}
        expect(tab.locator("#history tbody tr").first).to_contain_text(f"rollback to {change}", timeout=5_000)
        for value in (PASSWORD, DRIFTED_PASSWORD):
            assert value not in tab.content()
    finally:
        spec = {"spec": {"fetch": [{"inline": {"paths": FILES}}], "paused": None}}
        kube.patch(App, app, spec, namespace=app_namespace, patch_type=PatchType.MERGE)


def test_a_restricted_user_sees_what_is_hidden_and_is_refused(
    tab: Page, kube: Client, restricted_url: str, app_namespace: str, app: str
):
    tab.goto(restricted_url)
    expect(tab.locator("#hidden")).to_contain_text("hidden", timeout=10_000)
    expect(tab.locator("#hidden")).to_contain_text("forbidden")
    tab.goto(app_url(restricted_url, app_namespace))
    expect(tab.locator("#live")).to_contain_text("forbidden", timeout=10_000)
    tab.get_by_role("button", name="Pause", exact=True).click()
    tab.locator("#confirm-yes").click()
    expect(tab.locator("#action-result")).to_contain_text("forbidden")
    assert not kube.get(App, app, namespace=app_namespace)["spec"].get("paused")


def test_the_server_answers_only_its_own_page(url: str, app_namespace: str):
    parsed = urllib.parse.urlsplit(url)
    origin = f"{parsed.scheme}://{parsed.netloc}"
    action = (
        url + "api/action?" + urllib.parse.urlencode({"key": f"App.kapply.dev/{app_namespace}/web", "action": "pause"})
    )
    assert get(origin + "/") == 403  # no token
    assert get(url.replace(parsed.path.split("/")[1], "wrong-token")) == 403
    assert get(url, Host="evil.example:80") == 403  # DNS rebinding
    assert post(action, Origin=origin) == 403  # no CSRF token
    assert post(action, Origin="http://evil.example", **{"X-Kapply-CSRF": "x"}) == 403
    assert post(action) == 403  # no Origin
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.headers["Cache-Control"] == "no-store"
        assert "default-src 'none'" in answer.headers["Content-Security-Policy"]


def test_a_package_installs_rollback_to_a_revision_brings_its_version_and_values_back(
    tab: Page, kube: Client, url: str, app_namespace: str, app: str
):
    """An install of 1.0.0 with values A, then 2.0.0 with values B (revisions 1 and 2, kept by the controller); the
    page's "Roll back to revision 1" says what changes (never a value), and once confirmed the install runs 1.0.0
    with A again, as `kapply package installed rollback` (the same code) does."""
    first, second = f"rb-first-{uuid.uuid4().hex[:6]}", f"rb-second-{uuid.uuid4().hex[:6]}"
    ref = "rb.test.carvel.dev"
    create(kube, app_namespace, config_map_package(ref, "1.0.0"), config_map_package(ref, "2.0.0"))

    def values(message: str) -> dict[str, str]:
        return {"values.yaml": f"name: rb-cm\nhello_msg: {message}\n"}

    secret = {"metadata": {"name": "rb-values"}, "stringData": values(first)}
    kube.create(Secret.from_dict(secret), namespace=app_namespace)
    spec = {"values": [{"secretRef": {"name": "rb-values"}}], "syncPeriod": "30s"}
    create(kube, app_namespace, package_install("rb", ref, "1.0.0", **spec))

    def runs(version: str, message: str) -> bool:
        found = [c.data for c in kube.list(ConfigMap, namespace=app_namespace) if c.metadata.name == "rb-cm"]
        return found == [{"version": version, "hello_msg": message}]

    def kept(number: int) -> bool:
        return any(s.metadata.name == f"rb.pkgi-v{number}" for s in kube.list(Secret, namespace=app_namespace))

    try:
        eventually(lambda: runs("1.0.0", first) and kept(1), timeout=30, what="1.0.0 with A, revision 1")
        patch = {"stringData": values(second)}
        kube.patch(Secret, "rb-values", patch, namespace=app_namespace, patch_type=PatchType.MERGE)
        selection = {"spec": {"packageRef": {"versionSelection": {"constraints": "2.0.0"}}}}
        kube.patch(PackageInstall, "rb", selection, namespace=app_namespace, patch_type=PatchType.MERGE)
        eventually(lambda: runs("2.0.0", second) and kept(2), timeout=30, what="2.0.0 with B, revision 2")
        key = f"PackageInstall.packaging.kapply.dev/{app_namespace}/rb"
        tab.goto(url + "app?" + urllib.parse.urlencode({"key": key}))
        tab.get_by_role("button", name="Roll back to revision 1").click()
        plan = tab.locator("#install-rollback-plan")
        expect(plan).to_contain_text("version: 2.0.0 -> 1.0.0")
        expect(plan).to_contain_text("values: changed (keys: hello_msg)")
        shown = plan.inner_text() + tab.locator("#revisions").inner_text()  # (the app-changes' diffs show the CM)
        assert first not in shown and second not in shown
        tab.locator("#install-rollback-yes").click()
        expect(tab.locator("#action-result")).to_contain_text("Rolled back to revision 1", timeout=10_000)
        eventually(lambda: runs("1.0.0", first), timeout=30, what="1.0.0 with A again")
    finally:
        delete_and_wait(kube, PackageInstall, app_namespace)
