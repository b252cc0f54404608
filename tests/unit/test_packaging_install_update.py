"""A person's update of a PackageInstall against the controller's writes (kapply.packaging.install_update, which
`installed update`, `installed rollback` and the dashboard's rollback use): the controller's status write between the
read and the write is not a failure, the update is done again over the install read afresh with the person's spec
and annotations; anyone's edit of the spec or the annotations meanwhile stays the API server's conflict."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable

import pytest

from kapply.controller.vocabulary import KAPPLY
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.packaging.install_update import update_install
from kapply.resources.cluster import CONFLICT_ATTEMPTS, Discovery, ResourceType
from tests.unit.fake_cluster import FakeCluster

INSTALLS = KAPPLY.install.rtype


class Racing(FakeCluster):
    """Before each of the first `races` updates of the install, `meanwhile` changes the stored install (and its
    resourceVersion, as any write does)."""

    def __init__(self, meanwhile: Callable[[Obj], None], races: int = 1) -> None:
        super().__init__(Discovery(()))
        self.meanwhile, self.races = meanwhile, races

    async def update(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        if self.races:
            self.races -= 1
            stored = self.objects[self._key(rtype, "ns", "web")]
            self.meanwhile(stored)
            stored["metadata"]["resourceVersion"] += "0"
        return await super().update(rtype, obj, dry_run=dry_run)


def status_write(install: Obj) -> None:
    install["status"] = {"conditions": [{"type": "Reconciling"}]}
    install["metadata"].setdefault("finalizers", []).append("finalizers.packaging.kapply.dev/delete")


def run(cluster: Racing) -> tuple[Obj, Obj]:
    """The install's constraint set to 2.0.0 and an annotation added, as read before the race; (sent, stored)."""

    async def main() -> tuple[Obj, Obj]:
        await cluster.create(
            INSTALLS,
            {
                "metadata": {"name": "web", "namespace": "ns", "annotations": {"a": "1"}},
                "spec": {"paused": True, "packageRef": {"versionSelection": {"constraints": "1.0.0"}}},
            },
        )
        read = await cluster.get(INSTALLS, "ns", "web")
        assert read is not None
        updated = copy.deepcopy(read)
        updated["spec"]["packageRef"]["versionSelection"]["constraints"] = "2.0.0"
        updated["metadata"]["annotations"]["b"] = "2"
        sent = await update_install(cluster, INSTALLS, read, updated)
        stored = await cluster.get(INSTALLS, "ns", "web")
        assert stored is not None
        return sent, stored

    return asyncio.run(main())


@pytest.mark.parametrize("races", [1, CONFLICT_ATTEMPTS - 1])
def test_the_controllers_writes_between_the_read_and_the_write_are_kept_and_the_update_done_again(races: int) -> None:
    _, stored = run(Racing(status_write, races))
    assert stored["spec"]["packageRef"]["versionSelection"]["constraints"] == "2.0.0" and stored["spec"]["paused"]
    assert stored["metadata"]["annotations"] == {"a": "1", "b": "2"}
    assert stored["status"] == {"conditions": [{"type": "Reconciling"}]}
    assert stored["metadata"]["finalizers"] == ["finalizers.packaging.kapply.dev/delete"] * races


def test_conflicts_past_the_attempts_are_the_api_servers() -> None:
    with pytest.raises(ClusterError, match="conflict"):
        run(Racing(status_write, CONFLICT_ATTEMPTS))


def _spec_edit(install: Obj) -> None:
    install["spec"]["serviceAccountName"] = "someone-else"


def _annotation_edit(install: Obj) -> None:
    install["metadata"]["annotations"]["a"] = "someone-else"


@pytest.mark.parametrize("edit", [_spec_edit, _annotation_edit], ids=["spec", "annotations"])
def test_an_edit_of_what_the_update_changes_stays_the_conflict(edit: Callable[[Obj], None]) -> None:
    cluster = Racing(edit)
    with pytest.raises(ClusterError, match="conflict"):
        run(cluster)
    stored = cluster.objects[cluster._key(INSTALLS, "ns", "web")]
    assert stored["spec"]["packageRef"]["versionSelection"]["constraints"] == "1.0.0"
    assert "b" not in stored["metadata"]["annotations"]
