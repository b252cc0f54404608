"""A PackageInstall's revisions against a hostile tenant (kapply.packaging.revisions and .rollback; the CLI's `history`
and `rollback`, the dashboard's list and "Roll back to this revision", and the controller's keeping and pruning):
everything in the tenant's namespace is the tenant's, so a revision is used only when its Secret is the install's
by name (`<install>.pkgi-v<N>`), label (the install's uid) and owner (an ownerReference naming the install's uid).
A Secret forged for another install, or carrying the label without being the install's, is neither shown, nor rolled
back to, nor pruned; a revision Secret of the install whose content is not one is one error naming it, and nothing
is written; no value ever reaches what `history` shows or an error says."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from kapply.cli.package.rollback import history_table
from kapply.controller.vocabulary import KAPPLY
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.packaging import revisions
from kapply.packaging.revisions import (
    CONTENT_KEY,
    DIGEST_ANNOTATION,
    INSTALL_UID_LABEL,
    REVISION_ANNOTATION,
    SECRETS,
    VERSION_ANNOTATION,
    ValuesSecret,
    listed,
    record,
    revision_secret,
)
from kapply.packaging.rollback import chosen, planned, roll_back, summaries
from kapply.packaging.rollback import revision as kept_revision
from kapply.packaging.spec import parse_package_install
from tests.unit.package_rollback_fakes import SECRET, VALUES, A, RollbackCluster, encoded, seeded
from tests.unit.test_dashboard_install_rollback import Served, run

Mutation = Callable[[Obj], None]


def forged(install: Obj, number: int, version: str = "9.9.9", content: str = A, name: str = "") -> Obj:
    """A revision Secret as the controller writes it for `install` (then changed by the test)."""
    secret = revision_secret(install, number, version, (ValuesSecret(VALUES, (("values.yaml", encoded(content)),)),))
    if name:
        secret["metadata"]["name"] = name
    return secret


def other_install(install: Obj, name: str, uid: str) -> Obj:
    return {**install, "metadata": {**install["metadata"], "name": name, "uid": uid}}


def shown(cluster: RollbackCluster, install: Obj) -> list[int]:
    return [s.number for s in asyncio.run(summaries(cluster, install))]


def used(cluster: RollbackCluster, install: Obj) -> list[int]:
    return [r.number for r in asyncio.run(listed(cluster, "ns", install))]


def written(cluster: RollbackCluster) -> list[tuple[str, ...]]:
    return [entry for entry in cluster.log if entry[0] not in ("get", "list")]


# --- (1) a revision is the install's by name, label and owner ---------------------------------------------------------


def _foreign_owner(secret: Obj) -> None:
    secret["metadata"]["ownerReferences"][0]["uid"] = "uid-db"


def _no_owner(secret: Obj) -> None:
    del secret["metadata"]["ownerReferences"]


def _foreign_label(secret: Obj) -> None:
    secret["metadata"]["labels"][INSTALL_UID_LABEL] = "uid-db"


@pytest.mark.parametrize(
    "forge",
    [_foreign_owner, _no_owner, _foreign_label],
    ids=["owned-by-another-install", "owned-by-none", "labelled-for-another-install"],
)
def test_a_revision_secret_of_the_right_name_that_is_not_the_installs_is_neither_shown_nor_rolled_back_to(
    forge: Mutation,
) -> None:
    async def seed() -> tuple[RollbackCluster, Obj]:
        cluster = await seeded()
        install = cluster.install()
        secret = forged(install, 3)
        forge(secret)
        await cluster.create(SECRETS, secret)
        cluster.log.clear()
        return cluster, install

    cluster, install = asyncio.run(seed())
    assert shown(cluster, install) == [2, 1]  # `history` and the dashboard's list
    assert used(cluster, install) == [1, 2]  # `rollback`'s choice
    assert chosen(asyncio.run(listed(cluster, "ns", install)), 0).number == 1, "the one before the latest real one"
    with pytest.raises(KapplyError, match=r"Expected revision 3 of package install 'web' .*\(Secret 'web.pkgi-v3'\)"):
        asyncio.run(kept_revision(cluster, install, 3))  # the dashboard's preview and action
    assert not written(cluster)


def test_a_secret_forged_with_an_installs_label_and_owner_under_another_name_is_not_its_revision() -> None:
    """Secrets labelled and owned as `web`'s revisions under other names (another install's revision name, no revision
    name, a number with a leading zero), and one of `db`'s revision name owned by `web`: neither `web` nor `db` shows
    or uses any."""

    async def seed() -> tuple[RollbackCluster, Obj]:
        cluster = await seeded()
        install = cluster.install()
        for number, name in ((3, "db.pkgi-v3"), (4, "web-backup"), (5, "web.pkgi-v05"), (6, "web.pkgi-v6x")):
            await cluster.create(SECRETS, forged(install, number, name=name))
        for_db = forged(install, 1, name="db.pkgi-v1")
        for_db["metadata"]["labels"][INSTALL_UID_LABEL] = "uid-db"
        await cluster.create(SECRETS, for_db)
        cluster.log.clear()
        return cluster, install

    cluster, install = asyncio.run(seed())
    assert shown(cluster, install) == [2, 1] and used(cluster, install) == [1, 2]
    db = other_install(install, "db", "uid-db")
    assert shown(cluster, db) == [] and used(cluster, db) == []


def test_the_dashboard_neither_lists_nor_previews_a_forged_revision() -> None:
    async def test(served: Served) -> None:
        client, cluster, key = served
        secret = forged(cluster.install(), 3)
        _foreign_owner(secret)
        await cluster.create(SECRETS, secret)
        cluster.log.clear()
        own = {"Host": f"127.0.0.1:{client.port}"}
        page = await (await client.get("/tok/api/app", params={"key": key}, headers=own)).json()
        assert [r["revision"] for r in page["revisions"]] == [2, 1]
        preview = await client.get("/tok/api/install-rollback", params={"key": key, "revision": "3"}, headers=own)
        assert preview.status == 409 and "Expected revision 3" in (await preview.json())["message"]
        kept = cluster.objects[cluster._key(SECRETS, "ns", "web.pkgi-v1")]
        kept["metadata"]["annotations"][VERSION_ANNOTATION] = ">=0.0.0"  # the install's own, malformed: said, not shown
        page = await (await client.get("/tok/api/app", params={"key": key}, headers=own)).json()
        assert page["revisions"] == {
            "error": "Reading revision Secret 'web.pkgi-v1': not a revision (its version annotation is not a package "
            "version)"
        }
        preview = await client.get("/tok/api/install-rollback", params={"key": key, "revision": "1"}, headers=own)
        assert preview.status == 409 and "Reading revision Secret 'web.pkgi-v1'" in (await preview.json())["message"]
        assert not written(cluster)

    run(KAPPLY, test)


# --- (2) the cap's pruning deletes the install's revisions only -------------------------------------------------------


def test_pruning_spares_secrets_that_carry_the_label_without_being_the_installs_revisions() -> None:
    """The install's values Secret, a Secret of the revision pattern the install does not own, another install's
    revision and a Secret owned by the install under another name, all labelled with the install's uid (and annotated
    as revisions 1 and 50): each new version is kept, the oldest of the install's own go, the others stay as they are
    and are never shown."""

    async def main() -> None:
        cluster = await seeded()
        install = cluster.install()
        values = cluster.objects[cluster._key(SECRETS, "ns", VALUES)]
        values["metadata"]["labels"] = {INSTALL_UID_LABEL: install["metadata"]["uid"]}
        values["metadata"]["annotations"] = {REVISION_ANNOTATION: "1"}
        unowned = forged(install, 50)
        _no_owner(unowned)
        decoys = [unowned, forged(install, 1, name="db.pkgi-v1"), forged(install, 50, name="web-kept")]
        for decoy in decoys:
            await cluster.create(SECRETS, decoy)
        before = {n: copy.deepcopy(s) for n, s in cluster.objects.items() if n[0:2] == ("", "Secret")}
        spec = parse_package_install(install)
        for minor in range(11):
            made = await record(cluster, install, spec, f"3.{minor}.0")
            assert made is not None and made.number == 3 + minor
        assert [s.number for s in await summaries(cluster, install)] == list(range(13, 3, -1))
        assert [r.number for r in await listed(cluster, "ns", install)] == list(range(4, 14))
        for key in [k for k in before if k[3] not in ("web.pkgi-v1", "web.pkgi-v2", "web.pkgi-v3")]:
            assert cluster.objects.get(key) == before[key], key
        deleted = [entry[2] for entry in cluster.log if entry[0] == "delete"]
        assert deleted == ["web.pkgi-v1", "web.pkgi-v2", "web.pkgi-v3"]

    asyncio.run(main())


def test_a_secret_in_the_way_of_the_next_revision_is_left_alone_and_no_revision_is_kept() -> None:
    """`web.pkgi-v3`, the tenant's and not the install's: the next revision cannot take its name, so none is kept (the
    Keeper's note says the API server's refusal); it is neither overwritten nor deleted."""

    async def main() -> None:
        cluster = await seeded()
        install = cluster.install()
        squatter = forged(install, 3)
        _no_owner(squatter)
        await cluster.create(SECRETS, squatter)
        stored = copy.deepcopy(cluster.objects[cluster._key(SECRETS, "ns", "web.pkgi-v3")])
        with pytest.raises(ClusterError, match="already exists"):
            await record(cluster, install, parse_package_install(install), "3.0.0")
        assert cluster.objects[cluster._key(SECRETS, "ns", "web.pkgi-v3")] == stored
        assert not [entry for entry in cluster.log if entry[0] == "delete"]

    asyncio.run(main())


# --- (3) a revision of the install that is not one: one error naming it, nothing written ------------------------------


def _content(change: Callable[[dict[str, Any]], object], replace: bool = False) -> Mutation:
    """The revision's content changed in place by `change`, or (`replace`) replaced by what it gives."""

    def mutate(secret: Obj) -> None:
        content = json.loads(base64.b64decode(secret["data"][CONTENT_KEY]))
        changed = change(content)
        secret["data"][CONTENT_KEY] = encoded(json.dumps(changed if replace else content))

    return mutate


def _set(key: str, value: Any) -> Mutation:
    return _content(lambda c: c.__setitem__(key, value))


def _value_key(key: str) -> Mutation:
    return _content(lambda c: c["values"][0].__setitem__("data", {key: encoded(A)}))


def _ref_name(name: object) -> Mutation:
    return _content(lambda c: c["packageRef"].__setitem__("refName", name))


def _annotation(key: str, value: str) -> Mutation:
    return lambda s: s["metadata"]["annotations"].__setitem__(key, value)


def _both_versions(version: str) -> Mutation:
    def mutate(secret: Obj) -> None:
        _set("version", version)(secret)
        _annotation(VERSION_ANNOTATION, version)(secret)

    return mutate


NOT_A_VERSION, NOT_ITS_VERSION = "its version annotation is not a package version", "its content's version is not"
NOT_ITS_NUMBER, NOT_CONTENT = "its revision annotation is not the number its name ends with", "not base64-encoded JSON"
NOT_A_KEY, NOT_A_NAME = "a values key is not a plain name", "a values Secret's name is not a Secret's name"
NO_PACKAGE = "its content's packageRef names no package (refName)"
MALFORMED: dict[str, tuple[Mutation, str]] = {
    "version-a-constraint": (_both_versions(">=0.0.0"), NOT_A_VERSION),
    "version-an-or": (_both_versions("1.0.0 || >=2.0.0"), NOT_A_VERSION),
    "version-not-semver": (_both_versions("1.0"), NOT_A_VERSION),
    "version-huge": (_both_versions("1.0.0-" + "a" * 100_000), NOT_A_VERSION),
    "version-a-number": (_set("version", 1), NOT_ITS_VERSION),
    "version-a-list": (_set("version", ["1.0.0"]), NOT_ITS_VERSION),
    "version-missing": (_content(lambda c: c.pop("version")), NOT_ITS_VERSION),
    "version-not-the-annotations": (_set("version", "9.9.8"), NOT_ITS_VERSION),
    "revision-not-the-names": (_annotation(REVISION_ANNOTATION, "2"), NOT_ITS_NUMBER),
    "revision-huge": (_annotation(REVISION_ANNOTATION, "9" * 40), NOT_ITS_NUMBER),
    "revision-unicode-digits": (_annotation(REVISION_ANNOTATION, "\u0661"), NOT_ITS_NUMBER),
    "revision-missing": (lambda s: s["metadata"]["annotations"].pop(REVISION_ANNOTATION), NOT_ITS_NUMBER),
    "digest-not-the-values": (_annotation(DIGEST_ANNOTATION, "sha256:000000000000"), "not those of its digest"),
    "content-missing": (lambda s: s.__setitem__("data", {}), NOT_CONTENT),
    "content-not-base64": (lambda s: s["data"].__setitem__(CONTENT_KEY, "!!!"), NOT_CONTENT),
    "content-not-json": (lambda s: s["data"].__setitem__(CONTENT_KEY, encoded("{")), NOT_CONTENT),
    "content-nested-deep": (lambda s: s["data"].__setitem__(CONTENT_KEY, encoded("[" * 100_000)), NOT_CONTENT),
    "content-a-list": (_content(lambda c: [c], replace=True), NOT_CONTENT),
    "package-ref-a-string": (_set("packageRef", "x"), "its content's packageRef is not a map"),
    "package-ref-no-ref-name": (_content(lambda c: c["packageRef"].pop("refName")), NO_PACKAGE),
    "package-ref-ref-name-a-number": (_ref_name(7), NO_PACKAGE),
    "package-ref-ref-name-a-path": (_ref_name("../x"), NO_PACKAGE),
    "package-ref-ref-name-a-line": (_ref_name("web.example.com\nkapply: Error: x"), NO_PACKAGE),
    "package-ref-ref-name-huge": (_ref_name("p" * 254), NO_PACKAGE),
    "values-missing": (_content(lambda c: c.pop("values")), "its content's values are not a list"),
    "values-a-map": (_set("values", {"secretName": VALUES}), "its content's values are not a list"),
    "values-data-a-list": (_content(lambda c: c["values"][0].__setitem__("data", [1])), NOT_A_KEY),
    "values-data-not-strings": (
        _content(lambda c: c["values"][0].__setitem__("data", {"values.yaml": 1})),
        "a value is not base64",
    ),
    "values-data-not-base64": (
        _content(lambda c: c["values"][0].__setitem__("data", {"values.yaml": "%%"})),
        "a value is not base64",
    ),
    "values-secret-name-a-path": (_content(lambda c: c["values"][0].__setitem__("secretName", "../x")), NOT_A_NAME),
    "values-secret-name-a-number": (_content(lambda c: c["values"][0].__setitem__("secretName", 7)), NOT_A_NAME),
    "values-key-a-path": (_value_key("../values.yaml"), NOT_A_KEY),
    "values-key-with-a-slash": (_value_key("a/b"), NOT_A_KEY),
    "values-key-empty": (_value_key(""), NOT_A_KEY),
    "values-key-dot-dot": (_value_key(".."), NOT_A_KEY),
    "values-key-huge": (_value_key("k" * 254), NOT_A_KEY),
}


def _fixed_digest(mutate: Mutation) -> Mutation:
    """`mutate`, the digest annotation then made to match the (changed) values, when they can be read: so that each
    case is refused for what it changed."""

    def both(secret: Obj) -> None:
        mutate(secret)
        try:
            content = json.loads(base64.b64decode(secret["data"][CONTENT_KEY]))
            values = tuple(ValuesSecret(v["secretName"], tuple(sorted(v["data"].items()))) for v in content["values"])
            secret["metadata"]["annotations"][DIGEST_ANNOTATION] = revisions.values_digest(values)
        except Exception:  # noqa: BLE001 - the mutation made them unreadable: nothing to match
            pass

    return both


async def _malformed(mutate: Mutation, fix_digest: bool = True) -> tuple[RollbackCluster, Obj]:
    """Revision 1 of `web` replaced by its Secret as `mutate` leaves it (the install's still, by name, label and
    owner); `fix_digest`: its digest annotation then made to match its values."""
    cluster = await seeded()
    install = cluster.install()
    key = cluster._key(SECRETS, "ns", "web.pkgi-v1")
    secret = forged(install, 1, version="1.0.0")
    (_fixed_digest(mutate) if fix_digest else mutate)(secret)
    cluster.objects[key] = {**secret, "metadata": {**secret["metadata"], "uid": "uid-r1", "resourceVersion": "1"}}
    cluster.log.clear()
    return cluster, install


NAMED = r"Reading revision Secret 'web.pkgi-v1': not a revision \("


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_revision_is_one_error_naming_its_secret_and_nothing_is_written(case: str) -> None:
    mutate, why = MALFORMED[case]

    async def main() -> None:
        cluster, install = await _malformed(mutate, fix_digest=case != "digest-not-the-values")
        with pytest.raises(KapplyError, match=NAMED) as by_number:
            target = await kept_revision(cluster, install, 1)  # the dashboard's preview and action
            await planned(cluster, install, target)
        with pytest.raises(KapplyError, match=NAMED) as by_list:
            revisions = await listed(cluster, "ns", install)  # the CLI's rollback
            await planned(cluster, install, chosen(revisions, 1))
        for error in (by_number, by_list):
            said = str(error.value)
            assert why in said and "\n" not in said and SECRET not in said and len(said) < 200, said
        assert not written(cluster)

    asyncio.run(main())


def test_the_controller_keeps_no_revision_beside_a_malformed_one_and_deletes_nothing() -> None:
    async def main() -> None:
        cluster, install = await _malformed(MALFORMED["version-a-constraint"][0])
        with pytest.raises(KapplyError, match=NAMED):
            await record(cluster, install, parse_package_install(install), "3.0.0")
        assert not written(cluster)

    asyncio.run(main())


@pytest.mark.parametrize(
    "mutate",
    [
        _annotation(VERSION_ANNOTATION, ">=0.0.0"),
        _annotation(VERSION_ANNOTATION, SECRET),
        _annotation(REVISION_ANNOTATION, "2"),
        _annotation(REVISION_ANNOTATION, "x"),
        _annotation(DIGEST_ANNOTATION, SECRET),
        lambda s: s["metadata"].__setitem__("annotations", {}),
    ],
    ids=[
        "version-a-constraint",
        "version-a-value",
        "number-not-the-names",
        "number-not-a-number",
        "digest-odd",
        "none",
    ],
)
def test_history_of_a_revision_whose_metadata_is_not_one_is_one_error_naming_it(mutate: Mutation) -> None:
    cluster, install = asyncio.run(_malformed(mutate, fix_digest=False))
    with pytest.raises(KapplyError, match=NAMED) as error:
        asyncio.run(summaries(cluster, install))
    assert SECRET not in str(error.value)


# --- (4) no value in what history shows -------------------------------------------------------------------------------


def test_history_shows_no_value_even_of_a_revision_whose_annotations_were_given_one() -> None:
    """`history` reads the revisions' metadata only; what it shows of them is checked (a version, a digest), so a value
    put in an annotation of the install's own revision Secret is an error that does not quote it, never a row."""
    cluster = asyncio.run(seeded())
    install = cluster.install()
    table = history_table("web", "ns", asyncio.run(summaries(cluster, install)))
    assert len(table.rows) == 2 and SECRET not in repr(table)
    assert not [entry for entry in cluster.log if entry[:2] == ("get", "Secret")]


# --- a revision's values written back never overwrite another Secret --------------------------------------------------


def test_a_revisions_values_secret_name_never_overwrites_a_secret_of_that_name() -> None:
    """The install's own revision names, as its values Secret, another Secret of the namespace; the install names no
    values Secret now, so the rollback would create it: the API server refuses (it exists), the Secret is as it was,
    the install is resumed and its version unchanged."""

    async def main() -> None:
        cluster = await seeded()
        await cluster.create(SECRETS, {"metadata": {"name": "admin-token", "namespace": "ns"}, "data": {"t": "eA=="}})
        kept = copy.deepcopy(cluster.objects[cluster._key(SECRETS, "ns", "admin-token")])
        stored = cluster.objects[cluster._key(KAPPLY.install.rtype, "ns", "web")]
        del stored["spec"]["values"]
        install = cluster.install()
        values = (ValuesSecret("admin-token", (("values.yaml", encoded(A)),)),)
        await cluster.create(SECRETS, revision_secret(install, 3, "1.0.0", values))
        the_plan = await planned(cluster, install, await kept_revision(cluster, install, 3))
        with pytest.raises(ClusterError, match="already exists"):
            await roll_back(cluster, KAPPLY.install.rtype, install, the_plan, lambda _: None)
        assert cluster.objects[cluster._key(SECRETS, "ns", "admin-token")] == kept
        after = cluster.install()
        assert "paused" not in after["spec"] and "values" not in after["spec"]
        assert after["spec"]["packageRef"]["versionSelection"]["constraints"] == "2.0.0"

    asyncio.run(main())
