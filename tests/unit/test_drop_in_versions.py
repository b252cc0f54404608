"""Versioned and renewable resources as kapp reads them (issue 22): a renewal is measured against the latest version
and makes the next one; a resource's own name finds what it stands for; an object read at another version than it
was written at keeps its identity annotation in the diff; a rebase rule can make a change a noop."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kapply.config.config import Config, parse_config
from kapply.config.inputs import with_defaults
from kapply.diff import versioned
from kapply.diff.change import Op, calculate
from kapply.diff.historyless import historyless, stale_identity
from kapply.diff.renew import renewed
from kapply.objects import Document, ResourceKey

NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
RENEWED = {"kapp.k14s.io/versioned": "", "kapp.k14s.io/renew-duration": "1h"}


def config_map(name: str, annotations: dict, data: dict | None = None, created: datetime | None = None) -> dict:
    meta: dict = {"name": name, "namespace": "ns", "annotations": dict(annotations)}
    if created is not None:
        meta["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
        meta["annotations"]["kapp.k14s.io/identity"] = f"v1;ns//ConfigMap/{name};v1"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"a": "1"}}


def test_the_current_object_of_a_versioned_resource_is_its_latest_version():
    old = config_map("cfg-ver-1", RENEWED, created=NOW - timedelta(days=2))
    latest = config_map("cfg-ver-2", RENEWED, created=NOW - timedelta(days=1))
    plain = config_map("plain", {}, created=NOW)
    current = versioned.current_by_key([latest, old, plain])
    assert current[ResourceKey("ns", "", "ConfigMap", "cfg")] is latest
    assert current[ResourceKey("ns", "", "ConfigMap", "plain")] is plain


def test_a_due_renewal_of_a_versioned_resource_is_its_next_version(config: Config):
    latest = config_map("cfg-ver-1", RENEWED, created=NOW - timedelta(hours=2))
    new = config_map("cfg", RENEWED)
    stamped = renewed(new, versioned.current_by_key([latest])[ResourceKey("ns", "", "ConfigMap", "cfg")], NOW)
    result = versioned.resolve([Document(stamped, "o")], [latest], config)
    assert [d.obj["metadata"]["name"] for d in result.desired] == ["cfg-ver-2"]
    assert result.desired[0].obj["metadata"]["annotations"]["kapp.k14s.io/last-renewed-time"] == "2026-11-26T12:00:00Z"
    early = renewed(new, config_map("cfg-ver-1", RENEWED, created=NOW - timedelta(minutes=5)), NOW)
    assert [d.obj["metadata"]["name"] for d in versioned.resolve([Document(early, "o")], [latest], config).desired] == [
        "cfg-ver-1"
    ]


def test_an_identity_naming_another_version_than_the_one_read_stays_in_the_diff():
    cr = {
        "apiVersion": "example.com/v1",
        "kind": "Foo",
        "metadata": {"name": "x", "namespace": "ns", "annotations": {"kapp.k14s.io/identity": ""}},
    }
    written_at_v1beta1 = {
        **cr,
        "metadata": {
            **cr["metadata"],
            "annotations": {"kapp.k14s.io/identity": "v1;ns/example.com/Foo/x;example.com/v1beta1"},
        },
    }
    assert stale_identity(written_at_v1beta1)
    assert "kapp.k14s.io/identity" in historyless(written_at_v1beta1)["metadata"]["annotations"]
    current = {
        **cr,
        "metadata": {
            **cr["metadata"],
            "annotations": {"kapp.k14s.io/identity": "v1;ns/example.com/Foo/x;example.com/v1"},
        },
    }
    assert not stale_identity(current) and "annotations" not in historyless(current)["metadata"]
    other_object = {
        **cr,
        "metadata": {
            **cr["metadata"],
            "annotations": {"kapp.k14s.io/identity": "v1;ns/example.com/Foo/y;example.com/v1beta1"},
        },
    }
    assert not stale_identity(other_object)


def test_a_noop_annotation_a_rebase_rule_adds_makes_the_change_a_noop():
    rule = parse_config(
        {
            "apiVersion": "kapp.k14s.io/v1alpha1",
            "kind": "Config",
            "rebaseRules": [
                {
                    "path": ["metadata", "annotations", "kapp.k14s.io/noop"],
                    "type": "copy",
                    "sources": ["existing"],
                    "resourceMatchers": [{"allMatcher": {}}],
                }
            ],
        },
        "test",
    )
    config = with_defaults([rule])
    live = config_map("cfg", {"kapp.k14s.io/noop": ""}, created=NOW)
    change = calculate(config_map("cfg", {}, {"a": "2"}), live, config)
    assert change.op is Op.NOOP and change.op.apply_op.value == "noop"
    assert calculate(config_map("cfg", {}, {"a": "2"}), None, config).op is Op.ADD  # nothing to rebase onto
