"""How `-a` names an app: a recorded app (renamed from `--prev-app` when only that one exists) or a labeled app
(`label:<selector>`); and how ownership errors name the owner."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kapply.app import record
from kapply.app.meta import AppMeta
from kapply.deploy import write_app_metadata
from kapply.errors import KapplyError, OwnershipError
from kapply.objects import key_of
from kapply.resources.cluster import Discovery
from kapply.resources.filters import parse_selector
from kapply.resources.ownership import check_ownership
from tests.unit.fake_cluster import FakeCluster


def test_selectors_print_as_kubernetes_prints_them():
    assert parse_selector("tier=web,app in (b,a),!x,y").canonical() == "app in (a,b),tier=web,!x,y"
    assert parse_selector("").canonical() == ""


def test_a_labeled_app_is_named_by_its_selector_and_has_no_record():
    app = record.labeled("label:tier = web")
    assert app is not None and app.labeled and app.name == "tier=web" and app.label_selector == "tier=web"
    assert record.ownership_label(app) == ("tier", "web")
    assert app.describe() == "labeled app 'tier=web'"
    assert record.labeled("web") is None
    assert record.labeled("label:").name == "?"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("label:tier", "Expected label selector to check for equality"),
        ("label:a=b,c=d", "Expected label selector to have one label KV"),
        ("label:", "Expected label selector to have one label KV"),
    ],
)
def test_a_deploy_needs_one_key_value(name: str, message: str):
    app = record.labeled(name)
    assert app is not None
    with pytest.raises(KapplyError, match=f"^{message}$"):
        record.ownership_label(app)


def test_a_bad_selector_is_an_error_naming_the_app_flag():
    with pytest.raises(KapplyError, match=r"^Parsing app name \(or label selector\): "):
        record.labeled("label:x in (a")


def stored(fake: FakeCluster, name: str, namespace: str = "ns") -> None:
    app = record.App(name, namespace, name, AppMeta("kapp.k14s.io/app", f"v-{name}"))
    asyncio.run(fake.create(record.CONFIGMAPS, record.new_record(app, {}, {})))


def test_the_previous_app_is_renamed_only_when_the_new_name_has_no_record(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("KAPP_FQ_CONFIGMAP_NAMES", raising=False)
    fake = FakeCluster(Discovery(()))
    stored(fake, "old")
    app, previous = asyncio.run(record.find_or_rename(fake, "ns", "new", "old"))  # type: ignore[arg-type]
    assert previous is not None and previous.configmap_name == "old"
    assert (app.name, app.configmap_name, app.meta.label_value, app.stored) == ("new", "new", "v-old", True)
    stored(fake, "new")
    app, previous = asyncio.run(record.find_or_rename(fake, "ns", "new", "old"))  # type: ignore[arg-type]
    assert previous is None and app.meta.label_value == "v-new"
    app, previous = asyncio.run(record.find_or_rename(fake, "ns", "other", "missing"))  # type: ignore[arg-type]
    assert previous is None and not app.stored


def test_ownership_errors_name_the_owning_app_when_known():
    found = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}
    found["metadata"]["labels"] = {"kapp.k14s.io/app": "123"}  # type: ignore[index]
    new = {key_of(found): {**found, "metadata": {"name": "c", "namespace": "ns"}}}
    with pytest.raises(OwnershipError) as failure:
        check_ownership([found], new, "456", {"123": "app 'owner' namespace: ns"})
    assert str(failure.value) == (
        "Ownership errors:\n- Resource 'configmap/c (v1) namespace: ns' is already associated with a different "
        "app 'owner' namespace: ns (label 'kapp.k14s.io/app=123')"
    )
    with pytest.raises(OwnershipError, match="a different label 'kapp.k14s.io/app=123'$"):
        check_ownership([found], new, "456")
    check_ownership([found], new, "123")


def test_the_metadata_file_is_the_records_json(tmp_path: Path):
    app = record.App("a", "ns", "a", AppMeta("kapp.k14s.io/app", "1"))
    write_app_metadata(str(tmp_path / "meta.yml"), app)
    assert json.loads((tmp_path / "meta.yml").read_text()) == json.loads(app.meta.to_json())
    write_app_metadata(str(tmp_path / "missing" / "meta.yml"), app)  # skipped silently, as kapp
    write_app_metadata("", app)
    labeled = record.labeled("label:a=b")
    assert labeled is not None
    write_app_metadata(str(tmp_path / "labeled.yml"), labeled)
    assert (tmp_path / "labeled.yml").read_text() == (
        '{"labelKey":"","labelValue":"","lastChange":{"startedAt":"0001-01-01T00:00:00Z",'
        '"finishedAt":"0001-01-01T00:00:00Z"},"usedGKs":null}'
    )
