"""`kapply app status`'s table of owned fields (status.fieldOwners, controller/owners.py): the known owners' rules in
force and the held fields, with the Config that keeps the holds for good; no table for an App that has none."""

from __future__ import annotations

import io
import json
from typing import Any

from kapply.objects import Obj
from kapply.ui.app_status import show_app_status
from kapply.ui.output import Output

WEB = "deployment/web (apps/v1) namespace: ns"


def shown(status: Obj, *, tty: bool = False) -> Any:
    out = io.StringIO()
    output = Output(tty=tty, as_json=not tty, out=out)
    show_app_status(output, {"metadata": {"name": "web", "namespace": "ns"}, "spec": {}, "status": status})
    output.finish()
    return out.getvalue() if tty else json.loads(out.getvalue())


OWNED = {
    "knownOwners": [
        {
            "resource": WEB,
            "path": "spec.replicas",
            "owner": "HorizontalPodAutoscaler ns/web",
            "rule": "hpa-deployment-rebase",
        }
    ],
    "held": [
        {
            "resource": "configmap/cm (v1) namespace: ns",
            "path": "data.a",
            "writtenBy": "bot (Update)",
            "since": "2026-01-01T00:00:00Z",
            "desiredDigest": "d",
            "rule": {"path": ["data", "a"]},
        }
    ],
    "suggestedConfig": "apiVersion: kapp.k14s.io/v1alpha1\nkind: Config\n",
}


def test_known_owners_and_held_fields_are_one_table() -> None:
    table = next(t for t in shown({"fieldOwners": OWNED})["Tables"] if t["Content"] == "owned fields")
    rows = [(r["resource"], r["field"], r["owner"], r["rule"]) for r in table["Rows"]]
    assert rows == [
        (WEB, "spec.replicas", "HorizontalPodAutoscaler ns/web", "known owner"),
        ("configmap/cm (v1) namespace: ns", "data.a", "bot (Update)", "held"),
    ]
    assert table["Rows"][1]["since"]  # how long ago


def test_the_config_that_keeps_the_holds_is_shown() -> None:
    text = shown({"fieldOwners": OWNED}, tty=True)
    assert "Owned fields" in text and "kind: Config" in text


def test_an_app_without_owned_fields_shows_no_table() -> None:
    assert all(t["Content"] != "owned fields" for t in shown({})["Tables"])
