"""A PackageInstall with two revisions on an in-memory cluster, for the unit tests of kapply.packaging.rollback and of
the dashboard's "Roll back to this revision": the fake answers a LIST of Secrets' metadata (as the API server's
PartialObjectMetadataList), applies the pause's JSON patches, and refuses what the test says RBAC forbids."""

from __future__ import annotations

import base64
import copy
from typing import Any

from kapply.controller.vocabulary import KAPPLY, Vocabulary
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.packaging.revisions import SECRETS, ValuesSecret, revision_secret
from kapply.resources.cluster import Discovery, ResourceType
from tests.unit.fake_cluster import FakeCluster

SECRET = "s3cr3t-value"  # revision 1's value of hello_msg: never shown
A = f"#@data/values\n---\nname: cm\nhello_msg: {SECRET}\n"
B = "#@data/values\n---\nname: cm\nhello_msg: other\nport: 80\n"
VALUES = "web-ns-values"
PACKAGE = "web.example.com"  # the install's package (spec.packageRef.refName)


def encoded(content: str) -> str:
    return base64.b64encode(content.encode()).decode()


class RollbackCluster(FakeCluster):
    def __init__(self) -> None:
        super().__init__(Discovery(()))
        self.refused: set[tuple[str, str]] = set()  # (verb, kind) RBAC forbids

    def _check(self, verb: str, kind: str) -> None:
        if (verb, kind) in self.refused:
            raise ClusterError(f'{kind.lower()}s "x" is forbidden: User "jo" cannot {verb}', status=403)

    async def get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        self._check("get", rtype.kind)
        return await super().get(rtype, namespace, name)

    async def update(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        self._check("update", rtype.kind)
        return await super().update(rtype, obj, dry_run=dry_run)

    async def create(self, rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        self._check("create", rtype.kind)
        return await super().create(rtype, obj, dry_run=dry_run)

    async def patch(
        self, rtype: ResourceType, namespace: str | None, name: str, patch: Any, patch_type: str = ""
    ) -> Obj:
        self._check("patch", rtype.kind)
        if isinstance(patch, list):  # the pause's JSON patch of /spec/paused
            spec = self.objects[self._key(rtype, namespace, name)]["spec"]
            for op in patch:
                assert op["path"] == "/spec/paused"
                if op["op"] == "add":
                    spec["paused"] = op["value"]
                else:
                    spec.pop("paused", None)
        return await super().patch(rtype, namespace, name, patch, patch_type)

    async def list_metadata(
        self, rtype: ResourceType, *, namespace: str | None = None, label_selector: str | None = None, **_: Any
    ) -> list[Obj]:
        """A LIST of Secrets as their metadata only (as Cluster.list_metadata: a PartialObjectMetadataList)."""
        self._check("list", "Secret")
        assert rtype == SECRETS
        found = await super().list(SECRETS, label_selector=label_selector, namespace=namespace)
        return [s["metadata"] for s in found]

    async def list_with_version(self, rtype: ResourceType, **_: Any) -> tuple[list[Obj], str]:
        """The install's Events on the dashboard's page: not these tests'."""
        raise ClusterError('events is forbidden: User "jo" cannot list', status=403)

    def install(self, vocabulary: Vocabulary = KAPPLY) -> Obj:
        found = self.objects[self._key(vocabulary.install.rtype, "ns", "web")]
        return copy.deepcopy(found)

    def values(self) -> str:
        secret = self.objects[self._key(SECRETS, "ns", VALUES)]
        return base64.b64decode(secret["data"]["values.yaml"]).decode()


async def seeded(vocabulary: Vocabulary = KAPPLY) -> RollbackCluster:
    """An install `ns/web` running 2.0.0 with values B (revision 2), after 1.0.0 with values A (revision 1)."""
    cluster = RollbackCluster()
    await cluster.create(
        SECRETS, {"metadata": {"name": VALUES, "namespace": "ns"}, "data": {"values.yaml": encoded(B)}}
    )
    install = await cluster.create(
        vocabulary.install.rtype,
        {
            "apiVersion": vocabulary.install.api_version,
            "kind": "PackageInstall",
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {
                "serviceAccountName": "sa",
                "packageRef": {"refName": PACKAGE, "versionSelection": {"constraints": "2.0.0"}},
                "values": [{"secretRef": {"name": VALUES}}],
            },
        },
    )
    cluster.objects[cluster._key(vocabulary.install.rtype, "ns", "web")]["status"] = {
        "version": "2.0.0",
        "lastAttemptedVersion": "2.0.0",
    }
    for number, version, content in ((1, "1.0.0", A), (2, "2.0.0", B)):
        values = (ValuesSecret(VALUES, (("values.yaml", encoded(content)),)),)
        secret = revision_secret(install, number, version, values)
        secret["metadata"]["creationTimestamp"] = f"2026-12-05T10:0{number}:00Z"
        await cluster.create(SECRETS, secret)
    cluster.log.clear()
    return cluster
