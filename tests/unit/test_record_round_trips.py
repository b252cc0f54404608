"""The app record's round trips (issue 33): both of its names are asked at once, the answers still taken in kapp's
order; an update starts from the record as this process last wrote it, and reads it only when someone else wrote in
between (or deleted it); a new app's record is checked beside the plan's lookups; an app's changes are deleted at
once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from kapply import delete, deploy, objects
from kapply.app import history, record
from kapply.app.meta import AppMeta, ChangeMeta
from kapply.errors import AppNotFoundError, ClusterError, KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import Discovery, ResourceType
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster


class TwoNames:
    """Answers a GET only once both names are asked (a lookup one after the other would hang), from `answers`."""

    def __init__(self, answers: dict[str, Obj | None | ClusterError]) -> None:
        self.answers = answers
        self.asked: list[str] = []
        self.both = asyncio.Event()

    async def get(self, rtype: object, namespace: str, name: str) -> Obj | None:
        self.asked.append(name)
        if len(self.asked) == 2:
            self.both.set()
        await asyncio.wait_for(self.both.wait(), 5)
        answer = self.answers[name]
        if isinstance(answer, ClusterError):
            raise answer
        return answer


def configmap(name: str, label_value: str) -> Obj:
    spec = AppMeta("kapp.k14s.io/app", label_value).to_json().decode()
    return {"metadata": {"name": name, "namespace": "ns"}, "data": {"spec": spec}}


def find(answers: dict[str, Obj | None | ClusterError]) -> record.App | None:
    return asyncio.run(record.find(TwoNames(answers), "ns", "web"))  # type: ignore[arg-type]


def test_both_names_are_asked_at_once_and_the_migrated_one_wins():
    fq = "web" + record.FQ_SUFFIX
    found = find({fq: configmap(fq, "fq"), "web": configmap("web", "plain")})
    assert found is not None and (found.configmap_name, found.meta.label_value) == (fq, "fq")
    found = find({fq: None, "web": configmap("web", "plain")})
    assert found is not None and (found.configmap_name, found.meta.label_value) == ("web", "plain")
    assert find({fq: None, "web": None}) is None


def test_an_error_counts_only_where_the_names_before_it_were_absent():
    fq = "web" + record.FQ_SUFFIX
    denied = ClusterError("configmaps is forbidden", 403, "Forbidden")
    found = find({fq: configmap(fq, "fq"), "web": denied})
    assert found is not None and found.configmap_name == fq
    with pytest.raises(ClusterError, match="forbidden"):
        find({fq: denied, "web": configmap("web", "plain")})
    with pytest.raises(ClusterError, match="forbidden"):
        find({fq: None, "web": denied})


def stored_app(fake: FakeCluster) -> record.App:
    app = record.App("web", "ns", "web", AppMeta("kapp.k14s.io/app", "v1"))
    asyncio.run(fake.create(record.CONFIGMAPS, record.new_record(app, {}, {})))
    return app


def label(value: str) -> Callable[[Obj], None]:
    def write(cm: Obj) -> None:
        cm["metadata"].setdefault("labels", {})["step"] = value

    return write


def test_an_update_after_this_processs_own_write_does_not_read_the_record_again():
    fake = FakeCluster(Discovery(()))
    app = stored_app(fake)

    async def updates() -> None:
        await record.update_record(fake, app, label("one"))  # type: ignore[arg-type]
        await record.update_record(fake, app, label("two"))  # type: ignore[arg-type]

    asyncio.run(updates())
    assert [verb for verb, _, _ in fake.log if verb in ("get", "update")] == ["get", "update", "update"]
    assert fake.objects[("", "ConfigMap", "ns", "web")]["metadata"]["labels"]["step"] == "two"


def test_a_write_in_between_is_read_and_kept_and_a_deleted_record_is_missing():
    fake = FakeCluster(Discovery(()))
    app = stored_app(fake)

    async def updates() -> None:
        await record.update_record(fake, app, label("one"))  # type: ignore[arg-type]
        other = await fake.get(record.CONFIGMAPS, "ns", "web")
        assert other is not None
        other["metadata"]["annotations"]["other"] = "kept"
        await fake.update(record.CONFIGMAPS, other)  # another writer: the remembered version is stale
        await record.update_record(fake, app, label("two"))  # type: ignore[arg-type]
        cm = fake.objects[("", "ConfigMap", "ns", "web")]
        assert (cm["metadata"]["labels"]["step"], cm["metadata"]["annotations"]["other"]) == ("two", "kept")
        await fake.delete(record.CONFIGMAPS, "ns", "web")  # by another process: this one still remembers it
        with pytest.raises(AppNotFoundError, match="does not exist"):
            await record.update_record(fake, app, label("three"))  # type: ignore[arg-type]

    asyncio.run(updates())


class NoNamespace(FakeCluster):
    """The new app's namespace does not exist: the record's dry-run create fails, after the plan's first lookup of a
    desired resource was sent (a check that held the lookups back would time out)."""

    def __init__(self, *, lookups: bool) -> None:
        super().__init__(Discovery(BUILTIN_TYPES))
        self.lookups = lookups
        self.namespace = "gone"
        self.looked_up = asyncio.Event()

    async def get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        if not name.startswith("web"):  # not the record
            self.looked_up.set()
        return await super().get(rtype, namespace, name)

    async def list(
        self, rtype: ResourceType, *, label_selector: str | None = None, namespace: str | None = None
    ) -> list[Obj]:
        self.looked_up.set()
        return await super().list(rtype, label_selector=label_selector, namespace=namespace)

    async def create(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        assert dry_run
        if self.lookups:
            await asyncio.wait_for(self.looked_up.wait(), 5)
        raise ClusterError('namespaces "gone" not found', status=404)


def planned(resources: list[Obj]) -> None:
    fake = NoNamespace(lookups=bool(resources))
    asyncio.run(deploy.plan(fake, "web", deploy.Source(resources=resources), namespace_name="gone"))  # type: ignore[arg-type]


def test_a_new_apps_record_is_checked_beside_the_lookups_and_its_error_comes_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KAPP_FQ_CONFIGMAP_NAMES", raising=False)
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config"}, "data": {"a": "1"}}
    with pytest.raises(KapplyError, match='^namespaces "gone" not found$'):
        planned([config])
    with pytest.raises(KapplyError, match='^namespaces "gone" not found$'):  # not the plan's own refusal
        planned([])  # the plan refuses an empty set of resources


def test_an_apps_changes_are_deleted_at_once_the_first_error_in_order_raised_after_all():
    fake = FakeCluster(Discovery(BUILTIN_TYPES))
    fake.write_delay = 0.01
    app = stored_app(fake)
    changes = [history.AppChange(f"web-change-{i}", ChangeMeta(), "", "") for i in range(3)]
    for change in changes[1:]:
        asyncio.run(fake.create(record.CONFIGMAPS, {"metadata": {"name": change.name, "namespace": "ns"}}))
    asyncio.run(history._delete(fake, app, changes[1:]))  # type: ignore[arg-type]
    assert fake.max_in_flight == 2 and not [k for k in fake.objects if k[3].startswith("web-change")]

    class Refusing(FakeCluster):
        async def delete(self, rtype: ResourceType, namespace: str | None, name: str, **kwargs: Any) -> None:
            await super().delete(rtype, namespace, name, **kwargs)
            if rtype.kind == "ConfigMap" and name != "web-change-2":
                raise ClusterError(f"cannot delete {name}", status=403)

    refusing = Refusing(Discovery(BUILTIN_TYPES))
    with pytest.raises(ClusterError, match="^cannot delete web-change-0$"):
        asyncio.run(history._delete(refusing, app, changes))  # type: ignore[arg-type]
    assert [name for verb, kind, name in refusing.log if verb == "delete" and kind == "ConfigMap"] == [
        c.name for c in changes
    ]


class DiscoveryBesideTheRecord(FakeCluster):
    """The record's lookup and discovery answer only once both are asked (a delete that asked one after the other
    would time out); discovery fails when `broken`."""

    def __init__(self, *, broken: bool = False) -> None:
        super().__init__(Discovery(BUILTIN_TYPES))
        self.namespace = "ns"
        self.broken = broken
        self.asked = asyncio.Event()
        self.discovering = asyncio.Event()

    async def get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        self.asked.set()
        await asyncio.wait_for(self.discovering.wait(), 5)
        return await super().get(rtype, namespace, name)

    async def discovery(self, refresh: bool = False) -> Discovery:
        self.discovering.set()
        await asyncio.wait_for(self.asked.wait(), 5)
        if self.broken:
            raise ClusterError("discovery failed", status=503)
        return await super().discovery(refresh)


def test_a_delete_discovers_beside_the_records_lookup_and_a_missing_app_is_missing_whatever_discovery_says():
    fake = DiscoveryBesideTheRecord()
    stored_app(fake)
    planned = asyncio.run(delete.plan(fake, "web"))  # type: ignore[arg-type]
    assert planned is not None and planned.app.configmap_name == "web"
    assert asyncio.run(delete.plan(DiscoveryBesideTheRecord(broken=True), "web")) is None  # type: ignore[arg-type]
    broken = DiscoveryBesideTheRecord(broken=True)
    stored_app(broken)
    with pytest.raises(ClusterError, match="^discovery failed$"):
        asyncio.run(delete.plan(broken, "web"))  # type: ignore[arg-type]


class Server(FakeCluster):
    """Dry runs store nothing; `generateName` names in order, with creation times in that order."""

    def __init__(self) -> None:
        super().__init__(Discovery(BUILTIN_TYPES))
        self.namespace = "ns"
        self.generated = 0

    async def create(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        if dry_run:
            return obj
        meta = obj["metadata"]
        if "generateName" in meta:
            self.generated += 1
            named = {"name": f"{meta['generateName']}{self.generated}", "creationTimestamp": f"{self.generated:04}"}
            obj = {**obj, "metadata": {**meta, **named}}
        return await super().create(rtype, obj)


def test_a_deploy_reads_its_record_once_and_writes_the_finished_change_and_its_kinds_together():
    fake = Server()
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config"}, "data": {"a": "1"}}

    async def deploys() -> None:
        for value in ("1", "2"):
            resources = [{**config, "data": {"a": value}}]
            planned = await deploy.plan(fake, "web", deploy.Source(resources=resources), namespace_name="ns")  # type: ignore[arg-type]
            fake.log.clear()
            await deploy.run(fake, planned)  # type: ignore[arg-type]

    asyncio.run(deploys())
    # the plan read it (before the log was cleared); then the hold with the kinds, the change begun, the change
    # finished with the hold released; the change's own ConfigMap is written from its copy as created, not read again
    assert [verb for verb, kind, name in fake.log if (kind, name) == ("ConfigMap", "web")] == ["update"] * 3
    assert [(verb, kind) for verb, kind, name in fake.log if name.startswith("web-change-")] == [
        ("create", "ConfigMap"),
        ("create", "Secret"),
        ("update", "ConfigMap"),
    ]
    assert objects.DEPLOY_LOCK not in fake.objects[("", "ConfigMap", "ns", "web")]["metadata"]["annotations"]
    recorded = AppMeta.from_json(fake.objects[("", "ConfigMap", "ns", "web")]["data"]["spec"])
    assert recorded.used_gks == (("", "ConfigMap"),) and recorded.last_change.successful
    assert recorded.last_change_name == "web-change-2"


class KeptLate(Server):
    """The kept Secret's create answers only once the deploy applied its ConfigMap: a deploy that waited for it
    before applying would time out."""

    def __init__(self) -> None:
        super().__init__()
        self.applied = asyncio.Event()

    async def create(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        if rtype.kind == "Secret":
            await asyncio.wait_for(self.applied.wait(), 5)
        elif obj["metadata"].get("name") == "config" and not dry_run:
            self.applied.set()
        return await super().create(rtype, obj, dry_run=dry_run)


def test_the_kept_secret_is_created_while_the_change_applies_and_before_it_is_finished():
    fake = KeptLate()
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config"}, "data": {"a": "1"}}

    async def deployed() -> deploy.Result:
        planned = await deploy.plan(fake, "web", deploy.Source(resources=[config]), namespace_name="ns")  # type: ignore[arg-type]
        return await deploy.run(fake, planned)  # type: ignore[arg-type]

    result = asyncio.run(deployed())
    assert ("", "Secret", "ns", result.app_change) in fake.objects
    kinds = [(verb, kind) for verb, kind, name in fake.log if name in (result.app_change, "config")]
    # the Secret's create is answered after the ConfigMap's, and the change is finished only after both
    assert kinds.index(("create", "Secret")) < kinds.index(("update", "ConfigMap"))
    change = fake.objects[("", "ConfigMap", "ns", result.app_change)]
    assert ChangeMeta.from_json(orjson.loads(change["data"]["spec"])).successful


def test_a_delete_begins_its_change_with_the_hold_and_leaves_no_release_to_write():
    fake = Server()
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config"}, "data": {"a": "1"}}

    async def deployed() -> None:
        planned = await deploy.plan(fake, "web", deploy.Source(resources=[config]), namespace_name="ns")  # type: ignore[arg-type]
        await deploy.run(fake, planned)  # type: ignore[arg-type]

    asyncio.run(deployed())

    async def deleted() -> None:
        planned = await delete.plan(fake, "web")  # type: ignore[arg-type]
        assert planned is not None
        fake.log.clear()
        await delete.run(fake, planned)  # type: ignore[arg-type]

    asyncio.run(deleted())
    # held with the change begun in one write (from the record this process wrote last), then deleted: nothing is
    # written after the delete to release the hold
    assert [verb for verb, kind, name in fake.log if (kind, name) == ("ConfigMap", "web")] == ["update", "delete"]
    assert ("", "ConfigMap", "ns", "config") not in fake.objects
