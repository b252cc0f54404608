"""`--diff-ui-alpha` on the local cluster: kapply prints the URL of a page that shows the plan, and the page decides.
The page is opened in a real headless Chromium (Debian's package, driven by Playwright): its Apply button runs the
deploy (or delete) as `y` does, Cancel stops it as `n` does.

`$KAPPLY_DIFF_UI_SCREENSHOT` names a file for the screenshot of a real deploy's page (docs/diff-ui.png is made so)."""

from __future__ import annotations

import base64
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import Client, KubeConfig
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import ConfigMap, Secret
from playwright.sync_api import Browser, Page, expect

from tests.e2e.diff_ui_harness import Serving, get, headless_chromium, post
from tests.e2e.harness import WAIT_INTERVAL, Cluster, KapplyRunner

pytestmark = pytest.mark.e2e

OLD_PASSWORD, NEW_PASSWORD = "old-hunter2-do-not-show", "new-hunter2-do-not-show"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with headless_chromium() as launched:
        yield launched


@pytest.fixture
def tab(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    dialogs: list[str] = []
    opened.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    yield opened
    context.close()
    assert dialogs == [], f"the page ran script: {dialogs}"


@pytest.fixture
def ui(cluster: Cluster) -> Iterator[list[Serving]]:
    """Commands started with `start` below; any still running after the test is killed."""
    started: list[Serving] = []
    yield started
    for serving in started:
        serving.stop()


def start(ui: list[Serving], cluster: Cluster, *args: str, input: str | None = None) -> Serving:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    serving = Serving([sys.executable, "-m", "kapply", *args], env, input)
    ui.append(serving)
    return serving


def app_manifest(namespace: str, mode: str, password: str) -> str:
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: web-config, namespace: {namespace}}}
data: {{mode: "{mode}", size: "1"}}
---
apiVersion: v1
kind: Secret
metadata: {{name: web-creds, namespace: {namespace}}}
stringData: {{password: "{password}"}}
"""


def configmap_data(kube: Client, name: str, namespace: str) -> dict[str, str] | None:
    try:
        return dict(kube.get(ConfigMap, name, namespace=namespace).data or {})
    except ApiError as e:
        if e.status.code == 404:
            return None
        raise


def secret_password(kube: Client, namespace: str) -> str:
    found = kube.get(Secret, "web-creds", namespace=namespace).data or {}
    return base64.b64decode(found["password"]).decode()


def test_apply_in_the_page_runs_the_deploy_after_showing_the_changes_masked_diffs_and_field_managers(
    kapply: KapplyRunner, kube: Client, cluster: Cluster, namespace: str, ui: list[Serving], tab: Page, tmp_path: Path
):
    kapply.deploy(namespace, app_manifest(namespace, "a", OLD_PASSWORD), app="web")
    editor = Client(KubeConfig.from_file(cluster.kubeconfig), field_manager="kubectl-edit")
    editor.patch(ConfigMap, "web-config", {"data": {"size": "9"}}, namespace=namespace)

    run = start(
        ui,
        cluster,
        *("deploy", "-a", "web", "-n", namespace, "-f", "-", WAIT_INTERVAL, "--diff-ui-alpha"),
        input=app_manifest(namespace, "b", NEW_PASSWORD),
    )
    tab.goto(run.url())

    rows = [tab.locator("table tbody tr").nth(i).locator("td").all_inner_texts() for i in range(2)]
    assert [(r[1], r[2], r[4]) for r in rows] == [
        ("web-config", "ConfigMap", "update"),
        ("web-creds", "Secret", "update"),
    ]
    config = tab.locator("section.change", has_text="configmap/web-config")
    expect(config.locator("pre.diff .add")).to_contain_text(["mode: b", 'size: "1"'])
    expect(config.locator("pre.diff .del")).to_contain_text(["mode: a", 'size: "9"'])
    expect(config.locator(".owners")).to_contain_text("data.size")
    expect(config.locator(".owners")).to_contain_text("written by kubectl-edit (Update)")
    expect(tab.locator("section.change", has_text="secret/web-creds")).to_contain_text("<-- value not shown (#1)")
    html = tab.content()
    for value in (OLD_PASSWORD, NEW_PASSWORD):
        assert value not in html and base64.b64encode(value.encode()).decode() not in html

    tab.screenshot(path=str(tmp_path / "diff-ui.png"), full_page=True)
    if os.environ.get("KAPPLY_DIFF_UI_SCREENSHOT"):
        shutil.copyfile(tmp_path / "diff-ui.png", os.environ["KAPPLY_DIFF_UI_SCREENSHOT"])
    assert run.running and configmap_data(kube, "web-config", namespace) == {"mode": "a", "size": "9"}

    tab.get_by_role("button", name="Apply").click()
    expect(tab.locator(".decision")).to_contain_text("Applied: the deploy finished.", timeout=90_000)
    done = run.finish()
    assert done.code == 0, run.output
    assert done.stdout.rstrip().endswith("Succeeded")
    assert configmap_data(kube, "web-config", namespace) == {"mode": "b", "size": "1"}
    assert secret_password(kube, namespace) == NEW_PASSWORD


def test_cancel_in_the_page_applies_nothing_and_ends_as_a_declined_confirmation_even_with_yes(
    kube: Client, cluster: Cluster, namespace: str, ui: list[Serving], tab: Page
):
    run = start(
        ui,
        cluster,
        *("deploy", "-a", "web", "-n", namespace, "-f", "-", "-y", "--diff-ui-alpha"),
        input=app_manifest(namespace, "a", OLD_PASSWORD),
    )
    tab.goto(run.url())
    tab.get_by_role("button", name="Cancel").click()
    expect(tab.locator(".decision")).to_contain_text("Cancelled: nothing was applied.")
    done = run.finish()
    assert (done.code, done.stderr) == (1, "kapply: Error: Stopped\n")
    assert "Continue? [yN]" not in done.stdout
    assert configmap_data(kube, "web-config", namespace) is None


def test_requests_without_the_token_or_from_another_origin_are_refused_and_do_not_decide(
    kube: Client, cluster: Cluster, namespace: str, ui: list[Serving]
):
    run = start(
        ui,
        cluster,
        *("deploy", "-a", "web", "-n", namespace, "-f", "-", "--diff-ui-alpha"),
        input=app_manifest(namespace, "a", OLD_PASSWORD),
    )
    url = run.url()
    root = url.rsplit("/", 2)[0]  # http://127.0.0.1:PORT
    port = root.rsplit(":", 1)[1]
    assert get(root + "/") == 403
    assert post(root + "/apply") == 403
    assert post(root + "/not-the-token/apply") == 403
    assert post(url + "apply", Host=f"rebound.example:{port}") == 403
    assert post(url + "apply", Origin="http://rebound.example") == 403
    assert run.running and configmap_data(kube, "web-config", namespace) is None

    assert post(url + "cancel") == 200  # the URL kapply printed is all it takes
    done = run.finish()
    assert (done.code, done.stderr) == (1, "kapply: Error: Stopped\n")
    assert configmap_data(kube, "web-config", namespace) is None


def test_a_resource_name_with_markup_and_control_characters_renders_as_text(
    cluster: Cluster, namespace: str, ui: list[Serving], tab: Page
):
    name = "x<script>alert(1)\x1b[31m\u202e"
    manifest = f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: "x<script>alert(1)\\e[31m\\u202e", namespace: {namespace}}}
data: {{k: "<img src=x onerror=alert(2)>"}}
"""
    run = start(
        ui, cluster, "deploy", "-a", "web", "-n", namespace, "-f", "-", "--diff-run", "--diff-ui-alpha", input=manifest
    )
    tab.goto(run.url())
    assert tab.locator("script, img").count() == 0
    shown = "x<script>alert(1)\\x1b[31m\\u202e"
    expect(tab.locator("table tbody td").nth(1)).to_have_text(shown)
    expect(tab.locator("section.change h3")).to_have_text(f"@@ create configmap/{shown} (v1) namespace: {namespace} @@")
    expect(tab.locator("pre.diff")).to_contain_text("k: <img src=x onerror=alert(2)>")
    expect(tab.locator("pre.diff > span", has_text="  name: ")).to_contain_text(
        'name: "x<script>alert(1)\\e[31m\\u202e"'
    )
    heights = {round(box["height"]) for box in (line.bounding_box() for line in tab.locator("pre.diff > span").all())}
    assert len(heights) == 1, "a mark broke a diff line in two"
    assert name not in tab.content()

    tab.get_by_role("button", name="Close").click()  # --diff-run asks nothing: the page only closes
    expect(tab.locator(".decision")).to_contain_text("Closed.")
    done = run.finish()
    assert done.code == 0, run.output
    assert done.stdout.rstrip().endswith("Succeeded")


def test_delete_is_decided_in_the_page(
    kapply: KapplyRunner, kube: Client, cluster: Cluster, namespace: str, ui: list[Serving], tab: Page
):
    kapply.deploy(namespace, app_manifest(namespace, "a", OLD_PASSWORD), app="web")
    run = start(ui, cluster, "delete", "-a", "web", "-n", namespace, WAIT_INTERVAL, "--diff-ui-alpha")
    tab.goto(run.url())
    expect(tab.locator("h1")).to_have_text(f"Delete app 'web' (namespace: {namespace})")
    ops = tab.locator("table tbody tr td:nth-child(5)").all_inner_texts()
    assert ops == ["delete", "delete"]
    tab.get_by_role("button", name="Apply").click()
    expect(tab.locator(".decision")).to_contain_text("Applied: the delete finished.", timeout=90_000)
    done = run.finish()
    assert done.code == 0, run.output
    assert configmap_data(kube, "web-config", namespace) is None


def test_app_group_deploy_asks_for_each_app_in_turn(
    kube: Client, cluster: Cluster, namespace: str, ui: list[Serving], tmp_path: Path
):
    for app in ("one", "two"):
        (tmp_path / app).mkdir()
        (tmp_path / app / "cm.yml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{app}, namespace: {namespace}}}\n"
        )
    run = start(
        ui, cluster, "app-group", "deploy", "-g", "grp", "-d", str(tmp_path), "-n", namespace, "--diff-ui-alpha"
    )
    first = run.url(1)
    assert post(first + "apply") == 200
    second = run.url(2)
    assert second != first
    assert configmap_data(kube, "cm-one", namespace) == {} and configmap_data(kube, "cm-two", namespace) is None
    assert post(second + "apply") == 200
    done = run.finish()
    assert done.code == 0, run.output
    assert configmap_data(kube, "cm-two", namespace) == {}
