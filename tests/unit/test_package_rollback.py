"""`kapply package installed history` and `rollback`'s planning (kapply.cli.package.rollback): which revision, what
changes (the version, and the values' changed keys, never a value), whether it is a downgrade the install must be
annotated for, and the values `installed update` can write back."""

from __future__ import annotations

import base64

import pytest

from kapply.cli.package.rollback import DOWNGRADABLE, Plan, changed_keys, chosen, described, history_table, plan
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.packaging.revisions import Revision, ValuesSecret, values_digest

SECRET = "s3cr3t-value"
A = f"#@data/values\n---\nname: cm\nhello_msg: {SECRET}\n"
B = "#@data/values\n---\nname: cm\nhello_msg: other\nport: 80\n"


def values(content: str | None, name: str = "web-ns-values") -> tuple[ValuesSecret, ...]:
    if content is None:
        return ()
    return (ValuesSecret(name, (("values.yaml", base64.b64encode(content.encode()).decode()),)),)


def revision(number: int, version: str, content: str | None) -> Revision:
    given = values(content)
    return Revision(number, version, values_digest(given), "2026-12-05T10:00:00Z", "{}", given)


def install(version: str, last: str = "", **annotations: str) -> Obj:
    return {
        "metadata": {"name": "web", "namespace": "ns", "annotations": annotations},
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
    target = Revision(1, "1.0.0", values_digest(two), "", "{}", two)
    with pytest.raises(KapplyError, match="Expected revision 1 to have one values Secret with one key"):
        plan(install("2.0.0"), target, values(A))


def test_changed_keys_compare_top_level_keys_and_give_up_on_what_is_not_a_map() -> None:
    assert changed_keys(A.encode(), B.encode()) == ("hello_msg", "port")
    assert changed_keys(None, b"a: 1\n") == ("a",)
    assert changed_keys(b"- 1\n", b"a: 1\n") is None
    assert changed_keys(b"a: [\n", b"a: 1\n") is None


def test_history_lists_the_newest_first_with_digests_only() -> None:
    table = history_table("web", "ns", [revision(1, "1.0.0", A), revision(2, "2.0.0", B)])
    assert table.keys == ("revision", "version", "created", "values_digest")
    assert [row[:2] for row in table.rows] == [("2", "2.0.0"), ("1", "1.0.0")]
    assert table.rows[1][3] == values_digest(values(A)) and SECRET not in repr(table)
