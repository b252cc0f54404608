"""The stages of `kapply.deploy.plan`, each on its own: the manifests read (on a thread, while the app is located),
the app's record checked, the desired resources prepared, the app's existing resources found and the changes between
them calculated; and `plan`, their sequence, against the in-memory cluster."""

from __future__ import annotations

import asyncio
import io
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from kapply import objects
from kapply.app import record
from kapply.app.meta import AppMeta
from kapply.apply.options import ApplyOptions
from kapply.config.config import Config
from kapply.deploy import (
    DeployOptions,
    Desired,
    DiffOptions,
    Existing,
    Listing,
    Located,
    Source,
    calculate_changes,
    check_record,
    desired_resources,
    desired_versions,
    existing_resources,
    filtered_changes,
    kept_kinds,
    locate_app,
    plan,
    read_manifests,
    resource_changes,
    split_manifests,
)
from kapply.diff.change import Op, calculate
from kapply.diff.filter import ChangeFilter
from kapply.errors import AppNotFoundError, ClusterError, KapplyError, ManifestError, OwnershipError
from kapply.objects import Document, Obj, key_of
from kapply.resources.allow import AllowRules
from kapply.resources.cluster import Discovery
from kapply.resources.filters import ResourceFilter
from kapply.resources.labeled import with_identity
from kapply.resources.preparation import Placement
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster

DISCOVERY = Discovery(BUILTIN_TYPES)
APP = record.App("web", "ns", "web", AppMeta(objects.APP_LABEL, "1", used_gks=(("", "ConfigMap"),)))
NEW_APP = replace(APP, stored=False)
PLACEMENT = Placement("ns")
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
NO_DRY_RUN = DiffOptions(server_side_check=False)


def configmap(name: str, namespace: str | None = "ns", annotations: dict[str, str] | None = None, **data: str) -> Obj:
    meta: dict[str, object] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def secret(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "ns"}}


def labeled(obj: Obj, value: str = "1") -> Obj:
    """`obj` labeled as the app with label value `value`'s, without kapp's identity annotation: made by a controller,
    say (a transient object)."""
    return {**obj, "metadata": {**obj["metadata"], "labels": {**objects.labels(obj), objects.APP_LABEL: value}}}


def deployed(obj: Obj, value: str = "1") -> Obj:
    """`obj` as the app with label value `value` deployed it: labeled, with kapp's identity annotation."""
    return with_identity(labeled(obj, value))


def documents(*objs: Obj) -> list[Document]:
    return [Document(obj, f"resource {i}") for i, obj in enumerate(objs)]


def located(app: record.App = APP, discovery: Discovery = DISCOVERY) -> Located:
    return Located(app, "ns", None, discovery, None)


def desired(*objs: Obj, app: record.App = APP, options: DeployOptions = DeployOptions()) -> Desired:
    return desired_resources(split_manifests(documents(*objs)), located(app), PLACEMENT, options)


def names(objs: object) -> list[str]:
    return [obj["metadata"]["name"] for obj in objs]  # type: ignore[attr-defined, index]


def cluster_with(*objs: Obj, app: record.App | None = None) -> FakeCluster:
    """The in-memory cluster holding `objs` (ConfigMaps and Secrets), and `app`'s record."""
    fake = FakeCluster(DISCOVERY)
    for obj in objs:
        asyncio.run(fake.create(DISCOVERY.find(obj["apiVersion"], obj["kind"]), obj))  # type: ignore[arg-type]
    if app is not None:
        asyncio.run(fake.create(record.CONFIGMAPS, record.new_record(app, {}, {})))
    fake.log.clear()
    return fake


# read manifests


def test_the_manifests_configs_are_taken_out_of_the_resources_and_merged_with_kapps_defaults(config: Config):
    user_config = {"apiVersion": "kapp.k14s.io/v1alpha1", "kind": "Config", "additionalLabels": {"team": "a"}}
    manifests = split_manifests(documents(configmap("c"), user_config))
    assert manifests.docs == (Document(configmap("c"), "resource 0"),)
    assert manifests.config.additional_labels == {"team": "a"}
    assert manifests.config.rebase_rules == config.rebase_rules


class Stdin(io.StringIO):
    """stdin whose text can be read only once `ready` is set."""

    def __init__(self, text: str, ready: threading.Event) -> None:
        super().__init__(text)
        self.ready = ready

    def read(self, size: int | None = -1) -> str:
        assert self.ready.wait(10), "the event loop did not go on while the manifests were read"
        return super().read(size)


def test_the_manifests_are_read_on_a_thread_while_the_event_loop_goes_on():
    ready = threading.Event()

    async def meanwhile() -> str:
        ready.set()  # never runs if the manifests are read on the event loop
        return "located"

    async def scenario() -> tuple[list[str], str]:
        locating = asyncio.ensure_future(meanwhile())
        source = Source(["-"], stdin=Stdin("kind: ConfigMap\napiVersion: v1\nmetadata: {name: c}\n", ready))
        manifests = await read_manifests(source, meanwhile=locating)
        return names(d.obj for d in manifests.docs), await locating

    assert asyncio.run(scenario()) == (["c"], "located")


def test_what_is_wrong_with_the_manifests_is_said_first_and_what_went_on_meanwhile_is_cancelled():
    ready = threading.Event()

    async def failing() -> None:
        ready.set()
        raise ClusterError("API server says: forbidden", status=403)

    async def scenario(meanwhile: asyncio.Future[None], source: Source) -> None:
        with pytest.raises(ManifestError):
            await read_manifests(source, meanwhile=meanwhile)
        assert meanwhile.done()

    async def failed_first() -> None:  # the app's lookup failed while the manifests were read: their error is said
        await scenario(asyncio.ensure_future(failing()), Source(["-"], stdin=Stdin("a: [", ready)))

    async def still_going() -> None:
        going = asyncio.ensure_future(asyncio.sleep(10))
        await scenario(going, Source([]))
        assert going.cancelled()

    asyncio.run(failed_first())
    asyncio.run(still_going())


# locate app


def test_a_new_app_is_located_without_listing_anything():
    fake = cluster_with(deployed(configmap("c")))
    found = asyncio.run(locate_app(fake, "ns", "web", DeployOptions()))  # type: ignore[arg-type]
    assert (found.app.stored, found.namespace, found.renamed_from, found.listed) == (False, "ns", None, None)
    assert {verb for verb, _, _ in fake.log} == {"get"}


def test_a_stored_apps_objects_of_the_types_it_used_are_listed_ahead():
    fake = cluster_with(deployed(configmap("c")), deployed(secret("s")), app=APP)
    found = asyncio.run(locate_app(fake, "ns", "web", DeployOptions()))  # type: ignore[arg-type]
    assert found.app.stored and found.listed is not None
    assert {rtype.kind: names(objs) for rtype, objs in found.listed.by_type.items()} == {"ConfigMap": ["c"]}
    options = DeployOptions(scope_to_fallback_namespaces=True)
    assert asyncio.run(locate_app(fake, "ns", "web", options)).listed is None  # type: ignore[arg-type]


def test_an_app_renamed_from_its_previous_name_is_listed_later():
    fake = cluster_with(deployed(configmap("c")), app=replace(APP, name="old", configmap_name="old"))
    found = asyncio.run(locate_app(fake, "ns", "web", DeployOptions(prev_app="old")))  # type: ignore[arg-type]
    assert found.renamed_from is not None and found.renamed_from.name == "old"
    assert (found.app.name, found.app.stored, found.listed) == ("web", True, None)


# check the record


def test_a_rename_is_refused_in_a_diff_run():
    renaming = replace(located(), renamed_from=replace(APP, name="old"))
    fake = cluster_with()
    with pytest.raises(AppNotFoundError, match=r"^App 'web' \(namespace: ns\) does not exist"):
        asyncio.run(check_record(fake, renaming, DeployOptions(diff=DiffOptions(run=True))))  # type: ignore[arg-type]
    asyncio.run(check_record(fake, renaming, DeployOptions()))  # type: ignore[arg-type]


class NoNamespace(FakeCluster):
    """A cluster without the namespace the app's record would go to."""

    async def create(self, rtype, obj, *, dry_run=False):  # type: ignore[no-untyped-def]
        self.log.append(("create" if not dry_run else "create (dry run)", rtype.kind, obj["metadata"]["name"]))
        raise ClusterError('namespaces "ns" not found', status=404)


def test_a_new_apps_record_must_be_creatable_unless_the_plan_is_only_shown():
    fake = NoNamespace(DISCOVERY)
    with pytest.raises(KapplyError, match='namespaces "ns" not found'):
        asyncio.run(check_record(fake, located(NEW_APP), DeployOptions()))  # type: ignore[arg-type]
    assert fake.log == [("create (dry run)", "ConfigMap", "web")]
    fake.log.clear()
    asyncio.run(check_record(fake, located(NEW_APP), DeployOptions(diff=DiffOptions(run=True))))  # type: ignore[arg-type]
    asyncio.run(check_record(fake, located(APP), DeployOptions()))  # type: ignore[arg-type]
    assert fake.log == []


# desired resources


def test_the_desired_resources_are_placed_and_labeled_for_the_app():
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
    resources = desired(configmap("c", namespace=None), namespace)
    assert [(objects.namespace(d.obj), objects.labels(d.obj)[objects.APP_LABEL]) for d in resources.resources] == [
        ("ns", "1"),
        ("", "1"),
    ]
    assert (resources.namespaces, resources.not_allowed) == (("(cluster)", "ns"), ())


def test_the_namespaces_shown_are_those_of_the_resources_before_the_filters():
    options = DeployOptions(resource_filter=ResourceFilter(namespaces=("other",)))
    resources = desired(configmap("a"), configmap("b", "other"), options=options)
    assert names(d.obj for d in resources.resources) == ["b"]
    assert resources.namespaces == ("ns", "other")


def test_resources_outside_the_allowed_namespaces_are_named_for_the_plan_to_refuse():
    options = DeployOptions(allow=AllowRules(namespaces=("ns",)))
    assert desired(configmap("a"), configmap("b", "other"), options=options).not_allowed == (
        "Resource 'configmap/b (v1) namespace: other' is outside of allowed namespaces (resource 1)",
    )


def test_an_empty_set_of_resources_is_refused_unless_allowed_or_patching():
    with pytest.raises(ManifestError, match="^Trying to apply empty set of resources"):
        desired()
    with pytest.raises(ManifestError, match="^Trying to apply empty set of resources"):
        desired(configmap("a"), options=DeployOptions(resource_filter=ResourceFilter(names=("b",))))
    assert desired(options=DeployOptions(allow_empty=True)).resources == ()
    assert desired(options=DeployOptions(patch=True)).resources == ()


def test_a_failing_api_service_is_refused_when_the_manifests_or_the_apps_record_need_it():
    failing = Discovery(BUILTIN_TYPES, frozenset({"metrics.k8s.io/v1beta1"}))
    manifests = split_manifests(documents(configmap("c")))
    needing = replace(APP, meta=replace(APP.meta, used_gvs=(("metrics.k8s.io", "v1beta1"),)))
    with pytest.raises(ClusterError, match="^unable to retrieve the complete list of server APIs"):
        desired_resources(manifests, located(needing, failing), PLACEMENT, DeployOptions())
    ignoring = DeployOptions(ignore_failing_api_services=True)
    assert len(desired_resources(manifests, located(needing, failing), PLACEMENT, ignoring).resources) == 1
    assert len(desired_resources(manifests, located(APP, failing), PLACEMENT, DeployOptions()).resources) == 1


# existing resources


def test_the_apps_objects_are_found_by_its_label_and_the_other_desired_resources_by_name():
    old, made = deployed(configmap("old")), labeled(configmap("made"))
    fake = cluster_with(old, made, configmap("adopted"), deployed(configmap("theirs"), "2"), app=APP)
    resources = desired(configmap("adopted"), configmap("new"))
    existing = asyncio.run(existing_resources(fake, located(), resources, PLACEMENT, DeployOptions()))  # type: ignore[arg-type]
    assert names(existing.by_key.values()) == ["old", "made", "adopted"]
    assert existing.found_by_name == {key_of(configmap("adopted"))}
    assert existing.listing == Listing(
        frozenset({("", "ConfigMap")}), frozenset({"ns"}), frozenset({(key_of(old), "uid-old")})
    )
    assert [existing.transient(obj) for obj in existing.by_key.values()] == [False, True, False]


def test_a_desired_resource_another_app_owns_is_refused_unless_ownership_is_overridden():
    fake = cluster_with(deployed(configmap("theirs"), "2"))
    resources = desired(configmap("theirs"))
    with pytest.raises(OwnershipError, match="already associated with a different label 'kapp.k14s.io/app=2'"):
        asyncio.run(existing_resources(fake, located(), resources, PLACEMENT, DeployOptions()))  # type: ignore[arg-type]
    overriding = DeployOptions(override_ownership=True)
    existing = asyncio.run(existing_resources(fake, located(), resources, PLACEMENT, overriding))  # type: ignore[arg-type]
    assert existing.found_by_name == {key_of(configmap("theirs"))}


def test_an_app_record_is_never_taken_over():
    fake = cluster_with(app=replace(APP, name="other", configmap_name="other"))
    with pytest.raises(OwnershipError, match="has a disallowed label 'kapp.k14s.io/is-app'"):
        asyncio.run(existing_resources(fake, located(), desired(configmap("other")), PLACEMENT, DeployOptions()))  # type: ignore[arg-type]


def test_a_new_app_has_only_the_desired_resources_found_by_name():
    fake = cluster_with(deployed(configmap("old")), configmap("adopted"))
    resources = desired(configmap("adopted"), app=NEW_APP)
    existing = asyncio.run(existing_resources(fake, located(NEW_APP), resources, PLACEMENT, DeployOptions()))  # type: ignore[arg-type]
    assert (names(existing.by_key.values()), existing.listing) == (["adopted"], None)
    assert {verb for verb, _, _ in fake.log} == {"get"}


def test_the_resource_filter_leaves_out_existing_objects_too():
    fake = cluster_with(deployed(configmap("old")), deployed(configmap("kept")), configmap("adopted"), app=APP)
    options = DeployOptions(resource_filter=ResourceFilter(names=("kept",)))
    resources = desired(configmap("kept"), configmap("adopted"), options=DeployOptions())
    existing = asyncio.run(existing_resources(fake, located(), resources, PLACEMENT, options))  # type: ignore[arg-type]
    assert (names(existing.by_key.values()), existing.found_by_name) == (["kept"], frozenset())


# changes


def existing_of(*objs: Obj, by_name: tuple[Obj, ...] = ()) -> Existing:
    return Existing({key_of(obj): obj for obj in (*objs, *by_name)}, frozenset(key_of(o) for o in by_name), None)


def test_each_desired_resource_changes_and_each_one_no_longer_desired_is_deleted():
    resources = desired(configmap("new"), configmap("same", x="2"))
    existing = existing_of(deployed(configmap("same", x="1")), deployed(configmap("gone")))
    config = split_manifests([]).config
    changes = resource_changes(desired_versions(resources, existing, config, NOW), existing, config, DeployOptions())
    assert [(c.op, c.key.name) for c in changes] == [(Op.ADD, "new"), (Op.UPDATE, "same"), (Op.DELETE, "gone")]


def test_deleting_what_a_controller_made_is_an_ignored_change_shown_only_when_asked(config: Config):
    resources = desired(configmap("new"))
    existing = existing_of(labeled(configmap("made")))
    resolved = desired_versions(resources, existing, config, NOW)
    assert [c.key.name for c in resource_changes(resolved, existing, config, DeployOptions())] == ["new"]
    shown = resource_changes(resolved, existing, config, DeployOptions(apply=ApplyOptions(ignored=True)))
    assert [(c.op, c.key.name, c.ignored) for c in shown] == [(Op.ADD, "new", False), (Op.DELETE, "made", True)]
    found_by_name = existing_of(by_name=(labeled(configmap("made")),))  # kapp's Get: never transient
    shown = resource_changes(resolved, found_by_name, config, DeployOptions())
    assert [(c.op, c.key.name, c.ignored) for c in shown] == [(Op.ADD, "new", False), (Op.DELETE, "made", False)]


def version_1(resources: Desired, renewed_at: datetime) -> Obj:
    """The first version of the one desired resource, as deployed and renewed at `renewed_at`."""
    stamp = renewed_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    obj = objects.with_annotations(resources.resources[0].obj, {objects.LAST_RENEWED_TIME: stamp})
    return with_identity({**obj, "metadata": {**obj["metadata"], "name": "conf-ver-1"}})


def test_renewal_comes_before_versioning_so_a_renewed_resource_is_a_new_version(config: Config):
    annotations = {objects.VERSIONED: "", objects.RENEW_DURATION: "1h"}
    resources = desired(configmap("conf", annotations=annotations, x="1"))
    recent = existing_of(version_1(resources, NOW - timedelta(minutes=10)))
    resolved = desired_versions(resources, recent, config, NOW)
    assert (names(d.obj for d in resolved.desired), resolved.previous) == (["conf-ver-1"], {})
    assert [c.op for c in resource_changes(resolved, recent, config, DeployOptions())] == [Op.KEEP]

    stale = existing_of(version_1(resources, NOW - timedelta(hours=2)))
    resolved = desired_versions(resources, stale, config, NOW)
    [renewed] = resolved.desired
    assert renewed.obj["metadata"]["name"] == "conf-ver-2"
    assert objects.annotations(renewed.obj)[objects.LAST_RENEWED_TIME] == "2026-01-02T03:04:05Z"
    assert names(resolved.previous.values()) == ["conf-ver-1"]
    assert [(c.op, c.key.name) for c in resource_changes(resolved, stale, config, DeployOptions())] == [
        (Op.ADD, "conf-ver-2")  # and the previous version kept
    ]


def test_the_diff_filter_keeps_its_changes_and_patch_no_deletes(config: Config):
    changes = [calculate(configmap("a"), None, config), calculate(None, deployed(configmap("b")), config)]
    assert [c.op for c in filtered_changes(changes, DeployOptions())] == [Op.ADD, Op.DELETE]
    assert [c.op for c in filtered_changes(changes, DeployOptions(patch=True))] == [Op.ADD]
    deletes = DeployOptions(change_filter=ChangeFilter(ops=("delete",)))
    assert [c.op for c in filtered_changes(changes, deletes)] == [Op.DELETE]


def test_the_kinds_used_while_applying_are_those_of_the_existing_resources_kept_but_transient_ones():
    cm = deployed(configmap("c"))
    existing = existing_of(cm, deployed(secret("s")), labeled({**secret("made"), "apiVersion": "v2"}))
    assert kept_kinds({key_of(cm)}, existing, DeployOptions()) == {("", "v1", "ConfigMap"), ("", "v1", "Secret")}
    assert kept_kinds({key_of(cm)}, existing, DeployOptions(patch=True)) == {("", "v1", "ConfigMap")}


def test_the_changes_are_calculated_filtered_and_the_kinds_they_use_named(config: Config):
    resources = desired(configmap("c"))
    existing = existing_of(deployed(resources.resources[0].obj), deployed(secret("s")))
    fake = cluster_with()
    for options, ops, used in [
        (DeployOptions(diff=NO_DRY_RUN), [Op.KEEP, Op.DELETE], {("", "v1", "ConfigMap"), ("", "v1", "Secret")}),
        (DeployOptions(diff=NO_DRY_RUN, patch=True), [Op.KEEP], {("", "v1", "ConfigMap")}),
    ]:
        changes = asyncio.run(calculate_changes(fake, DISCOVERY, config, resources, existing, options))  # type: ignore[arg-type]
        assert ([c.op for c in changes.changes], changes.used, changes.new_used) == (
            ops,
            used,
            {("", "v1", "ConfigMap")},
        )
    assert fake.log == []


# plan: the stages in sequence


class Cluster(FakeCluster):
    namespace = "ns"  # the kubeconfig context's


def test_a_plan_is_made_of_its_stages_and_writes_nothing():
    app = replace(APP, meta=replace(APP.meta, used_gks=(("", "Secret"),)))
    fake = Cluster(DISCOVERY)
    for obj in (deployed(secret("gone")), deployed(configmap("kept")), configmap("adopted")):
        asyncio.run(fake.create(DISCOVERY.find(obj["apiVersion"], obj["kind"]), obj))  # type: ignore[arg-type]
    asyncio.run(fake.create(record.CONFIGMAPS, record.new_record(app, {}, {})))
    fake.log.clear()
    source = Source(resources=[configmap("kept", namespace=None), configmap("adopted"), configmap("new")])
    made = asyncio.run(plan(fake, "web", source, DeployOptions(diff=NO_DRY_RUN)))  # type: ignore[arg-type]
    assert [(c.change.op, c.change.key.name) for c in made.changes] == [
        (Op.UPDATE, "kept"),  # found by the app's label
        (Op.UPDATE, "adopted"),  # found by name: labeled now
        (Op.ADD, "new"),
        (Op.DELETE, "gone"),
    ]
    assert (made.app.name, made.renamed_from, made.namespaces, made.not_allowed) == ("web", None, ("ns",), ())
    assert made.listing is not None and made.listing.scope == {("", "Secret"), ("", "ConfigMap")}
    assert made.used == {("", "v1", "ConfigMap"), ("", "v1", "Secret")}
    assert made.new_used == {("", "v1", "ConfigMap")}
    assert {verb for verb, _, _ in fake.log} <= {"get", "list"}


class Unreachable(Cluster):
    async def get(self, rtype, namespace, name):  # type: ignore[no-untyped-def]
        raise ClusterError("connection refused")


def test_a_plan_says_what_is_wrong_with_the_manifests_before_what_is_wrong_with_the_cluster():
    with pytest.raises(ManifestError, match="Expected at least one --file"):
        asyncio.run(plan(Unreachable(DISCOVERY), "web", Source()))  # type: ignore[arg-type]
    with pytest.raises(ClusterError, match="connection refused"):
        asyncio.run(plan(Unreachable(DISCOVERY), "web", Source(resources=[configmap("c")])))  # type: ignore[arg-type]
