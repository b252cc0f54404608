"""Drift watches: which object events reach their App (routing by the app label, first sight, fingerprints, kapply's
own writes, deletions, controller-made objects), and the per-namespace fallback for types the controller may not
watch cluster-wide. No cluster: `_event` is called directly, `_watch` replaced or fed by an in-memory fake."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import pytest

from kapply.controller.watch import RECORDS, DriftWatches, drift_fingerprint, only_written_by
from kapply.errors import ClusterError, KapplyError
from kapply.objects import APP_LABEL, IS_APP_LABEL, Obj
from kapply.resources.cluster import FIELD_MANAGER, Cluster, ResourceType
from kapply.resources.labeled import with_identity

T = TypeVar("T")
APP = ("team", "web")
OTHER_APP = ("team", "api")
LABEL = "1234"
VERBS = frozenset({"get", "list", "watch"})
DEPLOYMENTS = ResourceType("apps", "v1", "Deployment", "deployments", True, VERBS)
SECRETS = ResourceType("", "v1", "Secret", "secrets", True, VERBS)
CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True, VERBS)
CLUSTER_ROLES = ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, VERBS)
NO_WATCH = ResourceType("example.com", "v1", "Thing", "things", True, frozenset({"get", "list"}))


def run(test: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(test())  # type: ignore[arg-type]


def deployment(
    *,
    label: str = LABEL,
    generation: int = 1,
    uid: str = "uid-web",
    managers: list[tuple[str, str]] | None = None,
    namespace: str = "team",
) -> Obj:
    obj: Obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": namespace,
            "uid": uid,
            "generation": generation,
            "resourceVersion": "1",
            "labels": {APP_LABEL: label},
        },
        "spec": {"replicas": 1},
        "status": {"readyReplicas": 0},
    }
    obj = with_identity(obj)
    if managers is not None:
        obj["metadata"]["managedFields"] = [{"manager": m, "time": t, "operation": "Update"} for m, t in managers]
    return obj


def configmap(data: dict[str, str], uid: str = "uid-cm") -> Obj:
    return with_identity(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "team", "uid": uid, "labels": {APP_LABEL: LABEL}},
            "data": data,
        }
    )


class Recorded:
    def __init__(self) -> None:
        self.apps: list[tuple[str, str]] = []

    def __call__(self, app: tuple[str, str]) -> None:
        self.apps.append(app)


def routed() -> tuple[DriftWatches, Recorded]:
    notified = Recorded()
    watches = DriftWatches(None, notified)  # type: ignore[arg-type]
    watches.apps[LABEL] = {APP}
    return watches, notified


# Fingerprints and writers.


def test_the_fingerprint_of_an_object_with_a_generation_ignores_all_but_labels_annotations_and_generation() -> None:
    base = deployment()
    other = copy.deepcopy(base)
    other["status"] = {"readyReplicas": 3}
    other["metadata"]["resourceVersion"] = "99"
    other["metadata"]["managedFields"] = [{"manager": "x"}]
    assert drift_fingerprint(other) == drift_fingerprint(base)
    assert drift_fingerprint(deployment(generation=2)) != drift_fingerprint(base)
    labeled = copy.deepcopy(base)
    labeled["metadata"]["labels"]["team"] = "b"
    assert drift_fingerprint(labeled) != drift_fingerprint(base)
    annotated = copy.deepcopy(base)
    annotated["metadata"]["annotations"]["note"] = "x"
    assert drift_fingerprint(annotated) != drift_fingerprint(base)


def test_the_fingerprint_of_an_object_without_a_generation_covers_its_body() -> None:
    base = configmap({"a": "1"})
    assert drift_fingerprint(configmap({"a": "2"})) != drift_fingerprint(base)
    bookkeeping = copy.deepcopy(base)
    bookkeeping["metadata"]["resourceVersion"] = "7"
    bookkeeping["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    assert drift_fingerprint(bookkeeping) == drift_fingerprint(base)


def test_the_fingerprint_does_not_depend_on_key_order() -> None:
    a = configmap({"a": "1", "b": "2"})
    b = copy.deepcopy(a)
    b["data"] = {"b": "2", "a": "1"}
    assert drift_fingerprint(a) == drift_fingerprint(b)


@pytest.mark.parametrize(
    ("managers", "expected"),
    [
        ([], False),
        ([("kapply", "2026-01-01T00:00:02Z")], True),
        ([("kubectl", "2026-01-01T00:00:01Z"), ("kapply", "2026-01-01T00:00:02Z")], True),
        ([("kapply", "2026-01-01T00:00:01Z"), ("kubectl", "2026-01-01T00:00:02Z")], False),
        ([("kapply", "2026-01-01T00:00:02Z"), ("kubectl", "2026-01-01T00:00:02Z")], False),  # a tie may hide theirs
        ([("kapply", "2026-01-01T00:00:02Z"), ("kapply", "2026-01-01T00:00:02Z")], True),
    ],
)
def test_only_written_by_looks_at_the_newest_entries(managers: list[tuple[str, str]], expected: bool) -> None:
    assert only_written_by(deployment(managers=managers), "kapply") is expected


def test_entries_without_a_time_are_older_than_any_with_one() -> None:
    obj = deployment(managers=[("kapply", "2026-01-01T00:00:02Z")])
    obj["metadata"]["managedFields"].append({"manager": "kube-controller-manager", "subresource": "scale"})
    assert only_written_by(obj, "kapply")
    obj["metadata"]["managedFields"] = [{"manager": "kube-controller-manager"}, "not an entry"]
    assert not only_written_by(obj, "kapply")


# Routing of events.


def test_the_first_sight_of_an_object_does_not_notify() -> None:
    watches, notified = routed()
    watches._event("ADDED", deployment())
    assert notified.apps == []


def test_a_change_of_the_fingerprint_notifies_the_app() -> None:
    watches, notified = routed()
    watches._event("ADDED", deployment())
    watches._event("MODIFIED", deployment(generation=2, managers=[("kubectl-edit", "2026-01-01T00:00:05Z")]))
    assert notified.apps == [APP]


def test_an_app_whose_record_claims_anothers_label_value_never_takes_its_drift_away() -> None:
    # A record lies in its tenant's namespace: a tenant may write its own App's record with a victim App's label value.
    watches, notified = routed()
    intruder = ("tenant", "intruder")
    watches.apps[LABEL].add(intruder)
    watches._event("ADDED", deployment())
    watches._event("MODIFIED", deployment(generation=2, managers=[("kubectl-edit", "2026-01-01T00:00:05Z")]))
    assert notified.apps == sorted([APP, intruder])  # each then plans with its own account's rights
    watches.untrack(intruder)
    assert watches.apps == {LABEL: {APP}}


def test_an_app_tracked_with_a_new_label_value_leaves_its_old_one() -> None:
    watches, _ = routed()
    watches._records.append(None)  # type: ignore[arg-type]  # no record watch started
    watches.track(APP, "new-value", [], (), None)  # type: ignore[arg-type]
    assert watches.apps == {"new-value": {APP}}


def test_a_status_only_update_does_not_notify() -> None:
    watches, notified = routed()
    watches._event("ADDED", deployment())
    scaled = deployment(managers=[("kube-controller-manager", "2026-01-01T00:00:05Z")])
    scaled["status"] = {"readyReplicas": 1}
    scaled["metadata"]["resourceVersion"] = "2"
    watches._event("MODIFIED", scaled)
    assert notified.apps == []


def test_kapplys_own_write_does_not_notify_and_becomes_the_new_reference() -> None:
    watches, notified = routed()
    watches._event("ADDED", deployment())
    watches._event("MODIFIED", deployment(generation=2, managers=[(FIELD_MANAGER, "2026-01-01T00:00:05Z")]))
    assert notified.apps == []
    watches._event("MODIFIED", deployment(generation=2, managers=[(FIELD_MANAGER, "2026-01-01T00:00:05Z")]))
    assert notified.apps == []
    watches._event("MODIFIED", deployment(generation=3, managers=[("kubectl", "2026-01-01T00:00:09Z")]))
    assert notified.apps == [APP]


def test_a_write_tied_with_kapplys_notifies() -> None:
    watches, notified = routed()
    watches._event("ADDED", deployment())
    tied = [(FIELD_MANAGER, "2026-01-01T00:00:05Z"), ("kubectl", "2026-01-01T00:00:05Z")]
    watches._event("MODIFIED", deployment(generation=2, managers=tied))
    assert notified.apps == [APP]


def test_a_config_map_whose_data_changes_notifies() -> None:
    watches, notified = routed()
    watches._event("ADDED", configmap({"a": "1"}))
    watches._event("MODIFIED", configmap({"a": "2"}))
    assert notified.apps == [APP]


def test_a_deletion_notifies_and_forgets_the_object() -> None:
    watches, notified = routed()
    watches._event("ADDED", deployment())
    watches._event("DELETED", deployment())
    assert notified.apps == [APP]
    watches._event("ADDED", deployment(generation=5))  # re-created: a first sight again
    assert notified.apps == [APP]


def test_the_deletion_of_an_object_never_seen_notifies() -> None:
    watches, notified = routed()
    watches._event("DELETED", deployment())
    assert notified.apps == [APP]


def test_objects_of_unknown_apps_are_ignored() -> None:
    watches, notified = routed()
    for kind in ("ADDED", "MODIFIED", "DELETED"):
        watches._event(kind, deployment(label="someone-else", generation=len(notified.apps) + 1))
    unlabeled = deployment()
    del unlabeled["metadata"]["labels"]
    watches._event("DELETED", unlabeled)
    assert notified.apps == []


def test_controller_made_objects_are_ignored() -> None:
    """A Pod or ReplicaSet inherits the app label from its template but has no kapp identity of its own."""
    watches, notified = routed()
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-abc",
            "namespace": "team",
            "uid": "uid-pod",
            "labels": {APP_LABEL: LABEL},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-1", "controller": True, "uid": "rs"}],
        },
        "spec": {"nodeName": "a"},
    }
    watches._event("ADDED", pod)
    watches._event("MODIFIED", {**pod, "spec": {"nodeName": "b"}})
    watches._event("DELETED", pod)
    assert notified.apps == []


def test_an_identity_copied_from_another_object_counts_as_controller_made() -> None:
    watches, notified = routed()
    copied = deployment()
    copied["metadata"]["name"] = "web-copy"  # the identity annotation names `web`
    watches._event("DELETED", copied)
    assert notified.apps == []


def test_each_object_is_compared_with_its_own_previous_state() -> None:
    watches, notified = routed()
    watches.apps["other"] = OTHER_APP
    watches._event("ADDED", deployment(uid="a"))
    watches._event("ADDED", deployment(uid="b", label="other", generation=7))
    watches._event("MODIFIED", deployment(uid="b", label="other", generation=7))
    watches._event("MODIFIED", deployment(uid="a", generation=2))
    assert notified.apps == [APP]


def test_an_untracked_app_is_no_longer_notified() -> None:
    async def test() -> list[tuple[str, str]]:
        watches, notified = routed()
        watches._event("ADDED", deployment())
        watches.untrack(APP)
        watches._event("MODIFIED", deployment(generation=2))
        return notified.apps

    assert run(test) == []


# Which watches run.


class Starts:
    """Replaces DriftWatches._watch: records each watch started, and ends at once."""

    def __init__(self) -> None:
        self.started: list[tuple[ResourceType, str | None, Any]] = []

    async def __call__(self, rtype: ResourceType, namespace: str | None, connect: Any) -> None:
        self.started.append((rtype, namespace, connect))


async def connect_a() -> Cluster:
    raise AssertionError("not called")


async def connect_b() -> Cluster:
    raise AssertionError("not called")


async def no_records() -> None:
    return None


def recording() -> tuple[DriftWatches, Starts]:
    watches = DriftWatches(None, Recorded())  # type: ignore[arg-type]
    starts = Starts()
    watches._watch = starts  # type: ignore[method-assign]
    watches._watch_records = no_records  # type: ignore[method-assign]
    return watches, starts


def test_each_type_is_watched_once_cluster_wide_whatever_the_number_of_apps() -> None:
    async def test() -> None:
        watches, starts = recording()
        watches.track(APP, "l1", [DEPLOYMENTS, SECRETS], ("team",), connect_a)
        watches.track(OTHER_APP, "l2", [DEPLOYMENTS], ("team", "other"), connect_b)
        await asyncio.sleep(0)
        assert starts.started == [(DEPLOYMENTS, None, None), (SECRETS, None, None)]
        assert watches.watched == 2
        assert watches.apps == {"l1": {APP}, "l2": {OTHER_APP}}
        watches.stop()
        assert watches.watched == 0

    run(test)


def test_a_type_that_cannot_be_watched_is_not() -> None:
    async def test() -> None:
        watches, starts = recording()
        watches.track(APP, "l1", [NO_WATCH], ("team",), connect_a)
        await asyncio.sleep(0)
        assert starts.started == []
        assert watches.watched == 0

    run(test)


def test_a_type_denied_cluster_wide_is_watched_per_namespace_for_the_apps_using_it() -> None:
    async def test() -> None:
        watches, starts = recording()
        watches.track(APP, "l1", [DEPLOYMENTS, SECRETS], ("team", "shared"), connect_a)
        watches.track(OTHER_APP, "l2", [SECRETS], ("shared", "api"), connect_b)
        watches.track(("x", "y"), "l3", [DEPLOYMENTS], ("x",), connect_b)
        await asyncio.sleep(0)
        starts.started.clear()
        del watches._tasks[(SECRETS, None)]  # as _watch does on the 403
        watches._denied_cluster_wide(SECRETS)
        await asyncio.sleep(0)
        assert starts.started == [
            (SECRETS, "team", connect_a),
            (SECRETS, "shared", connect_a),  # one watch per namespace, with the first App's account
            (SECRETS, "api", connect_b),
        ]
        assert set(watches._tasks) == {(DEPLOYMENTS, None), (SECRETS, "team"), (SECRETS, "shared"), (SECRETS, "api")}
        watches.stop()

    run(test)


def test_an_app_tracked_after_the_denial_gets_per_namespace_watches_at_once() -> None:
    async def test() -> None:
        watches, starts = recording()
        watches._denied_cluster_wide(SECRETS)
        watches.track(APP, "l1", [SECRETS], ("team",), connect_a)
        watches.track(OTHER_APP, "l2", [SECRETS], ("team", "api"), connect_b)
        await asyncio.sleep(0)
        assert starts.started == [(SECRETS, "team", connect_a), (SECRETS, "api", connect_b)]
        watches.stop()

    run(test)


def test_a_denied_cluster_scoped_type_has_no_per_namespace_watch() -> None:
    async def test() -> None:
        watches, starts = recording()
        watches._denied_cluster_wide(CLUSTER_ROLES)
        watches.track(APP, "l1", [CLUSTER_ROLES], ("team",), connect_a)
        await asyncio.sleep(0)
        assert starts.started == []

    run(test)


def test_a_namespace_given_up_is_not_watched_again() -> None:
    async def test() -> None:
        watches, starts = recording()
        watches._denied_cluster_wide(SECRETS)
        watches._given_up.add((SECRETS, "team"))
        watches.track(APP, "l1", [SECRETS], ("team", "api"), connect_a)
        await asyncio.sleep(0)
        assert starts.started == [(SECRETS, "api", connect_a)]
        watches.stop()

    run(test)


def test_an_untracked_app_gets_no_per_namespace_watch_on_a_later_denial() -> None:
    async def test() -> None:
        watches, starts = recording()
        watches.track(APP, "l1", [SECRETS], ("team",), connect_a)
        watches.untrack(APP)
        await asyncio.sleep(0)
        starts.started.clear()
        watches._denied_cluster_wide(SECRETS)
        await asyncio.sleep(0)
        assert starts.started == []
        watches.stop()

    run(test)


# The watch loop, on an in-memory API server.


async def settle(done: Callable[[], bool]) -> None:
    """Let the tasks run (none waits on time) until `done`."""
    for _ in range(200):
        if done():
            return
        await asyncio.sleep(0)
    raise AssertionError("did not settle")


class FakeWatchCluster:
    """List and watch as the API server answers them. `errors` (per namespace: None for cluster-wide) are raised by
    the LIST, in order; `events` are what the watch sends before it waits forever. The app records' LIST and watch
    (selector `kapp.k14s.io/is-app`) find nothing and are counted apart (`records`)."""

    def __init__(self, listed: list[Obj], events: list[tuple[str, Obj]] | None = None) -> None:
        self.listed = listed
        self.events = events or []
        self.errors: dict[str | None, list[int]] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.records = 0
        self.watched_from: list[str] = []
        self.watching = asyncio.Event()
        self.expire_with: list[Obj] | None = None  # the watch ends with 410 Gone, and the next LIST finds these

    async def list_with_version(
        self, rtype: ResourceType, *, namespace: str | None, label_selector: str
    ) -> tuple[list[Obj], str]:
        if label_selector == IS_APP_LABEL:
            self.records += 1
            return [], "5"
        self.requests.append((rtype.path(namespace), namespace))
        assert label_selector == APP_LABEL
        pending = self.errors.get(namespace) or []
        if pending:
            raise ClusterError("API server says: no", status=pending.pop(0))
        return copy.deepcopy(self.listed), "10"

    async def watch(self, rtype: ResourceType, **kwargs: Any) -> AsyncIterator[tuple[str, Obj]]:
        assert kwargs["resource_version"]
        if kwargs["label_selector"] == APP_LABEL:
            self.watched_from.append(kwargs["resource_version"])
            for kind, obj in self.events:
                yield kind, copy.deepcopy(obj)
            self.events = []
            if self.expire_with is not None:
                self.listed, self.expire_with = self.expire_with, None
                raise ClusterError("Watching: too old", status=410)
            self.watching.set()
        await asyncio.Event().wait()  # the watch stays open


def test_the_watch_lists_first_notifies_each_app_once_then_follows_changes() -> None:
    async def test() -> list[tuple[str, str]]:
        cluster = FakeWatchCluster(
            [deployment(uid="a"), deployment(uid="b")],
            [("MODIFIED", deployment(uid="a", generation=2)), ("BOOKMARK", {"metadata": {"resourceVersion": "12"}})],
        )
        notified = Recorded()
        watches = DriftWatches(cluster, notified)  # type: ignore[arg-type]
        watches.track(APP, LABEL, [DEPLOYMENTS], ("team",), connect_a)
        await asyncio.wait_for(cluster.watching.wait(), 1.0)
        watches.stop()
        return notified.apps

    assert run(test) == [APP, APP]  # once after the list (what changed before it), once for the drift


def test_a_watch_denied_cluster_wide_moves_to_the_namespaces_with_the_apps_account() -> None:
    async def test() -> None:
        controller = FakeWatchCluster([])
        controller.errors[None] = [403]
        as_app = FakeWatchCluster([deployment()])
        connected: list[str] = []

        async def connect() -> Cluster:
            connected.append("app")
            return as_app  # type: ignore[return-value]

        watches = DriftWatches(controller, Recorded())  # type: ignore[arg-type]
        watches.track(APP, LABEL, [SECRETS], ("team",), connect)
        await asyncio.wait_for(as_app.watching.wait(), 1.0)
        assert SECRETS in watches._denied
        assert set(watches._tasks) == {(SECRETS, "team")}
        assert connected == ["app"]
        assert as_app.requests == [("/api/v1/namespaces/team/secrets", "team")]
        watches.stop()

    run(test)


async def _given_up_secrets_watch() -> DriftWatches:
    """Watches tracking Secrets in `team`, settled after the controller (cluster-wide) and then the App's account (in
    `team`) were refused."""
    controller = FakeWatchCluster([])
    controller.errors[None] = [403]
    as_app = FakeWatchCluster([])
    as_app.errors["team"] = [403]

    async def connect() -> Cluster:
        return as_app  # type: ignore[return-value]

    watches = DriftWatches(controller, Recorded())  # type: ignore[arg-type]
    watches.track(APP, LABEL, [SECRETS], ("team",), connect)
    await settle(lambda: not watches._tasks)
    return watches


def test_a_namespace_the_apps_account_may_not_watch_either_is_given_up() -> None:
    async def test() -> None:
        watches = await _given_up_secrets_watch()
        assert watches._tasks == {}
        assert watches._given_up == {(SECRETS, "team")}

    run(test)


def test_a_watch_whose_account_is_gone_stops_without_giving_up() -> None:
    async def test() -> None:
        controller = FakeWatchCluster([])
        controller.errors[None] = [403]

        async def connect() -> Cluster:
            raise KapplyError("Preparing kapp: no service account")

        watches = DriftWatches(controller, Recorded())  # type: ignore[arg-type]
        watches.track(APP, LABEL, [SECRETS], ("team",), connect)
        await settle(lambda: not watches._tasks)
        assert watches._tasks == {}
        assert watches._given_up == set()  # the next deploy of an App there watches again

    run(test)


def test_a_watch_too_old_lists_again() -> None:
    async def test() -> int:
        cluster = FakeWatchCluster([deployment()])
        cluster.errors[None] = [410]
        watches = DriftWatches(cluster, Recorded())  # type: ignore[arg-type]
        watches.track(APP, LABEL, [DEPLOYMENTS], ("team",), connect_a)
        await asyncio.wait_for(cluster.watching.wait(), 1.0)
        watches.stop()
        return len(cluster.requests)

    assert run(test) == 2


def test_the_watch_starts_from_the_lists_version_and_keeps_what_it_sees() -> None:
    async def test() -> None:
        cluster = FakeWatchCluster(
            [deployment(uid="a")],
            [("MODIFIED", deployment(uid="a", generation=2)), ("BOOKMARK", {"metadata": {"resourceVersion": "12"}})],
        )
        watches = DriftWatches(cluster, Recorded())  # type: ignore[arg-type]
        watches.track(APP, LABEL, [DEPLOYMENTS], ("team",), connect_a)
        await asyncio.wait_for(cluster.watching.wait(), 1.0)
        assert cluster.requests == [("/apis/apps/v1/deployments", None)]  # one LIST, no request for a version first
        assert cluster.watched_from == ["10"]
        store = watches.cache.store(DEPLOYMENTS, None, APP_LABEL)
        assert store.synced and store.version == "12"
        assert [o["metadata"]["generation"] for o in store.select(LABEL, "team")] == [2]
        assert cluster.records == 1 and watches.cache.store(RECORDS, None, IS_APP_LABEL).synced
        watches.stop()

    run(test)


def test_a_relist_forgets_objects_of_its_type_deleted_while_no_watch_ran() -> None:
    async def test() -> None:
        cluster = FakeWatchCluster([deployment(uid="kept"), deployment(uid="gone")])
        cluster.expire_with = [deployment(uid="kept")]  # "gone" is deleted while the watch is too old
        watches = DriftWatches(cluster, Recorded())  # type: ignore[arg-type]
        watches.track(APP, LABEL, [DEPLOYMENTS], ("team",), connect_a)
        watches._event("ADDED", configmap({"a": "b"}, uid="other-type"))
        await asyncio.wait_for(cluster.watching.wait(), 1.0)
        assert len(cluster.requests) == 2  # listed again after the 410
        assert set(watches._seen) == {"kept", "other-type"}
        store = watches.cache.store(DEPLOYMENTS, None, APP_LABEL)
        assert [o["metadata"]["uid"] for o in store.select(LABEL, None)] == ["kept"]
        watches.stop()

    run(test)


def test_a_watch_given_up_no_longer_serves_what_it_kept() -> None:
    async def test() -> None:
        watches = await _given_up_secrets_watch()
        assert watches.cache.labeled(SECRETS, f"{APP_LABEL}={LABEL}", "team") is None
        assert [k for k in watches.cache.stores if k[2] == "secrets"] == []
        watches.stop()

    run(test)
