"""The deploy stage's pure parts: what identifies a desired state (so that an unchanged one's updates are ghost diffs),
the kapp app's name, the key of a reported field, the progress reports of a long deploy, and when a plan made from
the cache stands. (Which changes of a plan are ghost diffs, and whether a plan is still current, are kapply.api's:
tests/unit/test_api_controller_seam.py.)"""

from __future__ import annotations

import asyncio
import io
from types import SimpleNamespace
from typing import Any

import pytest

from kapply import objects
from kapply.api import FieldReport
from kapply.controller import deploy
from kapply.controller.deploy import _reporting, desired_digest, field_key, kapp_app_name, legacy_app_name
from kapply.diff.change import Change, Op
from kapply.diff.drift import DriftPolicy
from kapply.diff.fields import FieldPath
from kapply.errors import KapplyError
from tests.unit.controller_changes import change, cm, plan

MANIFESTS = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: '1'\n"
RAW: dict[str, Any] = {"app-changes-max-to-keep": 5, "apply-timeout": 300.0}


# The desired state's digest.


def test_the_same_desired_state_has_the_same_digest() -> None:
    assert desired_digest(MANIFESTS, dict(RAW), DriftPolicy.ENFORCE) == desired_digest(
        MANIFESTS, dict(RAW), DriftPolicy.ENFORCE
    )


def test_the_digest_does_not_depend_on_the_order_of_options() -> None:
    forward = {"a": 1, "b": 2}
    backward = {"b": 2, "a": 1}
    assert desired_digest(MANIFESTS, forward, DriftPolicy.ENFORCE) == desired_digest(
        MANIFESTS, backward, DriftPolicy.ENFORCE
    )


def test_the_digest_changes_with_the_manifests() -> None:
    assert desired_digest(MANIFESTS, RAW, DriftPolicy.ENFORCE) != desired_digest(
        MANIFESTS.replace("'1'", "'2'"), RAW, DriftPolicy.ENFORCE
    )


@pytest.mark.parametrize(
    "other", [{**RAW, "wait": False}, {**RAW, "apply-timeout": 600.0}, {"app-changes-max-to-keep": 5}]
)
def test_the_digest_changes_with_the_deploy_options(other: dict[str, Any]) -> None:
    assert desired_digest(MANIFESTS, RAW, DriftPolicy.ENFORCE) != desired_digest(MANIFESTS, other, DriftPolicy.ENFORCE)


def test_the_digest_changes_with_the_drift_policy() -> None:
    digests = {desired_digest(MANIFESTS, RAW, policy) for policy in DriftPolicy}
    assert len(digests) == len(DriftPolicy)


def test_the_digest_is_a_sha256() -> None:
    digest = desired_digest(MANIFESTS, RAW, DriftPolicy.WARN)
    assert len(digest) == 64
    int(digest, 16)


# Names and keys.


def test_the_kapp_app_is_named_as_kapp_controller_names_it() -> None:
    assert kapp_app_name("web") == "web.app"
    assert legacy_app_name("web") == "web-ctrl"  # an older kapp-controller's: renamed by the first deploy


def report(name: str, path: tuple[str, ...]) -> FieldReport:
    resource = cm("1", name)
    return FieldReport(objects.describe(resource), str(FieldPath(path)), "1", "2", "kubectl", resource, FieldPath(path))


def test_a_reported_field_is_known_by_its_resource_and_path() -> None:
    assert field_key(report("cm", ("data", "a"))) == ("configmap/cm (v1) namespace: ns", "data.a")


# Progress reports of a long deploy.


def test_a_long_deploy_reports_its_output_while_it_grows_and_stops_after() -> None:
    async def test() -> list[str]:
        text = io.StringIO()
        reports: list[str] = []

        async def report(output: str) -> None:
            reports.append(output)

        async with _reporting(text.getvalue, report, 0.01):
            await asyncio.sleep(0.025)  # no output yet: nothing reported
            text.write("line 1\n")
            await asyncio.sleep(0.05)
            text.write("line 2\n")
            await asyncio.sleep(0.05)
        text.write("line 3\n")
        await asyncio.sleep(0.03)
        return reports

    assert asyncio.run(test()) == ["line 1\n", "line 1\nline 2\n"]


def test_a_failing_progress_report_does_not_stop_the_reports() -> None:
    async def test() -> list[str]:
        text = io.StringIO()
        reports: list[str] = []

        async def report(output: str) -> None:
            reports.append(output)
            if len(reports) == 1:
                raise KapplyError("conflict writing the status")

        async with _reporting(text.getvalue, report, 0.01):
            await asyncio.sleep(0)  # the reporter starts from the empty output
            text.write("a\n")
            await asyncio.sleep(0.05)
            text.write("b\n")
            await asyncio.sleep(0.05)
        return reports

    assert asyncio.run(test()) == ["a\n", "a\nb\n"]


# A plan from the cache: when it stands.


def planned(
    *changes: Change, stored: bool = True, drifted: tuple[Change, ...] = (), discovery: Any = None, renamed: Any = None
) -> Any:
    app = SimpleNamespace(stored=stored)
    return plan(*changes, app=app, drifted=drifted, discovery=discovery, renamed_from=renamed)


def test_a_plan_of_a_recorded_app_that_changes_nothing_is_quiet() -> None:
    assert deploy.quiet_plan(planned())
    assert not deploy.quiet_plan(planned(stored=False))  # a new app is recorded even with nothing to apply
    assert not deploy.quiet_plan(planned(change(Op.UPDATE)))
    assert not deploy.quiet_plan(planned(drifted=(change(Op.KEEP),)))  # drift reported under preserve or warn
    assert not deploy.quiet_plan(planned(renamed=SimpleNamespace()))  # a legacy `<name>-ctrl` record to rename


def test_a_quiet_plan_holds_only_for_the_same_desired_state_client_and_versions() -> None:
    """What the next sync compares before it skips a plan (deploy.Quiet)."""
    import orjson

    from kapply.controller.cache import Cache, CachedCluster
    from kapply.deploy import DeployOptions
    from kapply.resources.kubeconfig import KubeconfigFlags, load

    kubeconfig = orjson.dumps(
        {
            "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
        }
    ).decode()
    cache = Cache()
    client = SimpleNamespace(cluster=CachedCluster(load(KubeconfigFlags(yaml=kubeconfig)), cache, lambda: None))
    desired = ("ns", DeployOptions())
    quiet = deploy.Quiet("d1", desired, client, (), "label", (), (), "output")  # type: ignore[arg-type]
    assert quiet.holds(client, "d1", ("ns", DeployOptions()), ())  # type: ignore[arg-type]
    assert not quiet.holds(client, "d2", desired, ())  # type: ignore[arg-type]  # other manifests or options
    assert not quiet.holds(client, "d1", ("other-ns", DeployOptions()), ())  # type: ignore[arg-type]  # defaultNamespace
    warn = ("ns", DeployOptions(drift_policy=DriftPolicy.WARN))
    assert not quiet.holds(client, "d1", warn, ())  # type: ignore[arg-type]
    assert not quiet.holds(SimpleNamespace(cluster=client.cluster), "d1", desired, ())  # type: ignore[arg-type]  # token
    assert not quiet.holds(client, "d1", desired, ({"path": ["data", "a"]},))  # type: ignore[arg-type]  # a new hold
    deployed = quiet.deployed()
    assert (deployed.changes, deployed.changed, deployed.output, deployed.quiet) == (0, False, "output", quiet)
