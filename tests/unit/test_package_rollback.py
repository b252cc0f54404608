"""A PackageInstall's rollback (kapply.packaging.rollback, which `kapply package installed rollback` and the dashboard
run) and `installed history`'s table: which revision, what changes (the version, and the values' changed keys, never a
value), whether it is a downgrade the install must be annotated for, the values `installed update` can write back, and
the run: annotated, paused while the values are written back, the version set, resumed even when RBAC refuses a step."""

from __future__ import annotations

import asyncio
import base64

import pytest

from kapply.cli.package.rollback import history_table
from kapply.controller.vocabulary import CARVEL, KAPPLY, Vocabulary
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.packaging.revisions import SECRETS, Revision, ValuesSecret, listed, values_digest
from kapply.packaging.rollback import (
    DOWNGRADABLE,
    Plan,
    Summary,
    changed_keys,
    chosen,
    described,
    plan,
    planned,
    roll_back,
    summaries,
)
from kapply.packaging.rollback import (
    revision as kept_revision,
)
from kapply.resources.cluster import ResourceType
from tests.unit.package_rollback_fakes import PACKAGE, SECRET, VALUES, A, B, RollbackCluster, seeded


def values(content: str | None, name: str = "web-ns-values") -> tuple[ValuesSecret, ...]:
    if content is None:
        return ()
    return (ValuesSecret(name, (("values.yaml", base64.b64encode(content.encode()).decode()),)),)


def revision(number: int, version: str, content: str | None) -> Revision:
    given = values(content)
    return Revision(number, version, values_digest(given), "2026-12-05T10:00:00Z", PACKAGE, given)


def install(version: str, last: str = "", **annotations: str) -> Obj:
    return {
        "metadata": {"name": "web", "namespace": "ns", "annotations": annotations},
        "spec": {"packageRef": {"refName": PACKAGE}},
        "status": {"version": version, "lastAttemptedVersion": last or version},
    }


def test_the_previous_revision_is_chosen_unless_one_is_named() -> None:
    kept = [revision(1, "1.0.0", A), revision(2, "2.0.0", B), revision(3, "2.1.0", B)]
    assert chosen(kept, 0).number == 2
    assert chosen(kept, 1).number == 1
    with pytest.raises(KapplyError, match=r"Expected revision 7 to be one of the revisions kept \(1, 2, 3\)"):
        chosen(kept, 7)
    with pytest.raises(KapplyError, match="Expected an earlier revision to roll back to: the install has only one"):
        chosen(kept[:1], 0)


def test_a_rollback_to_a_lower_version_with_other_values_says_both_and_is_a_downgrade() -> None:
    planned = plan(install("2.0.0"), revision(1, "1.0.0", A), values(B))
    assert planned == Plan(revision(1, "1.0.0", A), "2.0.0", A.encode(), False, ("hello_msg", "port"), True)
    lines = described(planned, "web", "ns")
    assert lines == [
        "Rolling back package install 'web' in namespace 'ns' to revision 1",
        "  version: 2.0.0 -> 1.0.0",
        "  values: changed (keys: hello_msg, port)",
        f"  a downgrade: the install is annotated {DOWNGRADABLE} to allow it",
    ]
    assert SECRET not in "\n".join(lines) and SECRET not in repr(planned.changed_keys)


def test_the_same_values_are_not_written_again_and_an_allowed_downgrade_needs_no_annotation() -> None:
    planned = plan(install("2.0.0", **{DOWNGRADABLE: ""}), revision(1, "1.0.0", A), values(A))
    assert (planned.values, planned.drop_values, planned.values_changed, planned.downgrade) == (
        None,
        False,
        False,
        False,
    )
    assert described(planned, "web", "ns")[1:] == ["  version: 2.0.0 -> 1.0.0", "  values: unchanged"]
    upgrade = plan(install("1.0.0"), revision(2, "2.0.0", A), values(A))
    assert not upgrade.downgrade


def test_a_revision_without_values_drops_the_installs() -> None:
    planned = plan(install("1.0.0"), revision(1, "1.0.0", None), values(A))
    assert planned.drop_values and planned.values is None and planned.values_changed
    assert (
        "values: changed (the revision had none: the install's values are removed)" in described(planned, "w", "n")[2]
    )


def test_values_update_cannot_write_are_refused() -> None:
    two = values(A) + values(B, "more")
    target = Revision(1, "1.0.0", values_digest(two), "", PACKAGE, two)
    with pytest.raises(KapplyError, match="Expected revision 1 to have one values Secret with one key"):
        plan(install("2.0.0"), target, values(A))


def test_changed_keys_compare_top_level_keys_and_give_up_on_what_is_not_a_map() -> None:
    assert changed_keys(A.encode(), B.encode()) == ("hello_msg", "port")
    assert changed_keys(None, b"a: 1\n") == ("a",)
    assert changed_keys(b"- 1\n", b"a: 1\n") is None
    assert changed_keys(b"a: [\n", b"a: 1\n") is None


def test_history_lists_the_newest_first_with_digests_only() -> None:
    kept = [revision(2, "2.0.0", B), revision(1, "1.0.0", A)]
    table = history_table("web", "ns", [Summary(r.number, r.version, r.digest, r.created) for r in kept])
    assert table.keys == ("revision", "version", "created", "values_digest")
    assert [row[:2] for row in table.rows] == [("2", "2.0.0"), ("1", "1.0.0")]
    assert table.rows[1][3] == values_digest(values(A)) and SECRET not in repr(table)


def test_summaries_come_from_the_secrets_metadata_newest_first_and_a_revision_must_be_the_installs() -> None:
    async def main() -> None:
        cluster = await seeded()
        install = cluster.install()
        listed = await summaries(cluster, install)
        assert [(s.number, s.version, s.created) for s in listed] == [
            (2, "2.0.0", "2026-12-05T10:02:00Z"),
            (1, "1.0.0", "2026-12-05T10:01:00Z"),
        ]
        assert listed[1].digest == values_digest(values(A, VALUES)) and SECRET not in repr(listed)
        assert ("list", "Secret", "ns") in cluster.log  # the metadata LIST only: no Secret read with its data
        assert (await kept_revision(cluster, install, 1)).version == "1.0.0"
        other = {**install, "metadata": {**install["metadata"], "uid": "another"}}
        with pytest.raises(
            KapplyError, match=r"Expected revision 1 of package install 'web' .*\(Secret 'web.pkgi-v1'\)"
        ):
            await kept_revision(cluster, other, 1)

    asyncio.run(main())


@pytest.mark.parametrize("vocabulary", [KAPPLY, CARVEL], ids=["kapply", "carvel"])
def test_a_rollback_annotates_pauses_writes_the_values_back_sets_the_version_and_resumes(
    vocabulary: Vocabulary,
) -> None:
    async def main() -> None:
        cluster = await seeded(vocabulary)
        install = cluster.install(vocabulary)
        the_plan = await planned(cluster, install, await kept_revision(cluster, install, 1))
        said: list[str] = []
        await roll_back(cluster, vocabulary.install.rtype, install, the_plan, said.append)
        after = cluster.install(vocabulary)
        assert after["spec"]["packageRef"]["versionSelection"]["constraints"] == "1.0.0"
        assert after["metadata"]["annotations"] == {DOWNGRADABLE: ""}
        assert "paused" not in after["spec"] and after["spec"]["values"] == [{"secretRef": {"name": VALUES}}]
        assert cluster.values() == A
        writes = [entry for entry in cluster.log if entry[0] != "get"]
        assert writes == [
            ("patch", "PackageInstall", "web"),  # the downgradable annotation
            ("patch", "PackageInstall", "web"),  # paused
            ("update", "Secret", VALUES),
            ("update", "PackageInstall", "web"),
            ("patch", "PackageInstall", "web"),  # resumed
        ]
        assert said == [
            f"Annotating package install 'web' in namespace 'ns' with {DOWNGRADABLE}",
            "Pausing reconciliation for package install 'web' in namespace 'ns'",
            f"Updating secret '{VALUES}'",
            "Updating package install 'web' in namespace 'ns'",
            "Resuming reconciliation for package install 'web' in namespace 'ns'",
        ]

    asyncio.run(main())


def test_a_refused_step_is_the_api_servers_refusal_and_the_install_is_resumed() -> None:
    async def main() -> None:
        cluster = await seeded()
        cluster.refused = {("update", "Secret")}
        install = cluster.install()
        the_plan = await planned(cluster, install, await kept_revision(cluster, install, 1))
        with pytest.raises(ClusterError, match="forbidden"):
            await roll_back(cluster, KAPPLY.install.rtype, install, the_plan, lambda _: None)
        after = cluster.install()
        assert "paused" not in after["spec"] and cluster.values() == B
        assert after["spec"]["packageRef"]["versionSelection"]["constraints"] == "2.0.0"

    asyncio.run(main())


def test_values_are_removed_when_the_revision_had_none_and_recreated_when_the_install_has_none() -> None:
    async def main() -> None:
        cluster = await seeded()
        install = cluster.install()
        empty = Revision(3, "2.0.0", values_digest(()), "", PACKAGE, ())
        await roll_back(cluster, KAPPLY.install.rtype, install, plan(install, empty, values(B, VALUES)), lambda _: None)
        install = cluster.install()
        assert "values" not in install["spec"]
        cluster.objects.pop(cluster._key(SECRETS, "ns", VALUES))
        target = await kept_revision(cluster, install, 1)
        await roll_back(cluster, KAPPLY.install.rtype, install, plan(install, target, ()), lambda _: None)
        assert cluster.install()["spec"]["values"] == [{"secretRef": {"name": VALUES}}] and cluster.values() == A
        owners = cluster.objects[cluster._key(SECRETS, "ns", VALUES)]["metadata"]["ownerReferences"]
        assert [(o["kind"], o["name"]) for o in owners] == [("PackageInstall", "web")]

    asyncio.run(main())


def test_the_controllers_status_write_between_the_read_and_the_write_is_not_a_failure_but_a_spec_edit_is() -> None:
    """The controller writes the install's status as it sees the pause, after the rollback read the install: its
    update is done again over the install read afresh. Someone's edit of the spec meanwhile stays the conflict (never
    overwritten), and the install is resumed."""

    async def main(edit_spec: bool) -> tuple[RollbackCluster, ClusterError | None]:
        cluster = await seeded()
        install = cluster.install()
        the_plan = await planned(cluster, install, await kept_revision(cluster, install, 1))
        stored, update, raced = cluster.objects[cluster._key(KAPPLY.install.rtype, "ns", "web")], cluster.update, []

        async def racing(rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
            if rtype == KAPPLY.install.rtype and not raced:
                raced.append(stored["metadata"]["resourceVersion"])
                stored["metadata"]["resourceVersion"] += "0"  # the controller's status write
                if edit_spec:
                    stored["spec"]["serviceAccountName"] = "someone-else"
            return await update(rtype, obj, dry_run=dry_run)

        cluster.update = racing  # type: ignore[method-assign]
        try:
            await roll_back(cluster, KAPPLY.install.rtype, install, the_plan, lambda _: None)
        except ClusterError as e:
            return cluster, e
        return cluster, None

    cluster, failed = asyncio.run(main(edit_spec=False))
    after = cluster.install()
    assert failed is None and after["spec"]["packageRef"]["versionSelection"]["constraints"] == "1.0.0"
    assert "paused" not in after["spec"] and cluster.values() == A
    cluster, failed = asyncio.run(main(edit_spec=True))
    after = cluster.install()
    assert failed is not None and failed.conflict
    assert after["spec"]["serviceAccountName"] == "someone-else" and "paused" not in after["spec"]
    assert after["spec"]["packageRef"]["versionSelection"]["constraints"] == "2.0.0"


OTHER = "db.example.com"  # a package the install did not run before


def test_a_revision_of_another_package_is_refused_naming_its_secret_and_both_packages() -> None:
    """The install's refName edited since its revisions were kept: going back to one would make that package's version
    a constraint on this one, and its values this one's. The CLI's choice (the previous revision, or a number) and the
    dashboard's (a number) alike: one error, nothing written."""

    async def main() -> None:
        cluster = await seeded()
        cluster.objects[cluster._key(KAPPLY.install.rtype, "ns", "web")]["spec"]["packageRef"]["refName"] = OTHER
        install = cluster.install()
        cluster.log.clear()
        said = (
            r"Expected revision 1 of package install 'web' in namespace 'ns' \(Secret 'web.pkgi-v1'\) to be of the "
            rf"package the install selects, '{OTHER}', not '{PACKAGE}': a rollback does not change an install's "
            r"package$"
        )
        with pytest.raises(KapplyError, match=said):
            await planned(cluster, install, chosen(await listed(cluster, "ns", install), 0))
        with pytest.raises(KapplyError, match=said):
            await planned(cluster, install, await kept_revision(cluster, install, 1))
        assert not [entry for entry in cluster.log if entry[0] not in ("get", "list")]
        assert cluster.install() == install and cluster.values() == B

    asyncio.run(main())
