"""kapp's `--diff-anchored`: k14s/difflib's AnchoredDiff (Go's anchored diff) for resources over 500 lines.

The records must be the ones kapp makes, since kapp's view shows them as they are: a run of changes between anchors
(lines found exactly once on each side) with up to 30 common lines around it, far common lines left out.
"""

import random

import pytest

from kapply.diff import text_diff
from kapply.diff.text_diff import (
    ANCHORED_CONTEXT,
    ANCHORED_MIN_LINES,
    DiffKind,
    DiffRecord,
    anchored_diff_lines,
    diff_lines,
    has_changes,
    render,
)

COMMON, REMOVED, ADDED = DiffKind.COMMON, DiffKind.REMOVED, DiffKind.ADDED


def numbered(n: int) -> list[str]:
    return [f"line {i}" for i in range(n)]


def check_consistent(old: list[str], new: list[str], records: tuple[DiffRecord, ...]) -> None:
    """Every record names the line it shows on its side, positions never go back, a removed line is one of old's and
    an added one one of new's, and every line not in a common record is removed or added exactly once."""
    last_left = last_right = 0
    removed, added = set(), set()
    for payload, kind, left, right in records:
        assert left >= last_left and right >= last_right
        if kind is COMMON:
            assert old[left] == payload == new[right]
            last_left, last_right = left + 1, right + 1
        elif kind is REMOVED:
            assert old[left] == payload and left not in removed
            removed.add(left)
            last_left = left + 1
        else:
            assert new[right] == payload and right not in added
            added.add(right)
            last_right = right + 1
    common_left = {r.line_left for r in records if r.kind is COMMON}
    common_right = {r.line_right for r in records if r.kind is COMMON}
    # a line of old shown as neither common nor removed is one the diff keeps unchanged (beyond the context)
    unshown_old = [i for i in range(len(old)) if i not in common_left and i not in removed]
    unshown_new = [j for j in range(len(new)) if j not in common_right and j not in added]
    assert len(unshown_old) == len(unshown_new)
    assert [old[i] for i in unshown_old] == [new[j] for j in unshown_new]


def unique_lcs_length(old: list[str], new: list[str]) -> int:
    """The length of a longest common subsequence of the lines found once on each side, by the plain table."""
    unique = {line for line in set(old) if old.count(line) == 1 and new.count(line) == 1}
    a, b = [x for x in old if x in unique], [y for y in new if y in unique]
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    return table[0][0]


def test_identical_sides_give_every_line_as_common():
    lines = numbered(40) + ["", "x", "x"]
    records = anchored_diff_lines(lines, list(lines))
    assert records == tuple(DiffRecord(line, COMMON, i, i) for i, line in enumerate(lines))
    assert not has_changes(records)


def test_empty_sides_give_no_records():
    assert anchored_diff_lines([], []) == ()


def test_a_missing_side_gives_every_line_of_the_other():
    lines = numbered(3)
    assert anchored_diff_lines([], lines) == tuple(DiffRecord(line, ADDED, 0, j) for j, line in enumerate(lines))
    assert anchored_diff_lines(lines, []) == tuple(DiffRecord(line, REMOVED, i, 0) for i, line in enumerate(lines))


def test_a_change_keeps_thirty_common_lines_on_each_side_and_leaves_the_rest_out():
    old = numbered(520)
    new = list(old)
    new[250] = "changed"
    records = anchored_diff_lines(old, new)
    before = tuple(DiffRecord(old[i], COMMON, i, i) for i in range(220, 250))
    after = tuple(DiffRecord(old[i], COMMON, i, i) for i in range(251, 281))
    assert records == (
        *before,
        DiffRecord("line 250", REMOVED, 250, 250),
        DiffRecord("changed", ADDED, 251, 250),
        *after,
    )


def test_changes_close_together_share_a_chunk():
    old = numbered(300)
    new = list(old)
    new[100] = "a"
    new[150] = "b"  # 49 common lines between the changes: fewer than twice the context
    records = anchored_diff_lines(old, new)
    assert [r.line_left for r in records if r.kind is COMMON] == [*range(70, 100), *range(101, 150), *range(151, 181)]


def test_changes_far_apart_make_separate_chunks():
    old = numbered(300)
    new = list(old)
    new[100] = "a"
    new[200] = "b"  # 99 common lines between: 30 close the first chunk, 30 open the second
    records = anchored_diff_lines(old, new)
    shown = [r.line_left for r in records if r.kind is COMMON]
    assert shown == [*range(70, 100), *range(101, 131), *range(170, 200), *range(201, 231)]
    text = render(records, context=2)
    assert text.count("  ...") == 2  # rendering works on records, so the left-out lines make one gap


def test_a_moved_block_is_removed_where_it_was_and_added_where_it_went():
    old = ["a", "b", "c", "d", "e", "f"]
    new = ["a", "d", "e", "b", "c", "f"]
    records = anchored_diff_lines(old, new)
    # anchors: the longest increasing run of unique lines is a, d, e, f (b and c move)
    assert [(r.kind, r.payload) for r in records] == [
        (COMMON, "a"),
        (REMOVED, "b"),
        (REMOVED, "c"),
        (COMMON, "d"),
        (COMMON, "e"),
        (ADDED, "b"),
        (ADDED, "c"),
        (COMMON, "f"),
    ]
    check_consistent(old, new, records)


def test_repeated_lines_are_not_anchors_but_extend_the_matches_around_them():
    old = ["x", "u", "}", "}", "v", "}"]
    new = ["}", "u", "}", "}", "v", "x"]
    records = anchored_diff_lines(old, new)
    # anchors u and v (x is unique too but crosses them); the repeated braces match next to u
    assert [(r.kind, r.payload) for r in records] == [
        (REMOVED, "x"),
        (ADDED, "}"),
        (COMMON, "u"),
        (COMMON, "}"),
        (COMMON, "}"),
        (COMMON, "v"),
        (REMOVED, "}"),
        (ADDED, "x"),
    ]


def test_diff_lines_uses_the_anchored_diff_only_when_allowed_and_a_side_is_over_500_lines():
    old = numbered(ANCHORED_MIN_LINES)
    new = list(old)
    new[250] = "changed"
    full = diff_lines(old, new)
    assert len(full) == ANCHORED_MIN_LINES + 1  # every line: kapp's ordinary diff
    assert diff_lines(old, new, anchored=True) == full  # 500 lines: not over the limit
    longer = [*new, "one more"]
    assert diff_lines(old, longer, anchored=True) == anchored_diff_lines(old, longer)
    assert diff_lines(longer, old, anchored=True) == anchored_diff_lines(longer, old)
    assert len(diff_lines(old, longer)) == ANCHORED_MIN_LINES + 2


def test_diff_texts_passes_the_choice_on():
    old = "\n".join(numbered(600)) + "\n"
    new = old.replace("line 300\n", "line 300 changed\n")
    assert len(text_diff.diff_texts(old, new, anchored=True)) == 2 * ANCHORED_CONTEXT + 2
    assert len(text_diff.diff_texts(old, new)) == 602


@pytest.mark.parametrize("seed", range(40))
def test_random_edits_give_consistent_records_anchored_on_a_longest_run_of_unique_lines(seed: int):
    rng = random.Random(seed)
    pool = [f"w{k}" for k in range(rng.choice([3, 30, 1000]))]
    old = [rng.choice(pool) for _ in range(rng.randint(0, 150))]
    new = list(old)
    for _ in range(rng.randint(0, 12)):
        choice = rng.random()
        if choice < 0.3 and new:
            del new[rng.randrange(len(new))]
        elif choice < 0.6:
            new.insert(rng.randrange(len(new) + 1), rng.choice([*pool, f"new{rng.random()}"]))
        elif new:
            start = rng.randrange(len(new))
            block = new[start : start + rng.randint(1, 8)]
            del new[start : start + len(block)]
            at = rng.randrange(len(new) + 1)
            new[at:at] = block
    records = anchored_diff_lines(old, new)
    check_consistent(old, new, records)
    assert has_changes(records) == (old != new)
    anchors = text_diff._anchors(old, new)
    assert anchors[0] == (0, 0) and anchors[-1] == (len(old), len(new))
    inner = anchors[1:-1]
    assert len(inner) == unique_lcs_length(old, new)
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(inner, inner[1:], strict=False))
    assert all(old[x] == new[y] and old.count(old[x]) == 1 == new.count(new[y]) for x, y in inner)
