"""The text diff must pick the same lines and print them exactly as kapp (github.com/k14s/difflib plus its view)."""

import random

import pytest

from kapply.diff import text_diff
from kapply.diff.text_diff import (
    DiffKind,
    DiffRecord,
    diff_lines,
    diff_texts,
    has_changes,
    render,
    render_minimal,
)

CONFIG_MAP = """apiVersion: v1
data:
  a: "1"
  b: "2"
  c: "3"
  d: "4"
  e: "5"
kind: ConfigMap
metadata:
  name: cm
"""

COMMON, REMOVED, ADDED = DiffKind.COMMON, DiffKind.REMOVED, DiffKind.ADDED
ONE_CHANGE = diff_lines(list("abcdefg"), list("abcXefg"))


def reference_diff(old: list[str], new: list[str]) -> list[DiffRecord]:
    """kapp's algorithm written out directly: trimming, then a full LCS table over suffixes walked from the front."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    i, j, end = len(old) - 1, len(new) - 1, 0
    while i > start and j > start and old[i] == new[j]:
        i, j, end = i - 1, j - 1, end + 1
    a, b = old[start : len(old) - end], new[start : len(new) - end]
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[n - i] == b[m - j]:
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
    records = [DiffRecord(line, COMMON, k, k) for k, line in enumerate(old[:start])]
    i, j = n, m
    while i > 0 or j > 0:
        left, right = start + n - i, start + m - j
        if i > 0 and table[i][j] == table[i - 1][j]:
            records.append(DiffRecord(a[n - i], REMOVED, left, right))
            i -= 1
        elif j > 0 and table[i][j] == table[i][j - 1]:
            records.append(DiffRecord(b[m - j], ADDED, left, right))
            j -= 1
        else:
            records.append(DiffRecord(a[n - i], COMMON, left, right))
            i, j = i - 1, j - 1
    records += [
        DiffRecord(line, COMMON, len(old) - end + k, len(new) - end + k) for k, line in enumerate(old[len(old) - end :])
    ]
    return records


def reference_render(records: list[DiffRecord], context: int) -> str:
    """kapp's TextDiffView.String with line numbers, its context test written as stated."""
    changed = {k for k, r in enumerate(records) if r.kind is not COMMON}
    lines, prev_in_context = [], False
    for k, r in enumerate(records):
        if r.kind is ADDED:
            lines.append(f"    {r.line_right:3d} + {r.payload}")
        elif r.kind is REMOVED:
            lines.append(f"{r.line_left:3d}     - {r.payload}")
        else:
            in_context = context < 0 or any(j in changed for j in range(k - context, k + context))
            if k != 0 and not prev_in_context and in_context:
                lines.append("  ...")
            if in_context:
                lines.append(f"{r.line_left:3d},{r.line_right:3d}   {r.payload}")
            prev_in_context = in_context
    return "\n".join(lines) + "\n"


def test_changed_config_map_value_renders_as_kapp_with_context_and_line_numbers():
    new = CONFIG_MAP.replace('c: "3"', "c: 3x")
    assert render(diff_texts(CONFIG_MAP, new)) == (
        "  ...\n"
        '  3,  3     b: "2"\n'
        '  4     -   c: "3"\n'
        "      4 +   c: 3x\n"
        '  5,  5     d: "4"\n'
        '  6,  6     e: "5"\n'
    )  # fmt: skip


def test_creation_shows_every_line_as_added_including_the_last_empty_line():
    assert render(diff_texts(None, "a: 1\nb: 2\n")) == "      0 + a: 1\n      1 + b: 2\n      2 + \n"
    rendered = render(diff_texts(None, CONFIG_MAP))
    assert rendered.splitlines()[0] == "      0 + apiVersion: v1"
    assert rendered.endswith("\n     10 + \n")


def test_deletion_shows_every_line_as_removed():
    rendered = render(diff_texts(CONFIG_MAP, None))
    assert rendered.splitlines()[:2] == ["  0     - apiVersion: v1", "  1     - data:"]
    assert rendered.endswith(" 10     - \n")


def test_replaced_line_is_removed_then_added_with_positions_on_both_sides():
    assert diff_lines(["one", "two", "three", ""], ["one", "five", "three", ""]) == (
        DiffRecord("one", COMMON, 0, 0),
        DiffRecord("two", REMOVED, 1, 1),
        DiffRecord("five", ADDED, 2, 1),
        DiffRecord("three", COMMON, 2, 2),
        DiffRecord("", COMMON, 3, 3),
    )


def test_within_a_hunk_all_removed_lines_come_before_added_lines():
    records = diff_lines(["a", "b", "keep", "c", "d"], ["x", "y", "keep", "z"])
    assert [(r.kind, r.payload) for r in records] == [
        (REMOVED, "a"), (REMOVED, "b"), (ADDED, "x"), (ADDED, "y"), (COMMON, "keep"),
        (REMOVED, "c"), (REMOVED, "d"), (ADDED, "z"),
    ]  # fmt: skip


@pytest.mark.parametrize("seed", range(300))
def test_records_match_the_lcs_table_walk_of_kapps_difflib(seed):
    rnd = random.Random(seed)
    alphabet = "abc" if seed % 2 else "abcdefgh"
    old = [rnd.choice(alphabet) for _ in range(rnd.randint(0, 14))]
    new = [rnd.choice(alphabet) for _ in range(rnd.randint(0, 14))]
    assert list(diff_lines(old, new)) == reference_diff(old, new)


def test_large_inputs_give_the_same_records_as_the_table_walk():
    rnd = random.Random(7)
    old = [f"line {rnd.randint(0, 60)}" for _ in range(300)]
    new = [line if rnd.random() < 0.8 else "changed" for line in old] + ["tail"]
    assert list(diff_lines(old, new)) == reference_diff(old, new)


def test_huge_inputs_fall_back_to_an_alignment_that_keeps_the_record_layout(monkeypatch):
    monkeypatch.setattr(text_diff, "EXACT_DIFF_MAX_CELLS", 0)
    old, new = list("xabcdefgy"), list("xabXYefZgy")
    records = diff_lines(old, new)
    assert [r.payload for r in records if r.kind is not ADDED] == old
    assert [r.payload for r in records if r.kind is not REMOVED] == new
    for r in records:
        assert r.kind is ADDED or old[r.line_left] == r.payload
        assert r.kind is REMOVED or new[r.line_right] == r.payload
    kinds = "".join(r.kind for r in records)
    assert "+-" not in kinds


def test_identical_texts_have_no_changes_and_render_nothing():
    records = diff_texts(CONFIG_MAP, CONFIG_MAP)
    assert all(r.kind is COMMON and r.line_left == r.line_right for r in records)
    assert not has_changes(records)
    assert render(records) == "\n"
    assert render_minimal(records) == ""


def test_has_changes_sees_any_added_or_removed_line():
    assert has_changes(ONE_CHANGE)
    assert has_changes(diff_texts(None, "a"))
    assert not has_changes(diff_texts(None, None))


def test_default_context_shows_one_common_line_before_and_two_after_a_change():
    assert render(ONE_CHANGE) == "  ...\n  2,  2   c\n  3     - d\n      3 + X\n  4,  4   e\n  5,  5   f\n"


def test_context_one_shows_only_the_line_after_a_change_behind_an_ellipsis():
    assert render(ONE_CHANGE, context=1) == "  3     - d\n      3 + X\n  ...\n  4,  4   e\n"


def test_context_zero_shows_only_changed_lines():
    assert render(ONE_CHANGE, context=0) == "  3     - d\n      3 + X\n"


def test_negative_context_shows_every_line_without_ellipsis():
    rendered = render(ONE_CHANGE, context=-1)
    assert rendered.splitlines() == [
        "  0,  0   a", "  1,  1   b", "  2,  2   c", "  3     - d", "      3 + X",
        "  4,  4   e", "  5,  5   f", "  6,  6   g",
    ]  # fmt: skip


@pytest.mark.parametrize("seed", range(100))
def test_context_selection_matches_kapps_definition(seed):
    rnd = random.Random(seed)
    old = [rnd.choice("abcdef") for _ in range(rnd.randint(0, 25))]
    new = [rnd.choice("abcdef") for _ in range(rnd.randint(0, 25))]
    records = diff_lines(old, new)
    for context in (-1, 0, 1, 2, 3, 7):
        assert render(records, context=context) == reference_render(list(records), context)


def test_without_line_numbers_only_marks_are_printed():
    assert render(ONE_CHANGE, line_numbers=False) == "  ...\n  c\n- d\n+ X\n  e\n  f\n"


def test_ellipsis_separates_distant_hunks():
    old = [f"l{n}" for n in range(12)]
    new = [*old[:2], "X", *old[3:9], "Y", *old[10:]]
    assert render(diff_lines(old, new), line_numbers=False) == (
        "  ...\n  l1\n- l2\n+ X\n  l3\n  l4\n  ...\n  l8\n- l9\n+ Y\n  l10\n  l11\n"
    )


def test_line_numbers_widen_past_three_digits():
    old = [str(n) for n in range(1002)]
    new = [*old[:1001], "changed"]
    assert render(diff_lines(old, new)).splitlines()[-2:] == ["1001     - 1001", "    1001 + changed"]


def test_minimal_rendering_lists_changed_lines_with_both_positions():
    assert render_minimal(ONE_CHANGE) == "  3,  3 - d\n  4,  3 + X\n"
