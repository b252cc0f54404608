"""`--diff-ui-alpha`, compared with the real kapp where a user can compare them: the plan and the `Diff UI server:`
line printed before the wait, where the server listens, what Ctrl-C does, and what a declined deploy looks like.

kapp's page only shows the change graph and waits until it is interrupted; kapply's decides (docs/diff-ui.md), so
its Cancel is compared with kapp's own way of declining: answering `n` to `Continue? [yN]:`."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import ConfigMap

from tests.compat.harness import Harness, Pair, Result
from tests.e2e.diff_ui_harness import Serving, post

pytestmark = pytest.mark.compat

CONFIG = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello}
"""
KAPP_URL = re.compile(r"^Diff UI server: http://127\.0\.0\.1:(\d+)$", re.M)
KAPPLY_URL = re.compile(r"^Diff UI server: http://127\.0\.0\.1:(\d+)/[A-Za-z0-9_-]{43}/$", re.M)
QUESTION = re.compile(r"^(Continue\? \[yN\]: n|Diff UI server: http://\S+)$", re.M)


def start(both: Harness, tool: str, *args: str, input: str) -> Serving:
    env = {**os.environ, "KUBECONFIG": str(both.kubeconfig)}
    env.pop("KAPP_NAMESPACE", None)
    return Serving([*both.command(tool), *(both.fill(a, tool) for a in args)], env, both.fill(input, tool))


def settings_in(both: Harness, tool: str) -> bool:
    try:
        Client(both.kubeconfig_path()).get(ConfigMap, "settings", namespace=both.ns[tool])
    except ApiError as e:
        if e.status.code == 404:
            return False
        raise
    return True


def test_both_print_the_plan_then_the_servers_loopback_address_and_ctrl_c_ends_the_wait_with_status_130(
    both: Harness,
):
    runs = {
        tool: start(both, tool, "deploy", "-a", "app", "-n", "{ns}", "-f", "-", "--diff-ui-alpha", input=CONFIG)
        for tool in ("kapp", "kapply")
    }
    try:
        urls = {tool: run.url() for tool, run in runs.items()}
        kapp_port, kapply_port = KAPP_URL.search(runs["kapp"].stdout), KAPPLY_URL.search(runs["kapply"].stdout)
        assert kapp_port is not None and kapply_port is not None, urls
        assert int(kapply_port.group(1)) not in (0, 8080)  # a port the system chose, as kapp's
        shown = {tool: QUESTION.sub("Diff UI server: URL", run.stdout) for tool, run in runs.items()}
        both.same(Pair(*(Result(tool, 0, shown[tool], "") for tool in ("kapp", "kapply"))))
        assert all(run.running for run in runs.values())
        for run in runs.values():
            run.process.send_signal(signal.SIGINT)
        kapp, kapply = runs["kapp"].finish(), runs["kapply"].finish()
    finally:
        for run in runs.values():
            run.stop()
    assert kapp.code == -signal.SIGINT  # killed by the signal: a shell reports 128 + 2
    assert kapply.code == 130
    assert kapply.stderr == "kapply: Error: Interrupted (changes applied so far stay applied)\n"
    assert not settings_in(both, "kapp") and not settings_in(both, "kapply")


def test_cancel_in_the_page_ends_as_kapp_ends_when_the_answer_is_n(both: Harness, tmp_path: Path):
    manifest = tmp_path / "config.yml"
    manifest.write_text(CONFIG)
    kapp = both.run_one("kapp", ["deploy", "-a", "app", "-n", "{ns}", "-f", str(manifest)], input="n\n")
    run = start(both, "kapply", "deploy", "-a", "app", "-n", "{ns}", "-f", str(manifest), "--diff-ui-alpha", input="")
    try:
        assert post(run.url() + "cancel") == 200
        done = run.finish()
    finally:
        run.stop()
    kapply = Result("kapply", done.code, done.stdout, done.stderr)
    assert kapp.code == 1
    both.same(Pair(*(Result(r.tool, r.code, QUESTION.sub("QUESTION", r.stdout), r.stderr) for r in (kapp, kapply))))
    assert not settings_in(both, "kapp") and not settings_in(both, "kapply")
