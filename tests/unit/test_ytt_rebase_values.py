"""The data values a ytt rebase rule gets, shaped as kapp gives them: keys sorted at every level, and the live object
without kapp's identity annotation (kapp strips it from every object it reads)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kapply.config import ytt
from kapply.config.ytt import YttOverlay


def test_the_data_values_and_the_resource_are_given_with_sorted_keys_and_the_live_object_as_kapp_reads_it(
    monkeypatch: pytest.MonkeyPatch,
):
    seen: dict[str, str] = {}

    def run_ytt(files: dict[str, str]) -> str:
        seen.update(files)
        return files["resource.yml"]

    monkeypatch.setattr(ytt, "run_ytt", run_ytt)
    current = {"metadata": {"name": "cm", "annotations": {"b": "1", "a": "2"}}, "kind": "ConfigMap", "data": {}}
    live = {
        "kind": "ConfigMap",
        "metadata": {
            "name": "cm",
            "annotations": {"kapp.k14s.io/original": "{}", "kapp.k14s.io/identity": "v1;ns//ConfigMap/cm;v1"},
            "managedFields": [{"manager": "kapp", "fieldsType": "FieldsV1"}],
        },
    }
    out = YttOverlay("overlay", native=None).apply(current, {"kind": "ConfigMap", "metadata": {"name": "cm"}}, live)
    assert out == current
    values: dict[str, Any] = json.loads(seen["values.yml"].split("---\n", 1)[1])
    assert list(values) == ["_current", "existing", "new"]
    assert list(values["existing"]) == ["kind", "metadata"]
    assert list(values["existing"]["metadata"]) == ["annotations", "managedFields", "name"]
    assert values["existing"]["metadata"]["annotations"] == {"kapp.k14s.io/original": "{}"}
    assert list(values["existing"]["metadata"]["managedFields"][0]) == ["fieldsType", "manager"]
    assert list(json.loads(seen["resource.yml"])) == ["data", "kind", "metadata"]
