"""Fuzz: the app record and app-change metadata kapp and kapply keep in ConfigMaps (`data.spec`). Anything there
decodes to metadata or fails with one KapplyError; the app record's reader names the ConfigMap."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from kapply.app.meta import AppMeta, ChangeMeta
from kapply.app.record import _from_configmap
from kapply.errors import KapplyError
from tests.fuzz.profiles import fuzz_settings
from tests.fuzz.strategies import json_values, mostly, words

change_metas = mostly(
    st.fixed_dictionaries(
        {},
        optional={
            "startedAt": mostly(st.just("2024-01-01T00:00:00Z")),
            "finishedAt": mostly(st.just("2024-01-01T00:00:10Z")),
            "successful": mostly(st.booleans()),
            "description": mostly(words),
            "namespaces": mostly(st.lists(mostly(words), max_size=2)),
        },
    )
)
pairs = mostly(
    st.lists(mostly(st.dictionaries(st.sampled_from(["Group", "Version", "Kind"]), mostly(words))), max_size=2)
)
app_metas = mostly(
    st.fixed_dictionaries(
        {"labelKey": mostly(st.just("kapp.k14s.io/app")), "labelValue": mostly(st.just("123"))},
        optional={"lastChangeName": mostly(words), "lastChange": change_metas, "usedGVs": pairs, "usedGKs": pairs},
    )
)
specs = app_metas.map(json.dumps) | st.text(max_size=20) | json_values.map(json.dumps)


@fuzz_settings
@given(specs)
@example("[1]")  # AttributeError before: a list where the object was
@example('{"labelKey": "k", "labelValue": "v", "usedGVs": [5]}')  # TypeError before
@example('{"labelKey": "k", "labelValue": "v", "lastChange": "x"}')
@example("not json")
def test_app_metadata_decodes_or_fails_with_one_kapply_error(spec):
    try:
        meta = AppMeta.from_json(spec)
    except KapplyError:
        return
    assert AppMeta.from_json(meta.to_json()) == meta


@fuzz_settings
@given(change_metas | json_values)
def test_app_change_metadata_decodes_or_fails_with_one_kapply_error(doc):
    try:
        meta = ChangeMeta.from_json(doc)
    except KapplyError:
        return
    assert ChangeMeta.from_json(meta.to_json()) == meta


@fuzz_settings
@given(st.none() | specs | json_values, st.booleans())
@example(["not", "a", "string"], True)
def test_an_app_record_configmap_decodes_or_fails_naming_the_configmap(spec, has_data):
    configmap: dict[str, Any] = {"metadata": {"name": "app", "namespace": "ns", "annotations": {}}}
    if has_data:
        configmap["data"] = {} if spec is None else {"spec": spec}
    try:
        app = _from_configmap("app", configmap)
    except KapplyError as e:
        assert "App 'app' (namespace: ns) backed by ConfigMap 'app'" in str(e), e
        return
    assert app.name == "app" and isinstance(app.meta, AppMeta)
