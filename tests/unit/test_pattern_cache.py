"""kapply.cli.pattern_cache: regular expressions compiled once and kept between runs, equal to what `re` compiles
(the table across fresh starts of the CLI: test_kept_table.py)."""

from __future__ import annotations

import marshal
import re
from importlib.util import MAGIC_NUMBER
from pathlib import Path

import pytest

from kapply.cli import pattern_cache
from kapply.cli.kept_table import save
from kapply.cli.pattern_cache import HEADER, CompiledPatterns, compiled, load

# Named and numbered groups, inline and given flags, bytes, look-arounds, repeats, and PyYAML's reader's class of
# ranges up to U+10FFFF (the slowest a deploy compiles).
PATTERNS: list[tuple[str | bytes, int]] = [
    (r"(?P<year>[0-9]{4})-(?P<month>[0-9][0-9]?)(?:-(\d+))?", 0),
    (r"^(?:yes|Yes|no|No)$  # a comment", re.VERBOSE),
    (r"(?i)[a-z0-9]([-a-z0-9]*[a-z0-9])?", 0),
    (r"ab+c|(?<=x)d{2,5}?|(?!e)f\b", re.MULTILINE | re.DOTALL),
    (r"straße", re.IGNORECASE),
    (b"(?P<chunk_size>([0-9A-Fa-f]){1,20})(?P<chunk_ext>;.*)?[ \\t]*\\r\\n", 0),
    (b"[\\x00-\\x1f]", re.ASCII),
    ("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]", 0),
]


def re_compiles(pattern: str | bytes, flags: int) -> re.Pattern[str] | re.Pattern[bytes]:
    """What `re`'s own compiler makes of the pattern, whether or not this process has the table installed."""
    compile_ = re._compiler.compile  # type: ignore[attr-defined]
    return (compile_.original if isinstance(compile_, CompiledPatterns) else compile_)(pattern, flags)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("pattern", "flags"), PATTERNS)
def test_a_pattern_built_from_the_table_is_the_one_re_compiles(pattern: str | bytes, flags: int) -> None:
    table: dict[pattern_cache.Key, pattern_cache.Compiled] = {}
    first = CompiledPatterns(table, None)(pattern, flags)
    assert first.pattern == pattern
    again = CompiledPatterns(marshal.loads(marshal.dumps(table)), None)
    built = again(pattern, flags)
    assert again.compiled == 0  # from the table
    fresh = re_compiles(pattern, flags)
    assert built == fresh and first == fresh  # same pattern, flags and code
    assert (built.groups, built.groupindex) == (fresh.groups, fresh.groupindex)


def test_matches_and_groups_are_re_s() -> None:
    patterns = CompiledPatterns({}, None)
    date = patterns(r"(?P<year>[0-9]{4})-(?P<month>[0-9][0-9]?)(?:-(\d+))?", 0)
    found = date.search("on 2026-12-05!")
    assert found is not None
    assert (found.group("year"), found.group("month"), found.group(3), found.span()) == ("2026", "12", "05", (3, 13))
    assert date.groupindex == {"year": 1, "month": 2}
    assert patterns(b"[\\x00-\\x1f]", re.ASCII).findall(b"a\x01b\x1f") == [b"\x01", b"\x1f"]
    assert patterns("straße", re.IGNORECASE).fullmatch("STRASSE") is None
    assert patterns("straße", re.IGNORECASE).fullmatch("Straße") is not None


def test_code_re_refuses_is_compiled_again_and_debug_is_left_to_re() -> None:
    table: dict[pattern_cache.Key, pattern_cache.Compiled] = {("a+", 0): (32, [1, 2, 3], 0, {}, (None,))}
    calls: list[tuple[object, int]] = []

    def fallback(pattern: object, flags: int) -> object:
        calls.append((pattern, flags))
        return "re's own"

    patterns = CompiledPatterns(table, fallback)
    assert patterns("a+", 0).fullmatch("aaa") is not None
    assert patterns.compiled == 1
    assert table[("a+", 0)] == compiled("a+", 0)
    assert patterns("a+", re.DEBUG) == "re's own"
    assert calls == [("a+", re.DEBUG)]


def test_the_table_round_trips_and_keeps_only_patterns_under_both_magic_numbers(tmp_path: Path) -> None:
    path = tmp_path / "patterns.marshal"
    table = {("a+", 0): compiled("a+", 0)}
    save(path, table, HEADER)
    assert load(path) == table
    methods_header = tmp_path / "methods-header"
    methods_header.write_bytes(MAGIC_NUMBER + marshal.dumps(table))
    assert load(methods_header) == {}
    mixed = tmp_path / "mixed"
    mixed.write_bytes(HEADER + marshal.dumps(table | {("b", 0): "code", "c": compiled("c", 0), ("d",): (0,)}))
    assert load(mixed) == table


def test_only_this_runs_patterns_are_written_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pattern_cache, "LIMIT", 2)
    table: dict[pattern_cache.Key, pattern_cache.Compiled] = {(f"x{n}", 0): compiled(f"x{n}", 0) for n in range(3)}
    patterns = CompiledPatterns(dict(table), None)
    patterns("x1", 0)
    patterns("y", 0)
    assert set(patterns.to_write()) == {("x1", 0), ("y", 0)}
    monkeypatch.setattr(pattern_cache, "LIMIT", 10)
    assert set(patterns.to_write()) == {*table, ("y", 0)}


def test_a_run_keeps_at_most_limit_new_patterns_and_none_longer_than_longest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Patterns from input (a long-running controller compiling tenants' kapp Config regexes) cannot grow the table
    without bound: past LIMIT new ones, or longer than LONGEST, `re` compiles them and nothing is kept."""
    monkeypatch.setattr(pattern_cache, "LIMIT", 2)
    original = re._compiler.compile  # type: ignore[attr-defined]
    patterns = CompiledPatterns({}, original)
    long = "a" * (pattern_cache.LONGEST + 1)
    assert patterns(long, 0).match(long)
    for text in ("p1", "p2", "p3"):
        assert patterns(text, 0).match(text)
    assert set(patterns.table) == {("p1", 0), ("p2", 0)}
    assert patterns.compiled == 2
