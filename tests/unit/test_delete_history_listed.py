"""A delete's history (kapply.app.history.listing, delete_all): the changes and their kept Secrets listed together
(a metadata-only LIST of the Secrets by the kept label and type, no GET per change), listed while the app's resources
are deleted, then every change's ConfigMap and kept Secret deleted in one wave (the Secret by its listed UID) beside a
LIST of the history again, which catches a change recorded meanwhile (issue 33: round trips). A user who may not list
Secrets gets today's path: each read by name, a refusal suppressed."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from kapply import delete, deploy
from kapply.app import history
from kapply.app.meta import AppMeta, ChangeMeta
from kapply.app.record import App
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, Discovery, ResourceType
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster
from tests.unit.test_record_round_trips import Server

APP = App("web", "ns", "web", AppMeta("kapp.k14s.io/app", "123"))
CHANGE_LABELS = {"kapp.k14s.io/is-app-change": "", "kapp.k14s.io/app-change-app-label": "123"}


class Recording(FakeCluster):
    """Records the UID precondition of each DELETE; Secrets refused (403) to LIST, GET and DELETE when `refusing`."""

    def __init__(self, *, refusing: bool = False) -> None:
        super().__init__(Discovery(BUILTIN_TYPES))
        self.refusing = refusing
        self.uids: dict[tuple[str, str], str | None] = {}

    def _refuse(self, rtype: ResourceType) -> None:
        if self.refusing and rtype.kind == "Secret":
            raise ClusterError('secrets is forbidden: User "narrow" cannot ...', status=403)

    async def list_metadata(self, rtype: ResourceType, **kwargs: Any) -> list[Obj]:
        self._refuse(rtype)
        return await super().list_metadata(rtype, **kwargs)

    async def get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        self.log.append(("get", rtype.kind, name))
        self._refuse(rtype)
        return await super().get(rtype, namespace, name)

    async def delete(
        self, rtype: ResourceType, namespace: str | None, name: str, *, uid: str | None = None, propagation: str = ""
    ) -> None:
        self._refuse(rtype)
        self.uids[(rtype.kind, name)] = uid
        await super().delete(rtype, namespace, name, uid=uid, propagation=propagation)


async def recorded(
    fake: FakeCluster, name: str, created: str, *, kept: str = history.KEPT_TYPE, labels: Obj = CHANGE_LABELS
) -> None:
    """A change (labeled as APP's unless `labels`), with its kept Secret (of type `kept`) unless `kept` is ""."""
    meta = {"name": name, "namespace": "ns", "labels": labels, "creationTimestamp": created}
    await fake.create(history.CONFIGMAPS, {"metadata": meta})
    if kept:
        secret = {"metadata": {"name": name, "namespace": "ns", "labels": {history.KEPT_LABEL: name}}, "type": kept}
        await fake.create(history.SECRETS, secret)


def change(fake: FakeCluster, name: str, created: str, *, kept: str = history.KEPT_TYPE) -> None:
    asyncio.run(recorded(fake, name, created, kept=kept))


def left(fake: FakeCluster) -> list[tuple[str, str]]:
    return sorted((key[1], key[3]) for key in fake.objects)


def requests(fake: FakeCluster) -> list[tuple[str, str, str]]:
    return [entry for entry in fake.log if entry[0] != "create"]


def test_kept_secrets_are_listed_beside_the_changes_and_deleted_by_their_listed_uid_without_a_get() -> None:
    fake = Recording()
    change(fake, "web-change-aaaaa", "2026-01-01T00:00:00Z")
    change(fake, "web-change-bbbbb", "2026-01-02T00:00:00Z", kept="")  # recorded by kapp: nothing kept
    change(fake, "web-change-ccccc", "2026-01-03T00:00:00Z", kept="Opaque")  # a Secret of its name made otherwise
    listed = asyncio.run(history.listing(cast(Cluster, fake), APP))
    assert [c.name for c in listed.changes] == ["web-change-aaaaa", "web-change-bbbbb", "web-change-ccccc"]
    assert listed.kept == {"web-change-aaaaa": "uid-web-change-aaaaa"}
    assert requests(fake) == [("list", "ConfigMap", "ns"), ("list_metadata", "Secret", "ns")]

    fake.log.clear()
    asyncio.run(history.delete_all(cast(Cluster, fake), APP))
    assert not [entry for entry in fake.log if entry[0] == "get"]
    assert fake.uids[("Secret", "web-change-aaaaa")] == "uid-web-change-aaaaa"
    assert left(fake) == [("Secret", "web-change-ccccc")]


def test_with_an_earlier_listing_every_delete_goes_beside_the_listing_again_and_a_change_recorded_meanwhile_goes_too():
    fake = Recording()
    change(fake, "web-change-aaaaa", "2026-01-01T00:00:00Z")
    change(fake, "web-change-bbbbb", "2026-01-02T00:00:00Z")
    early = history.listing(cast(Cluster, fake), APP)

    async def run() -> None:
        listed = asyncio.ensure_future(early)
        await asyncio.sleep(0)
        await listed
        await recorded(fake, "web-change-zzzzz", "2026-01-03T00:00:00Z")  # a kapp deploy's, while the resources went
        fake.log.clear()
        await history.delete_all(cast(Cluster, fake), APP, listed)

    asyncio.run(run())
    assert requests(fake)[:2] == [("list", "ConfigMap", "ns"), ("list_metadata", "Secret", "ns")]  # the listing again
    first_wave = requests(fake)[2:6]
    assert sorted(first_wave) == [
        ("delete", "ConfigMap", "web-change-aaaaa"),
        ("delete", "ConfigMap", "web-change-bbbbb"),
        ("delete", "Secret", "web-change-aaaaa"),
        ("delete", "Secret", "web-change-bbbbb"),
    ]
    assert sorted(requests(fake)[6:]) == [
        ("delete", "ConfigMap", "web-change-zzzzz"),
        ("delete", "Secret", "web-change-zzzzz"),
    ]
    assert fake.uids[("Secret", "web-change-zzzzz")] == "uid-web-change-zzzzz"
    assert left(fake) == []


class Gated(Recording):
    """A DELETE answers only once the history was listed again (a delete that listed it after would time out)."""

    def __init__(self) -> None:
        super().__init__()
        self.listed_again = asyncio.Event()

    async def list(self, rtype: ResourceType, **kwargs: Any) -> list[Obj]:
        self.listed_again.set()
        return await super().list(rtype, **kwargs)

    async def delete(self, rtype: ResourceType, namespace: str | None, name: str, **kwargs: Any) -> None:
        await asyncio.wait_for(self.listed_again.wait(), 5)
        await super().delete(rtype, namespace, name, **kwargs)


def test_the_deletes_and_the_listing_again_are_one_wave() -> None:
    fake = Gated()
    change(fake, "web-change-aaaaa", "2026-01-01T00:00:00Z")
    listed = history.Listing((history.AppChange("web-change-aaaaa", ChangeMeta(), "", ""),), {"web-change-aaaaa": "u"})

    async def run() -> None:
        async def given() -> history.Listing:
            return listed

        await history.delete_all(cast(Cluster, fake), APP, given())

    asyncio.run(run())
    assert left(fake) == []


def test_a_user_who_may_not_list_secrets_gets_each_read_by_name_and_every_refusal_suppressed() -> None:
    fake = Recording(refusing=True)
    fake.refusing = False
    change(fake, "web-change-aaaaa", "2026-01-01T00:00:00Z")
    fake.refusing = True
    listed = asyncio.run(history.listing(cast(Cluster, fake), APP))
    assert listed.kept is None
    fake.log.clear()
    asyncio.run(history.delete_all(cast(Cluster, fake), APP))
    assert ("get", "Secret", "web-change-aaaaa") in fake.log  # as before: read by name, refused, suppressed
    assert left(fake) == [("Secret", "web-change-aaaaa")]  # the owner reference's garbage collection takes it


def test_a_user_who_may_get_but_not_list_secrets_still_has_the_kept_ones_deleted() -> None:
    fake = Recording()
    change(fake, "web-change-aaaaa", "2026-01-01T00:00:00Z")

    async def refused(rtype: ResourceType, **kwargs: Any) -> list[Obj]:
        raise ClusterError("secrets is forbidden", status=403)

    fake.list_metadata = refused  # type: ignore[method-assign]
    asyncio.run(history.delete_all(cast(Cluster, fake), APP))
    assert ("get", "Secret", "web-change-aaaaa") in fake.log
    assert fake.uids[("Secret", "web-change-aaaaa")] == "uid-web-change-aaaaa"
    assert left(fake) == []


def test_an_earlier_listing_that_failed_is_listed_again_first() -> None:
    fake = Recording()
    change(fake, "web-change-aaaaa", "2026-01-01T00:00:00Z")

    async def failed() -> history.Listing:
        raise ClusterError("the server is currently unable to handle the request", status=503)

    asyncio.run(history.delete_all(cast(Cluster, fake), APP, failed()))
    assert left(fake) == []


class ListedWithTheResources(Server):
    """A resource's DELETE answers only once the history was listed (a delete that listed it after its resources
    would time out); `recorded_meanwhile` is a change a kapp deploy records once the resources are gone."""

    def __init__(self) -> None:
        super().__init__()
        self.history_listed = asyncio.Event()
        self.recorded_meanwhile = False

    async def list_metadata(self, rtype: ResourceType, **kwargs: Any) -> list[Obj]:
        self.history_listed.set()
        return await super().list_metadata(rtype, **kwargs)

    async def delete(self, rtype: ResourceType, namespace: str | None, name: str, **kwargs: Any) -> None:
        if name == "config":
            await asyncio.wait_for(self.history_listed.wait(), 5)
            await super().delete(rtype, namespace, name, **kwargs)
            if self.recorded_meanwhile:
                labels = self.objects[("", "ConfigMap", "ns", "web-change-1")]["metadata"]["labels"]
                await recorded(self, "web-change-kapp", "9999", labels=labels)
            return
        await super().delete(rtype, namespace, name, **kwargs)


def test_a_delete_lists_its_history_with_its_resources_and_deletes_every_change_before_the_record() -> None:
    fake = ListedWithTheResources()
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config"}, "data": {"a": "1"}}

    async def run() -> None:
        planned = await deploy.plan(fake, "web", deploy.Source(resources=[config]), namespace_name="ns")  # type: ignore[arg-type]
        await deploy.run(fake, planned)  # type: ignore[arg-type]
        dropping = await delete.plan(fake, "web")  # type: ignore[arg-type]
        assert dropping is not None
        fake.recorded_meanwhile = True
        fake.log.clear()
        await delete.run(fake, dropping)  # type: ignore[arg-type]

    asyncio.run(run())
    assert left(fake) == []
    deletes = [(kind, name) for verb, kind, name in fake.log if verb == "delete"]
    assert deletes[-1] == ("ConfigMap", "web")  # the record last, once every change is deleted
    assert ("Secret", "web-change-1") in deletes and ("Secret", "web-change-kapp") in deletes
    assert not [entry for entry in fake.log if entry[:2] == ("get", "Secret")]


class Warmed(ListedWithTheResources):
    """Records what the delete asked the pool to open, and whether the history was listed by then."""

    def __init__(self) -> None:
        super().__init__()
        self.warmed: list[tuple[int, int, bool]] = []

    def warm(self, requests: int, gets: int = 0) -> None:
        self.warmed.append((requests, gets, self.history_listed.is_set()))


def test_once_the_history_is_listed_the_connections_of_the_delete_s_end_are_opened() -> None:
    """Each change's two DELETEs on connections of their own, the all-gone check's LISTs, discovery and the listing
    again pipelined by the transport: opened while the resources are deleted, not at the end (bench/why.md)."""
    fake = Warmed()
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config"}, "data": {"a": "1"}}

    async def run() -> int:
        planned = await deploy.plan(fake, "web", deploy.Source(resources=[config]), namespace_name="ns")  # type: ignore[arg-type]
        await deploy.run(fake, planned)  # type: ignore[arg-type]
        deployed = next(o for k, o in fake.objects.items() if k[1] == "ConfigMap" and "-change-" in k[3])
        await recorded(fake, "web-change-2", "9998", labels=deployed["metadata"]["labels"])
        dropping = await delete.plan(fake, "web")  # type: ignore[arg-type]
        assert dropping is not None
        fake.warmed.clear()
        await delete.run(fake, dropping)  # type: ignore[arg-type]
        return len(delete._types(dropping.discovery, dropping.app, False))

    types = asyncio.run(run())
    changes = 2  # the deploy's and web-change-2
    assert fake.warmed == [(2 * changes, types + 4, True)]
