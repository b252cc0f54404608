"""Which Pods and containers `deploy` shows the logs of (kapp's `kapp.k14s.io/deploy-logs` annotations)."""

from __future__ import annotations

from typing import Any

import pytest

from kapply.cli.deploy_logs import containers, shown
from kapply.ui.logs import LogView
from kapply.ui.output import Output


def pod(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "annotations": annotations} if annotations is not None else {"name": "p"},
        "spec": {"initContainers": [{"name": "init"}], "containers": [{"name": "main"}, {"name": "side"}]},
    }


@pytest.mark.parametrize(
    ("value", "new", "existing"),
    [
        (None, False, False),
        ("", True, False),
        ("for-new", True, False),
        ("for-existing", False, True),
        ("for-new-or-existing", True, True),
        ("other", False, False),
    ],
)
def test_the_annotation_chooses_new_or_existing_pods(value: str | None, new: bool, existing: bool):
    p = pod(None if value is None else {"kapp.k14s.io/deploy-logs": value})
    assert (shown(p, False, logs_all=False), shown(p, True, logs_all=False)) == (new, existing)
    assert shown(p, False, logs_all=True) and shown(p, True, logs_all=True)


def test_the_container_names_annotation_chooses_containers_with_logs_all_too():
    assert containers(pod({"kapp.k14s.io/deploy-logs": ""})) == ["init", "main", "side"]
    assert containers(pod({"kapp.k14s.io/deploy-logs-container-names": "side,init,nope"})) == ["init", "side"]


def test_deploy_log_lines_are_prefixed(capsys: pytest.CaptureFixture[str]):
    view = LogView(Output(tty=True), container_tag=True, prefix="logs")
    view.waiting("p > main")
    view.line("p > main", "hello\n")
    assert (
        capsys.readouterr().out
        == "logs | # waiting for 'p > main' logs to become available...\nlogs | p > main | hello\n"
    )
