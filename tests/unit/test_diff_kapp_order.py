"""kapp's order of a deploy's changes: versioned resources' new versions, then their old versions' deletes, then the
rest."""

from __future__ import annotations

from kapply.diff.change import Change, Op
from kapply.diff.kapp_order import in_kapp_order
from kapply.objects import key_of

VERSIONED = {"kapp.k14s.io/versioned": ""}


def obj(name: str, *, kind: str = "ConfigMap", versioned: bool = False, live: bool = False) -> dict:
    annotations = dict(VERSIONED) if versioned else {}
    if live:  # as listed from the cluster: with kapp's identity, so the app's own, not transient
        annotations["kapp.k14s.io/identity"] = f"v1;ns//{kind}/{name};v1"
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "ns", "annotations": annotations}}


def create(res: dict) -> Change:
    return Change(Op.ADD, key_of(res), res, None, res, None, res)


def delete(res: dict) -> Change:
    return Change(Op.DELETE, key_of(res), None, res, None, res, None)


def names(changes: list[Change]) -> list[str]:
    return [f"{c.op.value} {c.resource['kind']}/{c.resource['metadata']['name']}" for c in changes]


def test_versioned_new_versions_then_old_versions_deletes_then_the_rest():
    changes = [
        create(obj("plain-a")),
        create(obj("cm-ver-3", versioned=True)),
        create(obj("cm", versioned=True)),  # a versioned-keep-original copy: not a version
        create(obj("secret-ver-1", kind="Secret", versioned=True)),
        delete(obj("plain-b", live=True)),
        delete(obj("gone-ver-10", versioned=True, live=True)),
        delete(obj("cm-ver-1", versioned=True, live=True)),
        delete(obj("gone-ver-9", versioned=True, live=True)),
        delete(obj("plain-ver-2", live=True)),  # a -ver- name without the annotation: not a version
        delete(obj("transient-ver-1", versioned=True)),  # transient: not a version
    ]
    assert names(in_kapp_order(changes)) == [
        "add ConfigMap/cm-ver-3",
        "add Secret/secret-ver-1",
        "delete ConfigMap/gone-ver-9",
        "delete ConfigMap/gone-ver-10",
        "delete ConfigMap/cm-ver-1",
        "add ConfigMap/plain-a",
        "add ConfigMap/cm",
        "delete ConfigMap/plain-b",
        "delete ConfigMap/plain-ver-2",
        "delete ConfigMap/transient-ver-1",
    ]


def test_without_versioned_resources_the_order_stays():
    changes = [create(obj("b")), create(obj("a")), delete(obj("c", live=True))]
    assert in_kapp_order(changes) == changes
