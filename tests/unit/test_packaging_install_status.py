"""A PackageInstall's status: kapp-controller's status writer (reconciler/status.go), the App mirrored
(packageinstall.go), and kapply's ghost diffs with the suggested overlay."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from kapply.packaging import install_status
from tests.e2e.harness import external_tool

SEE = "Error (see .status.usefulErrorMessage for details)"


def app(condition: str | None, generation: int = 2, observed: int = 2, **status: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"observedGeneration": observed, **status}
    if condition:
        body["conditions"] = [{"type": condition, "status": "True"}]
    return {
        "metadata": {"name": "inst", "namespace": "ns", "generation": generation},
        "spec": {"template": [{"ytt": {}}]},
        "status": body,
    }


def test_friendly_errors_are_the_first_line_cut_at_80_characters() -> None:
    assert install_status.short("short") == "short"
    assert install_status.short("a" * 80) == "a" * 80
    assert install_status.short("a" * 81) == "a" * 80 + "..."
    assert install_status.short("first\nsecond") == "first..."
    assert install_status.short("a" * 90 + "\nb") == "a" * 80 + "..."


def test_reconciling_and_success_clear_the_useful_error_message_a_failure_keeps_it() -> None:
    failed = install_status.failed({"usefulErrorMessage": "old", "version": "1.0.0"}, "boom\ndetails")
    assert failed == {
        "usefulErrorMessage": "old",
        "version": "1.0.0",
        "conditions": [{"type": "ReconcileFailed", "status": "True", "message": "boom\ndetails"}],
        "friendlyDescription": "Reconcile failed: boom...",
    }
    reconciling = install_status.reconciling(failed, 3)
    assert reconciling == {
        "version": "1.0.0",
        "conditions": [{"type": "Reconciling", "status": "True"}],
        "friendlyDescription": "Reconciling",
        "observedGeneration": 3,
    }
    assert install_status.succeeded({"usefulErrorMessage": "x"}) == {
        "conditions": [{"type": "ReconcileSucceeded", "status": "True"}],
        "friendlyDescription": "Reconcile succeeded",
    }


def test_a_failed_reconcile_and_a_failed_delete_are_written_alike() -> None:
    for write, condition, friendly in (
        (install_status.failed, "ReconcileFailed", "Reconcile failed"),
        (install_status.delete_failed, "DeleteFailed", "Delete failed"),
    ):
        assert write({"usefulErrorMessage": "old"}, "boom", "why") == {
            "usefulErrorMessage": "why",
            "conditions": [{"type": condition, "status": "True", "message": "boom"}],
            "friendlyDescription": f"{friendly}: boom",
        }
        assert write({"usefulErrorMessage": "old"}, "boom")["usefulErrorMessage"] == "old"


def test_the_apps_outcome_is_mirrored() -> None:
    start = install_status.reconciling({}, 1)
    assert install_status.mirrored(start, app("ReconcileSucceeded"))["friendlyDescription"] == "Reconcile succeeded"
    failed = install_status.mirrored(start, app("ReconcileFailed", usefulErrorMessage="kapp said no"))
    assert failed["conditions"] == [{"type": "ReconcileFailed", "status": "True", "message": SEE}]
    assert failed["friendlyDescription"] == f"Reconcile failed: {SEE}"
    assert failed["usefulErrorMessage"] == "kapp said no"
    assert install_status.mirrored(start, app("Reconciling")) == start
    assert install_status.mirrored(start, app(None)) == start, "no condition yet: still Reconciling"
    assert install_status.mirrored(start, app("ReconcileSucceeded", generation=3, observed=2)) == start, (
        "not seen its spec yet"
    )


def test_the_apps_deletion_is_mirrored() -> None:
    assert install_status.mirrored_deletion({}, app("Deleting"))["friendlyDescription"] == "Deleting"
    failed = install_status.mirrored_deletion({}, app("DeleteFailed", usefulErrorMessage="stuck"))
    assert failed["conditions"] == [{"type": "DeleteFailed", "status": "True", "message": SEE}]
    assert failed["friendlyDescription"] == f"Delete failed: {SEE}" and failed["usefulErrorMessage"] == "stuck"
    assert install_status.deleting({"x": 1}, 4) == {
        "x": 1,
        "conditions": [{"type": "Deleting", "status": "True"}],
        "observedGeneration": 4,
        "friendlyDescription": "Deleting",
    }


CONFIG = """---
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
rebaseRules:
- path: [spec, replicas]
  type: copy
  sources: [existing, new]
  resourceMatchers:
  - kindNamespaceNameMatcher: {kind: Deployment, namespace: ns, name: web}
"""
DIFF = {"resource": "deployment/web", "path": "spec.replicas", "desired": "2", "live": "1", "writtenBy": "kubectl"}


def test_the_apps_ghost_diffs_and_drift_are_shown_with_the_suggested_overlay() -> None:
    drift = {"policy": "warn", "fields": [DIFF]}
    reported = install_status.with_app_reports(
        {"version": "1.0.0", "ghostDiffs": {"stale": True}},
        app("ReconcileSucceeded", ghostDiffs={"diffs": [DIFF], "suggestedConfig": CONFIG}, drift=drift),
    )
    assert reported["version"] == "1.0.0" and reported["drift"] == drift
    assert reported["ghostDiffs"]["diffs"] == [DIFF] and reported["ghostDiffs"]["suggestedConfig"] == CONFIG
    overlay = reported["ghostDiffs"]["suggestedOverlay"]
    assert overlay.endswith(CONFIG)
    assert "kubectl create secret generic inst-ghost-diffs -n ns --from-file=ghost-diffs.yml" in overlay
    assert (
        "kubectl annotate packageinstall inst -n ns "
        "ext.packaging.carvel.dev/ytt-paths-from-secret-name.kapply-ghost-diffs=inst-ghost-diffs"
    ) in overlay
    assert all(line.startswith("#!") for line in overlay.removesuffix(CONFIG).splitlines()), "ytt comments only"
    assert install_status.with_app_reports(reported, app("ReconcileSucceeded")) == {"version": "1.0.0"}, (
        "gone with the App's"
    )
    assert install_status.with_app_reports({}, None) == {}


def test_the_apps_owned_fields_are_shown_and_go_with_the_apps() -> None:
    owned = {
        "knownOwners": [
            {"resource": "deployment/web", "path": "spec.replicas", "owner": "HorizontalPodAutoscaler ns/web"}
        ],
        "held": [{"resource": "deployment/web", "path": "spec.paused", "writtenBy": "bot (Update)", "rule": {}}],
        "suggestedConfig": CONFIG,
    }
    reported = install_status.with_app_reports(
        {"fieldOwners": {"stale": True}}, app("ReconcileSucceeded", fieldOwners=owned)
    )
    assert reported == {"fieldOwners": owned}
    assert install_status.with_app_reports(reported, app("ReconcileSucceeded")) == {}, "gone with the App's"


def test_without_a_ytt_step_there_is_nowhere_for_the_overlay_to_go() -> None:
    helm = app("ReconcileSucceeded", ghostDiffs={"diffs": [DIFF], "suggestedConfig": CONFIG})
    helm["spec"]["template"] = [{"helmTemplate": {}}]
    reported = install_status.with_app_reports({}, helm)
    assert reported["ghostDiffs"] == {"diffs": [DIFF], "suggestedConfig": CONFIG}


def test_the_suggested_overlay_adds_the_config_to_a_packages_ytt_output(tmp_path: Path) -> None:
    """What the overlay annotation does: the file is one more ytt file of the package's first ytt step, and its plain
    document is output as it is, after the package's."""
    ytt = external_tool("ytt", "KAPPLY_YTT")
    (tmp_path / "package").mkdir()
    (tmp_path / "package" / "web.yml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "ghost-diffs.yml").write_text(install_status.suggested_overlay(CONFIG, "ns", "inst"))
    out = subprocess.run(
        [str(ytt), "-f", str(tmp_path / "package"), "-f", str(tmp_path / "overlay")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert list(yaml.safe_load_all(out)) == [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"}},
        yaml.safe_load(CONFIG),
    ]
