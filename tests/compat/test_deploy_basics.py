"""deploy, its diff and summary, redeploys, history and listing: what kapp users see, compared with the real kapp."""

from __future__ import annotations

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat

CONFIG = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello, level: info}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: hunter2}
"""
CHANGED = CONFIG.replace("greeting: hello", "greeting: hi").replace("hunter2", "hunter3")


def test_first_deploy_prints_the_same_plan_progress_and_result(both: Harness):
    both.same(both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=CONFIG))


def test_first_deploy_with_diff_changes_shows_the_same_diff(both: Harness):
    both.same(both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", "-c", input=CONFIG))


def test_unchanged_redeploy_and_changed_redeploy_look_the_same(both: Harness):
    both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=CONFIG)
    both.same(both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", "-c", input=CONFIG), exact=False)
    both.same(both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", "-c", input=CHANGED), exact=False)


@pytest.mark.parametrize("tty", ["--tty", "--tty=false"])
def test_diff_run_with_exit_status_exits_alike(both: Harness, tty: str):
    pending = both.run(
        "deploy", "-a", "app", "-n", "{ns}", "-f", "-", tty, "--diff-run", "--diff-exit-status", input=CONFIG
    )
    assert pending.kapp.code == 3
    both.same(pending)


def test_json_output_of_deploy_has_the_same_document(both: Harness):
    both.same_json(both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", "-c", "--json", input=CONFIG))


@pytest.mark.parametrize(
    "command",
    [
        ("ls", "-n", "{ns}"),
        ("ls", "-n", "{ns}", "--tty"),
        ("ls", "-n", "{ns}", "--json"),
        ("inspect", "-a", "app", "-n", "{ns}"),
        ("inspect", "-a", "app", "-n", "{ns}", "--tty"),
        ("inspect", "-a", "app", "-n", "{ns}", "--json"),
        ("app-change", "ls", "-a", "app", "-n", "{ns}", "--tty"),
        ("app-change", "ls", "-a", "app", "-n", "{ns}", "--json"),
    ],
)
def test_reading_commands_show_the_same_after_a_deploy(both: Harness, command: tuple[str, ...]):
    both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=CONFIG)
    if "--json" in command:
        both.same_json(both.run(*command))
    else:
        both.same(both.run(*command), exact=False)


def test_deploy_leaves_the_same_objects_and_records(both: Harness):
    both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=CONFIG)
    both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=CHANGED)
    both.same_objects()


def test_delete_looks_the_same_and_leaves_nothing(both: Harness):
    both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=CONFIG)
    both.same(both.run("delete", "-a", "app", "-n", "{ns}", "-y"), exact=False)
    both.same_objects()
    both.same(both.run("delete", "-a", "app", "-n", "{ns}", "-y"))
