"""The app record's JSON (`data.spec` of the app and app-change ConfigMaps), against JSON the real kapp wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kapply.app.meta import ZERO_TIME, AppMeta, ChangeMeta, kinds_of

KAPP_WROTE = {
    k: v
    for k, v in json.loads((Path(__file__).parent / "data" / "kapp_app_records.json").read_text()).items()
    if not k.startswith("_")
}


@pytest.mark.parametrize("name", ["app_succeeded", "app_failed", "app_new"])
def test_an_app_record_kapp_wrote_reads_and_writes_back_byte_for_byte(name):
    raw = KAPP_WROTE[name]
    assert AppMeta.from_json(raw).to_json().decode() == raw


@pytest.mark.parametrize("name", ["change_succeeded", "change_failed"])
def test_an_app_change_kapp_wrote_reads_and_writes_back_byte_for_byte(name):
    raw = KAPP_WROTE[name]
    assert json.dumps(ChangeMeta.from_json(json.loads(raw)).to_json(), separators=(",", ":")) == raw


def test_what_kapp_recorded_is_read_into_the_fields():
    meta = AppMeta.from_json(KAPP_WROTE["app_succeeded"])
    assert meta.label_key == "kapp.k14s.io/app" and meta.label_selector == f"kapp.k14s.io/app={meta.label_value}"
    assert meta.last_change.successful is True
    assert meta.last_change.namespaces == ("kapp-sample",)
    assert meta.used_gvs == (("apps", "v1"), ("", "v1"))
    assert meta.used_gks == (("", "ConfigMap"), ("apps", "Deployment"))


def test_a_new_app_has_zero_times_no_outcome_and_an_empty_kind_list():
    meta = AppMeta.from_json(KAPP_WROTE["app_new"])
    assert meta.last_change == ChangeMeta(ZERO_TIME, ZERO_TIME, None, "", ())
    assert meta.used_gks == () and meta.used_gvs == ()


def test_an_app_that_never_recorded_kinds_lists_every_kind():
    """kapp before usedGKs: `null` means no scoping, unlike `[]`."""
    meta = AppMeta.from_json('{"labelKey":"kapp.k14s.io/app","labelValue":"1","lastChange":{}}')
    assert meta.used_gks is None
    assert b'"usedGKs":null' in meta.to_json()


def test_used_kinds_are_deduplicated_and_sorted_as_kapp_sorts_them():
    resources = [
        {"apiVersion": "v1", "kind": "Service"},
        {"apiVersion": "apps/v1", "kind": "Deployment"},
        {"apiVersion": "v1", "kind": "ConfigMap"},
        {"apiVersion": "apps/v1", "kind": "Deployment"},
    ]
    meta = AppMeta("kapp.k14s.io/app", "1").with_used(kinds_of(resources))
    doc = json.loads(meta.to_json())
    assert doc["usedGVs"] == [{"Group": "apps", "Version": "v1"}, {"Group": "", "Version": "v1"}]
    assert doc["usedGKs"] == [
        {"Group": "", "Kind": "ConfigMap"},
        {"Group": "", "Kind": "Service"},
        {"Group": "apps", "Kind": "Deployment"},
    ]


def test_finishing_a_change_records_its_outcome_and_time():
    started = ChangeMeta(started_at="2026-01-01T00:00:00Z", description="update: x")
    finished = started.finish(successful=False)
    assert finished.successful is False and finished.finished_at != ZERO_TIME
    assert finished.started_at == started.started_at and finished.description == "update: x"
