"""The operator's drift choices (issue 30): `kapply controller --default-drift-policy` and `--drift-watches` read
into the controller's settings (a bad value is a usage error before anything starts), the default policy in force for
what the controller reconciles, and the drift watches on (a change others made reconciles its App after DEBOUNCE),
kept for the cache only (sync-period), or not started (off)."""

from __future__ import annotations

import asyncio
import io
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

import kapply.cli.controller
import kapply.controller.logs
import kapply.controller.main
from kapply.api import DriftPolicy
from kapply.cli.controller_manifests import stream
from kapply.cli.main import run
from kapply.controller.main import DEBOUNCE, Controller, ControllerOptions
from kapply.controller.settings import DriftWatching, Settings
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType
from kapply.ui.app_status import show_app_status
from kapply.ui.output import Output

KEY = ("team", "web")
CONFIG_MAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True, frozenset({"get", "list", "watch"}))


class Queue:
    def __init__(self) -> None:
        self.added: list[tuple[tuple[str, str], float]] = []

    def add(self, key: tuple[str, str], delay: float = 0.0) -> None:
        self.added.append((key, delay))


def controller(**settings: Any) -> tuple[Controller, Queue]:
    api: Any = SimpleNamespace(cluster=SimpleNamespace())
    made = Controller(api, ControllerOptions(settings=Settings(**settings)))
    queue = made.queue = Queue()  # type: ignore[assignment]
    return made, queue


# --- the flags --------------------------------------------------------------------------------------------------------


def given(monkeypatch: pytest.MonkeyPatch, *flags: str) -> Settings:
    """The settings `kapply controller FLAGS` runs with (the controller itself is not started)."""
    made: list[Any] = []

    def recording(**options: Any) -> ControllerOptions:
        made.append(ControllerOptions(**options))
        return made[-1]  # type: ignore[no-any-return]

    def not_running(coroutine: Any) -> None:
        coroutine.close()

    monkeypatch.setattr(kapply.controller.main, "ControllerOptions", recording)
    monkeypatch.setattr(kapply.controller.logs, "configure", lambda level, log_format: None)  # the tests' logging stays
    monkeypatch.setattr(kapply.cli.controller, "run", not_running)
    assert run(["controller", *flags]) == 0
    return made[0].settings  # type: ignore[no-any-return]


def test_without_the_flags_apps_are_enforced_and_drift_is_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = given(monkeypatch)
    assert (settings.default_drift_policy, settings.drift_watches) == (DriftPolicy.ENFORCE, DriftWatching.ON)


@pytest.mark.parametrize("policy", list(DriftPolicy))
@pytest.mark.parametrize("watching", list(DriftWatching))
def test_the_flags_reach_the_settings(
    monkeypatch: pytest.MonkeyPatch, policy: DriftPolicy, watching: DriftWatching
) -> None:
    settings = given(monkeypatch, f"--default-drift-policy={policy}", f"--drift-watches={watching}")
    assert (settings.default_drift_policy, settings.drift_watches) == (policy, watching)


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--default-drift-policy=ignore", "--default-drift-policy 'ignore': expected enforce, preserve, warn"),
        ("--default-drift-policy=Warn", "--default-drift-policy 'Warn': expected enforce, preserve, warn"),
        ("--drift-watches=true", "--drift-watches 'true': expected on, sync-period, off"),
    ],
)
def test_a_bad_value_is_a_usage_error(flag: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["controller", flag]) == 1
    assert message in capsys.readouterr().err


# --- the default drift policy -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", list(DriftPolicy))
def test_the_controller_parses_apps_with_its_default_policy(policy: DriftPolicy) -> None:
    c, _ = controller(default_drift_policy=policy)
    spec = {
        "serviceAccountName": "deployer",
        "fetch": [{"inline": {"paths": {"a.yml": "kind: ConfigMap"}}}],
        "template": [{"ytt": {}}],
        "deploy": [{"kapp": {}}],
    }
    app = {"metadata": {"name": "web", "namespace": "team"}, "spec": spec}
    assert c.reconciler._parse_spec(app).drift_policy is policy
    written = {**app, "spec": {**spec, "driftPolicy": "preserve"}}
    assert c.reconciler._parse_spec(written).drift_policy is DriftPolicy.PRESERVE, "the App's own policy wins"


# --- the drift watches ------------------------------------------------------------------------------------------------


def test_on_a_change_others_made_reconciles_its_app_after_the_debounce() -> None:
    c, queue = controller()
    c.drift.notify(KEY)
    assert queue.added == [(KEY, DEBOUNCE)]


@pytest.mark.parametrize("watching", [DriftWatching.SYNC_PERIOD, DriftWatching.OFF])
def test_otherwise_a_change_others_made_waits_for_the_sync_period(watching: DriftWatching) -> None:
    c, queue = controller(drift_watches=watching)
    c.drift.notify(KEY)
    assert queue.added == []


@pytest.mark.parametrize(("watching", "watched"), [(w, 0 if w is DriftWatching.OFF else 1) for w in DriftWatching])
def test_only_off_watches_none_of_the_types_apps_deploy(watching: DriftWatching, watched: int) -> None:
    c, _ = controller(drift_watches=watching)

    async def connect() -> Any:
        return c.api.cluster

    async def deployed() -> int:
        c.reconciler.track(KEY, "web-label", [CONFIG_MAPS], ("team",), connect)
        try:
            return c.drift.watched
        finally:
            c.drift.stop()

    assert asyncio.run(deployed()) == watched
    assert c.drift.apps == {"web-label": {KEY}}, "the App's label is routed all the same"


# --- kapply app status ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "status", "named"),
    [
        ({"driftPolicy": "preserve"}, {}, "preserve"),
        ({}, {"drift": {"policy": "warn", "fields": []}}, "warn"),
        ({}, {}, "the controller's default"),
    ],
)
def test_app_status_names_the_policy_in_force(spec: Obj, status: Obj, named: str) -> None:
    """Without spec.driftPolicy the controller's default decides, which the CLI cannot know until a drift report names
    it: never a guess of enforce."""
    out = io.StringIO()
    output = Output(tty=True, out=out)
    show_app_status(output, {"metadata": {"name": "web", "namespace": "ns"}, "spec": spec, "status": status})
    output.finish()
    assert f"(drift policy: {named})" in out.getvalue().splitlines()[0]


# --- kapply controller manifests -----------------------------------------------------------------------------------


def deployment_args(text: str) -> list[str]:
    (deployment,) = [d for d in yaml.safe_load_all(text) if d and d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


def test_manifests_write_the_drift_flags_given_into_the_controllers_args(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["controller", "manifests", "--drift-watches=off", "--default-drift-policy=preserve"]) == 0
    given = deployment_args(capsys.readouterr().out)
    assert given[-2:] == ["--default-drift-policy=preserve", "--drift-watches=off"]
    assert given[:-2] == deployment_args(stream()), "the file's args are kept"
    assert run(["controller", "manifests", "--drift-watches=on"]) == 0
    assert capsys.readouterr().out == stream(), "a default is not written: the file verbatim"


def test_manifests_replace_a_drift_flag_the_deployment_already_has() -> None:
    once = stream(controller_args=("--drift-watches=off",))
    assert "--drift-watches" not in stream()
    assert deployment_args(once).count("--drift-watches=off") == 1


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--drift-watches=never"], "--drift-watches 'never': expected on, sync-period, off"),
        (["--crds-only", "--default-drift-policy=warn"], "--crds-only prints the CRDs alone"),
    ],
)
def test_manifests_refuse_what_the_controller_would(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["controller", "manifests", *flags]) == 1
    assert message in capsys.readouterr().err
