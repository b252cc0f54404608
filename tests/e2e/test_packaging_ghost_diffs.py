"""Ghost diffs at the package level (kapply's, beyond kapp-controller): another actor keeps scaling a Deployment a
package deploys, the PackageInstall's status shows the App's ghost diff with the suggested rule as a ytt file, and
that file, added through kapp-controller's overlay annotation (a Secret named by
`ext.packaging.carvel.dev/ytt-paths-from-secret-name.<suffix>`), ends the ghost diffs without touching the package:
no more app-change per sync."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap
from lightkube.types import PatchType

from kapply.packaging import names
from tests.e2e.controller_harness import App, deployer, endpoint, wait_syncs
from tests.e2e.controller_harness import create_all as create_objects
from tests.e2e.harness import Cluster, eventually
from tests.e2e.packaging_harness import (
    PackageInstall,
    condition,
    create,
    get,
    install,
    install_crds,
    packaging_controller,
    status,
)
from tests.e2e.web_drift import deployment, keeps_scaling, replicas

pytestmark = pytest.mark.e2e
REF = "web.test.carvel.dev"


def web_package() -> dict[str, object]:
    return {
        "apiVersion": names.DATA_API_VERSION,
        "kind": "Package",
        "metadata": {"name": names.package_name(REF, "1.0.0")},
        "spec": {
            "refName": REF,
            "version": "1.0.0",
            "template": {
                "spec": {
                    "fetch": [{"inline": {"paths": {"web.yml": deployment(2)}}}],
                    "template": [{"ytt": {}}],
                    "deploy": [
                        {"kapp": {"rawOptions": ["--app-changes-max-to-keep=100", "--wait-check-interval=0.5s"]}}
                    ],
                }
            },
        },
    }


def app_changes(kube: Client, namespace: str) -> set[str]:
    """The app-change ConfigMaps of the install's kapp app `web.app`."""
    return {
        cm.metadata.name
        for cm in kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/is-app-change": ""})
        if cm.metadata.name.startswith("web.app-change-")
    }


def ghost_diffs(kube: Client, namespace: str) -> dict[str, object]:
    return dict(status(kube, PackageInstall, namespace, "web").get("ghostDiffs") or {})


def test_a_ghost_diff_is_shown_on_the_install_and_its_suggested_overlay_ends_it(
    cluster: Cluster, kube: Client, namespace: str, tmp_path: Path
) -> None:
    install_crds(cluster, kube)
    create_objects(kube, deployer(namespace))
    with packaging_controller(cluster, kube, namespace, tmp_path) as running:
        create(kube, namespace, web_package(), install("web", REF, "1.0.0"))
        eventually(
            lambda: condition(kube, PackageInstall, namespace, "web") == "ReconcileSucceeded",
            timeout=90,
            what="installed",
        )
        with keeps_scaling(kube, namespace, 1):
            eventually(lambda: ghost_diffs(kube, namespace).get("suggestedOverlay"), timeout=60, what="a ghost diff")
            reported = ghost_diffs(kube, namespace)
            diff = next(d for d in reported["diffs"] if d["path"] == "spec.replicas")  # type: ignore[attr-defined]
            assert diff["resource"] == f"deployment/web (apps/v1) namespace: {namespace}"
            assert (diff["desired"], diff.get("live", "1")) == ("2", "1")  # none once resolved (held, below)
            assert diff["writtenBy"].startswith("kubectl (Update, scale)"), diff
            app_ghosts = (get(kube, App, namespace, "web") or {})["status"]["ghostDiffs"]
            assert reported["suggestedConfig"] == app_ghosts["suggestedConfig"]
            overlay = str(reported["suggestedOverlay"])
            assert overlay.endswith(str(reported["suggestedConfig"])), overlay
            assert f"ext.packaging.carvel.dev/ytt-paths-from-secret-name.kapply-ghost-diffs={'web-ghost-diffs'}" in (
                overlay
            )
            # The other actor set it again after it was set back: held after that one revert (issue 30), no
            # app-change per sync.
            eventually(
                lambda: ((get(kube, App, namespace, "web") or {})["status"].get("fieldOwners") or {}).get("held"),
                timeout=10,
                what="the field held",
            )
            before = app_changes(kube, namespace)
            wait_syncs(endpoint(running.log), namespace, "web", 2)
            assert app_changes(kube, namespace) == before and replicas(kube, namespace) == 1, "held"

            # The overlay as its comment says: a Secret, named by the annotation.
            create(
                kube,
                namespace,
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "web-ghost-diffs"},
                    "stringData": {"ghost-diffs.yml": overlay},
                },
            )
            key = "ext.packaging.carvel.dev/ytt-paths-from-secret-name.kapply-ghost-diffs"
            kube.patch(
                PackageInstall,
                "web",
                {"metadata": {"annotations": {key: "web-ghost-diffs"}}},
                namespace=namespace,
                patch_type=PatchType.MERGE,
            )
            eventually(
                lambda: (get(kube, App, namespace, "web") or {})["spec"]["template"][0]["ytt"].get("inline"),
                timeout=30,
                what="the overlay Secret in the App's first ytt step",
            )
            eventually(
                lambda: condition(kube, App, namespace, "web") == "ReconcileSucceeded",  # its new generation's
                timeout=60,
                what="the App deployed with the overlay",
            )
            url = endpoint(running.log)
            wait_syncs(url, namespace, "web")  # the next sync with the overlay, start to end: checked
            # Fixed: gone at that sync, not --ghost-diff-quiet-syncs (10) syncs later, and so from the install's status.
            assert "ghostDiffs" not in (get(kube, App, namespace, "web") or {})["status"], "gone from the App's status"
            eventually(lambda: not ghost_diffs(kube, namespace), timeout=10, what="the install's ghost diff gone")
            settled = app_changes(kube, namespace)
            wait_syncs(url, namespace, "web", 4)  # four more, the other actor still at work
            assert app_changes(kube, namespace) == settled, "no new app-change once the overlay is in place"
            assert replicas(kube, namespace) == 1, "the cluster's value is kept"
        rule = yaml.safe_load(str(reported["suggestedConfig"]).removeprefix("---\n"))["rebaseRules"][0]
        assert rule["path"] == ["spec", "replicas"] and rule["sources"] == ["existing", "new"]
