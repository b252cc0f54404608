"""Line diff of two YAML texts and its rendering, record for record as kapp's text diff.

kapp diffs with github.com/k14s/difflib: trim the common head and tail, then walk a longest-common-subsequence
table over the suffixes of the remaining middle from the front, preferring a removed line, then an added line, then
a common one. Within a hunk removed lines therefore come before added lines.

With kapp's `--diff-anchored` (`--anchored` for `tools diff`) and either side over 500 lines, kapp uses
k14s/difflib's AnchoredDiff instead: Go's anchored ("patience") diff, which matches the lines that appear exactly once
on each side and keeps only 30 common lines of context around each run of changes (see anchored_diff_lines).
"""

import difflib
from bisect import bisect_left
from collections.abc import Sequence
from enum import StrEnum
from typing import NamedTuple

__all__ = [
    "DiffKind",
    "DiffRecord",
    "anchored_diff_lines",
    "diff_lines",
    "diff_texts",
    "has_changes",
    "render",
    "render_minimal",
    "text_lines",
]

# Above this many cells (middle lines of one side times the other) the exact table would take too much memory
# (one bit per cell); difflib then aligns the lines instead. kapp itself would need 8 bytes per cell.
EXACT_DIFF_MAX_CELLS = 1 << 28

# With anchored diffs allowed, kapp uses them once either side has more lines than this.
ANCHORED_MIN_LINES = 500

# The common lines an anchored diff keeps around each run of changes (Go's internal/diff context C).
ANCHORED_CONTEXT = 30


class DiffKind(StrEnum):
    """Whether a line is in both texts, only in the existing one or only in the new one (its diff mark)."""

    COMMON = " "
    REMOVED = "-"
    ADDED = "+"


class DiffRecord(NamedTuple):
    """One line of a diff.

    line_left and line_right are 0-based line numbers in the existing and the new text; for a removed line
    line_right is the position reached in the new text, and for an added line line_left the position reached in
    the existing text. A named tuple rather than a frozen dataclass: there is one per line of every diffed object,
    and it is several times cheaper to create.
    """

    payload: str
    kind: DiffKind
    line_left: int
    line_right: int


def text_lines(text: str | None) -> list[str]:
    """Lines as kapp splits a resource's YAML (a trailing newline gives a last empty line); none if missing."""
    return [] if text is None else text.split("\n")


def diff_texts(existing: str | None, new: str | None, anchored: bool = False) -> tuple[DiffRecord, ...]:
    """Diff the YAML of an existing and a new resource; None stands for a resource that does not exist."""
    return diff_lines(text_lines(existing), text_lines(new), anchored)


def diff_lines(old: Sequence[str], new: Sequence[str], anchored: bool = False) -> tuple[DiffRecord, ...]:
    """Records for every line of both sides, in kapp's order; with `anchored` (kapp's --diff-anchored) and either
    side over ANCHORED_MIN_LINES lines, the anchored diff's records instead (not every common line)."""
    if anchored and (len(old) > ANCHORED_MIN_LINES or len(new) > ANCHORED_MIN_LINES):
        return anchored_diff_lines(old, new)
    common = DiffKind.COMMON
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    # Like k14s/difflib, trim the tail only down to index start + 1 on both sides.
    i, j = len(old) - 1, len(new) - 1
    while i > start and j > start and old[i] == new[j]:
        i -= 1
        j -= 1
    end = len(old) - 1 - i
    records = [DiffRecord(line, common, n, n) for n, line in enumerate(old[:start])]
    old_middle, new_middle = old[start : len(old) - end], new[start : len(new) - end]
    if not new_middle:
        records += [DiffRecord(line, DiffKind.REMOVED, start + n, start) for n, line in enumerate(old_middle)]
    elif not old_middle:
        records += [DiffRecord(line, DiffKind.ADDED, start, start + n) for n, line in enumerate(new_middle)]
    elif len(old_middle) * len(new_middle) <= EXACT_DIFF_MAX_CELLS:
        records += _lcs_middle(old_middle, new_middle, start)
    else:
        records += _matcher_middle(old_middle, new_middle, start)
    tail_left, tail_right = len(old) - end, len(new) - end
    records += [DiffRecord(line, common, tail_left + n, tail_right + n) for n, line in enumerate(old[tail_left:])]
    return tuple(records)


def _lcs_middle(old: Sequence[str], new: Sequence[str], offset: int) -> list[DiffRecord]:
    """k14s/difflib's table walk, with the table kept as bit vectors.

    table[i][j] is the LCS length of the last i lines of old and the last j lines of new, that is of the first i
    and j lines of both sides reversed. Row i is computed bit-parallel (Hyyro's LCS recurrence) over new reversed:
    bit k of rows[i] is clear exactly where table[i][k + 1] == table[i][k] + 1, so table[i][j] is j minus the set
    bits below j.
    """
    n, m = len(old), len(new)
    full = (1 << m) - 1
    matches: dict[str, int] = {}
    for k, line in enumerate(reversed(new)):
        matches[line] = matches.get(line, 0) | 1 << k
    rows = [full]
    row = full
    for line in reversed(old):
        hits = row & matches.get(line, 0)
        row = ((row + hits) | (row - hits)) & full
        rows.append(row)

    removed, added, common = DiffKind.REMOVED, DiffKind.ADDED, DiffKind.COMMON
    records: list[DiffRecord] = []
    i, j = n, m
    while i > 0 or j > 0:
        below_j = (1 << j) - 1
        left, right = offset + n - i, offset + m - j
        if i > 0 and (rows[i] & below_j).bit_count() == (rows[i - 1] & below_j).bit_count():
            records.append(DiffRecord(old[n - i], removed, left, right))
            i -= 1
        elif j > 0 and rows[i] >> (j - 1) & 1:
            records.append(DiffRecord(new[m - j], added, left, right))
            j -= 1
        else:
            records.append(DiffRecord(old[n - i], common, left, right))
            i -= 1
            j -= 1
    return records


def _matcher_middle(old: Sequence[str], new: Sequence[str], offset: int) -> list[DiffRecord]:
    """An approximate alignment for huge inputs, laid out like the exact one (removed before added)."""
    records: list[DiffRecord] = []
    matcher = difflib.SequenceMatcher(None, old, new)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            shift = j1 - i1
            records += [DiffRecord(old[i], DiffKind.COMMON, offset + i, offset + i + shift) for i in range(i1, i2)]
        else:
            records += [DiffRecord(old[i], DiffKind.REMOVED, offset + i, offset + j1) for i in range(i1, i2)]
            records += [DiffRecord(new[j], DiffKind.ADDED, offset + i2, offset + j) for j in range(j1, j2)]
    return records


def _anchors(old: Sequence[str], new: Sequence[str]) -> list[tuple[int, int]]:
    """The positions of the longest common subsequence of the lines found exactly once on each side, between the
    sentinels (0, 0) and (len(old), len(new)).

    The subsequence is a longest increasing one of the new positions of the unique lines in old's order (Szymanski's
    algorithm A, as Go's internal/diff): thresholds[k] is the smallest last value of an increasing run of k + 1, and
    each line's length is where it lands; walking back, the last line of each length is taken.
    """
    seen_old: dict[str, int] = {}
    for line in old:
        seen_old[line] = min(seen_old.get(line, 0) + 1, 2)
    seen_new: dict[str, int] = {}
    for line in new:
        seen_new[line] = min(seen_new.get(line, 0) + 1, 2)
    new_index: dict[str, int] = {}  # a unique line's rank among the unique lines of new
    new_at: list[int] = []  # the position in new of each unique line, by rank
    for j, line in enumerate(new):
        if seen_new[line] == 1 and seen_old.get(line) == 1:
            new_index[line] = len(new_at)
            new_at.append(j)
    old_at: list[int] = []  # positions in old of the unique lines
    ranks: list[int] = []  # their ranks in new
    for i, line in enumerate(old):
        rank = new_index.get(line)
        if rank is not None:
            old_at.append(i)
            ranks.append(rank)

    n = len(ranks)
    thresholds: list[int] = []
    lengths: list[int] = []
    for rank in ranks:
        k = bisect_left(thresholds, rank)
        if k == len(thresholds):
            thresholds.append(rank)
        else:
            thresholds[k] = rank
        lengths.append(k + 1)
    k = max(lengths, default=0)
    matches = [(0, 0)] * (k + 2)
    matches[k + 1] = (len(old), len(new))
    for i in range(n - 1, -1, -1):
        if lengths[i] == k:
            matches[k] = (old_at[i], new_at[ranks[i]])
            k -= 1
    return matches


def anchored_diff_lines(old: Sequence[str], new: Sequence[str]) -> tuple[DiffRecord, ...]:
    """k14s/difflib's AnchoredDiff: records of Go's anchored diff, in unified-diff chunks.

    Each anchor is widened to the run of equal lines around it. Runs of changes between anchors form chunks that
    keep up to ANCHORED_CONTEXT common lines on either side; longer common stretches are left out (there is no
    record for them). Within a chunk removed lines come before added ones. Identical sides give every line as a
    common record. Line numbers are 0-based, as with diff_lines.
    """
    context = ANCHORED_CONTEXT
    len_old, len_new = len(old), len(new)
    chunks = _Chunks()
    done_x = done_y = 0  # records made up to old[:done_x] and new[:done_y]
    for match_x, match_y in _anchors(old, new):
        if match_x < done_x:  # already covered, widening an earlier anchor
            continue
        (start_x, start_y), (end_x, end_y) = _widened(old, new, (match_x, match_y), (done_x, done_y))
        if start_x == 0 and start_y == 0 and end_x == len_old and end_y == len_new:  # identical sides
            chunks.records += [DiffRecord(old[i], DiffKind.COMMON, i, i) for i in range(len_old)]
        chunks.add(old[done_x:start_x], DiffKind.REMOVED)
        chunks.add(new[done_y:start_y], DiffKind.ADDED)

        equal = end_x - start_x
        at_end = end_x >= len_old and end_y >= len_new
        if not at_end and (equal < context or (chunks.open and equal < 2 * context)):
            # too few common lines to close the chunk: they all belong to it
            chunks.add(old[start_x:end_x], DiffKind.COMMON)
            done_x, done_y = end_x, end_y
            continue
        if chunks.open:  # close the chunk with up to `context` common lines
            shown = min(equal, context)
            chunks.close(old[start_x : start_x + shown])
            done_x, done_y = start_x + shown, start_y + shown
        if at_end:
            break
        # a new chunk, opening with the `context` common lines before the next change
        chunks.start(end_x - context, end_y - context)
        chunks.add(old[end_x - context : end_x], DiffKind.COMMON)
        done_x, done_y = end_x, end_y
    return tuple(chunks.records)


def _widened(
    old: Sequence[str], new: Sequence[str], match: tuple[int, int], done: tuple[int, int]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """The run of equal lines around an anchor, back to what the records already cover: its start and end."""
    start_x, start_y = match
    while start_x > done[0] and start_y > done[1] and old[start_x - 1] == new[start_y - 1]:
        start_x -= 1
        start_y -= 1
    end_x, end_y = match
    while end_x < len(old) and end_y < len(new) and old[end_x] == new[end_y]:
        end_x += 1
        end_y += 1
    return (start_x, start_y), (end_x, end_y)


class _Chunks:
    """The records of `anchored_diff_lines` as they are made, and the chunk they belong to: a record's line numbers
    count from where the chunk started, each side's line counting on its own side (a common line on both)."""

    def __init__(self) -> None:
        self.records: list[DiffRecord] = []
        self.x = self.y = 0  # where the current chunk starts
        self.count_x = self.count_y = 0  # lines of each side in the current chunk
        self.open = False  # whether the current chunk has any line

    def add(self, lines: Sequence[str], kind: DiffKind) -> None:
        for line in lines:
            self.records.append(DiffRecord(line, kind, self.x + self.count_x, self.y + self.count_y))
            self.count_x += kind is not DiffKind.ADDED
            self.count_y += kind is not DiffKind.REMOVED
            self.open = True

    def close(self, lines: Sequence[str]) -> None:
        """End the chunk with its trailing common lines."""
        self.add(lines, DiffKind.COMMON)
        self.count_x = self.count_y = 0
        self.open = False

    def start(self, x: int, y: int) -> None:
        self.x, self.y = x, y


def has_changes(records: Sequence[DiffRecord]) -> bool:
    return any(record.kind is not DiffKind.COMMON for record in records)


def render(records: Sequence[DiffRecord], context: int = 2, line_numbers: bool = True) -> str:
    """The diff as kapp prints it under a change (without colours).

    A common line k is shown when a changed record j has k - context <= j < k + context (so one line before and
    two after a change with the default), every line when context < 0; "  ..." marks skipped common lines.
    """
    common, added, removed = DiffKind.COMMON, DiffKind.ADDED, DiffKind.REMOVED
    shown = bytearray(len(records))
    if context < 0:
        shown[:] = b"\x01" * len(records)
    else:
        for j, record in enumerate(records):
            if record.kind is not common and context:
                low, high = max(0, j - context + 1), min(len(records), j + context + 1)
                shown[low:high] = b"\x01" * (high - low)

    lines: list[str] = []
    prev_shown = False
    for k, (payload, kind, left, right) in enumerate(records):
        if kind is added:
            lines.append(f"    {right:3d} + {payload}" if line_numbers else f"+ {payload}")
        elif kind is removed:
            lines.append(f"{left:3d}     - {payload}" if line_numbers else f"- {payload}")
        elif shown[k]:
            if k != 0 and not prev_shown:
                lines.append("  ...")
            lines.append(f"{left:3d},{right:3d}   {payload}" if line_numbers else f"  {payload}")
            prev_shown = True
        else:
            prev_shown = False
    return "\n".join(lines) + "\n"


def render_minimal(records: Sequence[DiffRecord]) -> str:
    """Only the changed lines, each with both line numbers; kapp compares these to detect a changed diff."""
    return "".join(
        f"{left:3d},{right:3d} {kind} {payload}\n"
        for payload, kind, left, right in records
        if kind is not DiffKind.COMMON
    )
