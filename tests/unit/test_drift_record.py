"""Drift is never laundered: what a `preserve` or `warn` update records as last applied is what it applied, drifted
fields it keeps at their live value, and their desired values in `kapply.dev/drift-kept`. So the drift is reported
at every later deploy while it lasts, `enforce` reverts it, and kapp (which reads the same record) sees it as the
difference between the record and the desired state. Each deploy here is `calculate` and then the Applier's write,
against an in-memory cluster that fills in defaults as a server does (which the record's MD5 absorbs)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson

from kapply.apply.execute import Applier
from kapply.apply.options import ApplyOptions
from kapply.config.default import default_config
from kapply.diff.change import Basis, Change, Op, calculate, last_applied, recorded_copy
from kapply.diff.drift import DriftPolicy, as_stored, kept_drift
from kapply.diff.fields import ABSENT, FieldPath, Named, changed_paths, value_at, with_value_at
from kapply.diff.ghost import outside_changes
from kapply.objects import DRIFT_KEPT, IDENTITY, ORIGINAL, ORIGINAL_DIFF_MD5, Obj
from kapply.resources.cluster import Discovery
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster

CONFIG = default_config()
DISCOVERY = Discovery(BUILTIN_TYPES)
REPLICAS = FieldPath(("spec", "replicas"))
IMAGE = FieldPath(("spec", "template", "spec", "containers", Named("web"), "image"))


async def applied(applier: Applier, change: Change) -> None:
    """The change applied and its last-applied record written (which the apply loop waits for at its end)."""
    await applier.apply_one(change)
    await applier.recorded()


def desired(replicas: int = 2, image: str = "web:1", label: str = "a") -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"kapp.k14s.io/app": "1", "tier": label}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": image}, {"name": "log", "image": "log:1"}]},
            },
        },
    }


def server_defaults(obj: Obj) -> None:
    """What the API server fills in: defaults (which the last-applied MD5 absorbs) and a status; a Secret's
    `stringData` is stored as `data`. Managed fields are only those `edit` adds (kapply's writes are not recorded)."""
    obj["metadata"].setdefault("managedFields", [])
    if obj["kind"] == "Secret":
        obj.update(as_stored(obj))
        obj.pop("stringData", None)
        return
    obj["spec"].setdefault("progressDeadlineSeconds", 600)
    for container in obj["spec"]["template"]["spec"]["containers"]:
        container.setdefault("imagePullPolicy", "IfNotPresent")
    obj["status"] = {"replicas": obj["spec"]["replicas"]}


class Quiet:
    def section(self, message: str) -> None:
        pass

    def line(self, message: str) -> None:
        pass

    def warn(self, message: str) -> None:
        raise AssertionError(message)


def cluster_with(new: Obj) -> FakeCluster:
    fake = FakeCluster(DISCOVERY)
    fake.defaults = server_defaults
    deploy(fake, new, DriftPolicy.ENFORCE)
    return fake


def live(fake: FakeCluster) -> Obj:
    [obj] = fake.objects.values()
    return copy.deepcopy(obj)


def plan(fake: FakeCluster, new: Obj, policy: DriftPolicy) -> Change:
    return calculate(new, live(fake) if fake.objects else None, CONFIG, policy=policy)


def deploy(fake: FakeCluster, new: Obj, policy: DriftPolicy) -> Change:
    """One deploy of `new`: the change, applied."""
    change = plan(fake, new, policy)
    applier = Applier(fake, DISCOVERY, CONFIG, ApplyOptions(), Quiet())  # type: ignore[arg-type]
    asyncio.run(applied(applier, change))
    return change


def edit(fake: FakeCluster, path: FieldPath, value: Any, manager: str = "kubectl", subresource: str = "") -> None:
    """Someone else's write of one field (`kubectl scale`: manager kubectl through the scale subresource)."""
    [obj] = fake.objects.values()
    changed = with_value_at(obj, path, value)
    changed["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 100)
    fields: dict[str, Any] = {}
    node = fields
    for part in path.parts:
        key = f'k:{{"name":"{part.name}"}}' if isinstance(part, Named) else f"f:{part}"
        node = node.setdefault(key, {})
    entry = {"manager": manager, "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1"}
    changed["metadata"]["managedFields"] = [
        *obj["metadata"]["managedFields"],
        {**entry, "fieldsV1": fields, **({"subresource": subresource} if subresource else {})},
    ]
    [key] = fake.objects
    fake.objects[key] = changed


def scale(fake: FakeCluster, replicas: int) -> None:
    edit(fake, REPLICAS, replicas, "kubectl", "scale")


def drifted_after_warn_deploy() -> FakeCluster:
    """Seed 004 extended: deployed with 2 replicas, scaled to 0 by hand, then a new image deployed under `warn`."""
    fake = cluster_with(desired())
    scale(fake, 0)
    change = deploy(fake, desired(image="web:2"), DriftPolicy.WARN)
    assert change.op is Op.UPDATE and change.kept == (REPLICAS,)
    return fake


def test_a_warn_deploy_records_what_it_applied_and_the_desired_value_it_kept_from_the_cluster():
    fake = drifted_after_warn_deploy()
    obj = live(fake)
    assert obj["spec"]["replicas"] == 0
    assert value_at(obj, IMAGE) == "web:2"
    want = desired(replicas=0, image="web:2")
    assert recorded_copy(obj) == want  # what was applied, not what was desired
    assert last_applied(obj, CONFIG) == want  # and a valid record: its MD5 is kapp's (tests/e2e check with kapp)
    assert obj["metadata"]["annotations"][DRIFT_KEPT] == '[[["spec","replicas"],2]]'
    assert kept_drift(obj) == ((REPLICAS, 2),)


def test_after_a_warn_deploy_the_drift_is_reported_at_every_sync_and_nothing_is_sent():
    fake = drifted_after_warn_deploy()
    for _ in range(3):
        change = deploy(fake, desired(image="web:2"), DriftPolicy.WARN)
        assert change.op is Op.KEEP and change.basis is Basis.LAST_APPLIED
        assert change.drifted == change.kept == (REPLICAS,)
        [field] = outside_changes(change)
        assert (field.path, field.desired, field.live) == (REPLICAS, 2, 0)
        assert field.owner is not None and (field.owner.manager, field.owner.subresource) == ("kubectl", "scale")
    assert live(fake)["spec"]["replicas"] == 0


def test_switching_to_enforce_reverts_the_kept_field_and_records_the_desired_state():
    fake = drifted_after_warn_deploy()
    change = deploy(fake, desired(image="web:2"), DriftPolicy.ENFORCE)
    assert change.op is Op.UPDATE and change.basis is Basis.LAST_APPLIED
    assert change.left is not None and change.right is not None
    assert changed_paths(change.left, change.right) == [REPLICAS]  # the true difference, and nothing else
    assert (change.left["spec"]["replicas"], change.right["spec"]["replicas"]) == (0, 2)
    [field] = outside_changes(change)  # what `kapply deploy` names as set back
    assert (field.path, field.desired, field.live) == (REPLICAS, 2, 0)
    obj = live(fake)
    assert obj["spec"]["replicas"] == 2 and DRIFT_KEPT not in obj["metadata"]["annotations"]
    assert last_applied(obj, CONFIG) == desired(image="web:2")
    again = plan(fake, desired(image="web:2"), DriftPolicy.ENFORCE)
    assert again.op is Op.KEEP and again.drifted == ()


def test_under_preserve_a_later_desired_change_of_the_kept_field_wins():
    fake = drifted_after_warn_deploy()
    change = deploy(fake, desired(replicas=3, image="web:2"), DriftPolicy.PRESERVE)
    assert change.op is Op.UPDATE and change.kept == () and change.drifted == (REPLICAS,)
    assert outside_changes(change) == ()
    obj = live(fake)
    assert obj["spec"]["replicas"] == 3 and DRIFT_KEPT not in obj["metadata"]["annotations"]
    assert last_applied(obj, CONFIG) == desired(replicas=3, image="web:2")
    assert plan(fake, desired(replicas=3, image="web:2"), DriftPolicy.PRESERVE).op is Op.KEEP


def test_under_preserve_other_desired_changes_keep_the_field_and_its_record():
    fake = drifted_after_warn_deploy()
    change = deploy(fake, desired(image="web:3", label="b"), DriftPolicy.PRESERVE)
    assert change.op is Op.UPDATE and change.kept == (REPLICAS,)
    assert change.left is not None and change.right is not None
    assert [str(p) for p in changed_paths(change.left, change.right)] == [
        "metadata.labels.tier",
        "spec.template.spec.containers[name=web].image",
    ]
    obj = live(fake)
    assert (obj["spec"]["replicas"], value_at(obj, IMAGE)) == (0, "web:3")
    assert last_applied(obj, CONFIG) == desired(replicas=0, image="web:3", label="b")
    assert kept_drift(obj) == ((REPLICAS, 2),)
    assert plan(fake, desired(image="web:3", label="b"), DriftPolicy.WARN).kept == (REPLICAS,)


def test_a_kept_field_changed_again_on_the_cluster_is_reported_with_its_new_value():
    fake = drifted_after_warn_deploy()
    scale(fake, 1)
    change = plan(fake, desired(image="web:2"), DriftPolicy.WARN)
    assert change.op is Op.KEEP and change.basis is Basis.LIVE and change.kept == (REPLICAS,)
    [field] = outside_changes(change)
    assert (field.desired, field.live) == (2, 1)


def test_a_kept_field_set_back_on_the_cluster_is_no_drift():
    fake = drifted_after_warn_deploy()
    scale(fake, 2)
    for policy in (DriftPolicy.PRESERVE, DriftPolicy.WARN):
        change = plan(fake, desired(image="web:2"), policy)
        assert change.op is Op.KEEP and change.drifted == () and outside_changes(change) == (), policy
    enforced = plan(fake, desired(image="web:2"), DriftPolicy.ENFORCE)
    assert enforced.drifted == () and enforced.needs_server_check  # which finds only what the server defaults
    assert enforced.left is not None and enforced.right is not None
    assert REPLICAS not in changed_paths(enforced.left, enforced.right)


def test_the_drift_annotation_is_never_part_of_a_diff():
    fake = drifted_after_warn_deploy()
    change = plan(fake, desired(image="web:3"), DriftPolicy.WARN)
    assert change.to_apply is not None and DRIFT_KEPT in change.to_apply["metadata"]["annotations"]
    for side in (change.left, change.right):
        assert side is not None and DRIFT_KEPT not in side["metadata"].get("annotations", {})
    assert change.left is not None and change.right is not None
    assert changed_paths(change.left, change.right) == [IMAGE]


def test_a_field_inside_a_list_is_recorded_at_its_live_value_and_kept_as_the_desired_list():
    fake = cluster_with(desired())
    edit(fake, IMAGE, "web:hotfix", "kubectl-set")
    deploy(fake, desired(label="b"), DriftPolicy.WARN)
    obj = live(fake)
    assert value_at(obj, IMAGE) == "web:hotfix" and obj["metadata"]["labels"]["tier"] == "b"
    assert last_applied(obj, CONFIG) == with_value_at(desired(label="b"), IMAGE, "web:hotfix")
    containers = FieldPath(("spec", "template", "spec", "containers"))
    assert kept_drift(obj) == ((containers, value_at(desired(), containers)),)
    change = plan(fake, desired(label="b"), DriftPolicy.WARN)
    assert change.op is Op.KEEP and change.kept == (IMAGE,)
    enforced = deploy(fake, desired(label="b"), DriftPolicy.ENFORCE)
    assert enforced.left is not None and enforced.right is not None
    assert changed_paths(enforced.left, enforced.right) == [IMAGE]
    assert value_at(live(fake), IMAGE) == "web:1"


def test_a_kept_secret_value_written_as_string_data_stays_kept_at_later_deploys():
    """The server stores `stringData` as `data`: a kept `data` key is recorded as stored, and later deploys send the
    desired state as stored too, since a `stringData` sent again would overwrite the kept value."""
    secret: Obj = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "ns", "labels": {"kapp.k14s.io/app": "1", "tier": "a"}},
        "stringData": {"password": "hunter2", "user": "admin"},
    }
    password = FieldPath(("data", "password"))
    fake = cluster_with(secret)
    edit(fake, password, "b3RoZXI=", "kubectl-edit")
    relabeled = with_value_at(secret, FieldPath(("metadata", "labels", "tier")), "b")
    assert deploy(fake, relabeled, DriftPolicy.WARN).kept == (password,)
    assert kept_drift(live(fake)) == ((password, "aHVudGVyMg=="),)
    again = with_value_at(secret, FieldPath(("metadata", "labels", "tier")), "c")
    change = deploy(fake, again, DriftPolicy.PRESERVE)
    assert change.op is Op.UPDATE and change.kept == (password,)
    assert change.to_apply is not None and "stringData" not in change.to_apply
    assert live(fake)["data"] == {"password": "b3RoZXI=", "user": "YWRtaW4="}
    assert plan(fake, again, DriftPolicy.WARN).op is Op.KEEP
    assert deploy(fake, again, DriftPolicy.ENFORCE).op is Op.UPDATE
    assert live(fake)["data"]["password"] == "aHVudGVyMg=="


def test_without_drift_the_record_is_what_enforce_writes_and_there_is_no_drift_annotation():
    """Nothing new is written when nothing drifted: the record stays kapp's, byte for byte."""
    annotations = []
    for policy in DriftPolicy:
        fake = cluster_with(desired())
        change = deploy(fake, desired(image="web:2"), policy)
        assert change.op is Op.UPDATE and change.kept == () and change.recorded == change.new, policy
        annotations.append(live(fake)["metadata"]["annotations"])
    assert all(DRIFT_KEPT not in a for a in annotations)
    assert len({orjson.dumps(a, option=orjson.OPT_SORT_KEYS) for a in annotations}) == 1, annotations
    assert set(annotations[0]) == {IDENTITY, ORIGINAL, ORIGINAL_DIFF_MD5}


def test_an_unreadable_drift_annotation_is_no_kept_drift():
    obj = copy.deepcopy(desired())
    for raw in ("not json", "{}", '[["spec", 1]]', "[[[], 1]]", '[[["spec", 0], 1]]', "[" * 10_000):
        obj["metadata"]["annotations"] = {DRIFT_KEPT: raw}
        assert kept_drift(obj) == (), raw
    obj["metadata"]["annotations"] = {DRIFT_KEPT: '[[["spec","replicas"],2],[["metadata","labels","a"],"x"]]'}
    assert kept_drift(obj) == ((REPLICAS, 2), (FieldPath(("metadata", "labels", "a")), "x"))


def test_with_value_at_sets_and_removes_along_keys_positions_and_names():
    obj = desired()
    assert value_at(with_value_at(obj, IMAGE, "x"), IMAGE) == "x"
    assert value_at(obj, IMAGE) == "web:1"  # never changed in place
    containers = FieldPath(("spec", "template", "spec", "containers"))
    log = FieldPath((*containers.parts, Named("log")))
    assert [c["name"] for c in value_at(with_value_at(obj, log, ABSENT), containers)] == ["web"]
    assert value_at(with_value_at(obj, FieldPath(("spec", "replicas")), ABSENT), REPLICAS) is ABSENT
    first = FieldPath(("spec", "template", "spec", "containers", 0, "image"))
    assert value_at(with_value_at(obj, first, "y"), IMAGE) == "y"
    for nowhere in (
        FieldPath(("spec", "missing", "x")),
        FieldPath(("spec", "template", "spec", "containers", Named("gone"), "image")),
        FieldPath(("spec", "template", "spec", "containers", 5)),
    ):
        assert with_value_at(obj, nowhere, "z") == obj
