"""kapply.yamlio reads YAML as kapp does (go-yaml v2, then sigs.k8s.io/yaml's JSON), and no input can crash it or
make it expensive: nesting and alias expansion are bounded, and every problem is one error naming the document."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kapply import yamlio
from kapply.diff.yaml_text import to_yaml
from kapply.errors import ConfigError, ManifestError


def load(text: str | bytes) -> list[object]:
    return yamlio.load_all(text, "stdin", ManifestError)


def value(text: str) -> object:
    (doc,) = load(f"v: {text}\n")
    assert isinstance(doc, dict)
    return doc["v"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Booleans and null as go-yaml v2's table has them (PyYAML does not know y and n).
        ("y", True), ("Yes", True), ("on", True), ("TRUE", True), ("n", False), ("off", False), ("No", False),
        ("~", None), ("null", None), ("", None),
        # Integers: Go literals once underscores are removed, within int64 or uint64.
        ("017", 15), ("0o17", 15), ("0x1F", 31), ("0b101", 5), ("1_000", 1000), ("+1", 1), ("-0", 0),
        ("0b-101", -5), ("18446744073709551615", 2**64 - 1),
        # Floats: go-yaml's float syntax, and beyond 64-bit integers.
        ("1e3", 1000.0), ("1.", 1.0), (".5", 0.5), ("-1.5e-3", -0.0015), ("08", 8.0),
        ("18446744073709551616", 1.8446744073709552e19),
        # Everything else YAML 1.1 might type is a string: no sexagesimals, timestamps, values, merges or overflows.
        ("12:30", "12:30"), ("2024-01-01", "2024-01-01"), ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"),
        ("=", "="), ("<<", "<<"), ("1e400", "1e400"), ("0x1FFFFFFFFFFFFFFFF", "0x1FFFFFFFFFFFFFFFF"),
        ("1" * 5000, "1" * 5000), ("._", "._"), ("0o8", "0o8"),
        # Quoting and explicit tags.
        ("'1'", "1"), ('"true"', "true"), ("!!str 1", "1"), ("! 1", "1"), ('!!int "12"', 12), ("!!float 1", 1.0),
        ("!!binary aGVsbG8=", "hello"), ("!!timestamp 2024-02-29", "2024-02-29"), ("!custom 1", "1"),
        ("|\n  a\n  b", "a\nb\n"),
    ],
)  # fmt: skip
def test_scalars_resolve_as_go_yaml_v2_resolves_them(text, expected):
    assert value(text) == expected
    assert type(value(text)) is type(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # go-yaml's three layouts, with Go's time.Parse ranges (year 0 is a leap year, as in Go).
        ("2024-01-01", True), ("2024-1-2", True), ("2024-02-29", True), ("0000-02-29", True), ("2000-02-29", True),
        ("2024-01-01T10:00:00Z", True), ("2024-01-01t1:2:3.5+02:00", True), ("2024-01-01 23:59:59", True),
        ("2024-01-01T10:00:00+24:60", True),
        ("2023-02-29", False), ("1900-02-29", False), ("2024-13-01", False), ("2024-00-10", False),
        ("2024-04-31", False), ("2024-01-01T24:00:00Z", False), ("2024-01-01 10:60:00", False),
        ("2024-01-01T10:00:00", False), ("2024-01-01T10:00:00+25:00", False), ("24-01-01", False), ("x", False),
    ],
)  # fmt: skip
def test_is_timestamp_takes_what_go_yaml_reads_as_a_time(text, expected):
    assert yamlio.is_timestamp(text) is expected
    # the writer quotes exactly these strings (and other numbers), so that they read back as strings
    assert to_yaml({"k": text}) == (f'k: "{text}"\n' if expected else f"k: {text}\n")


def test_a_plain_equals_sign_is_a_string_as_in_prometheus_operator_crds():
    crd = "spec:\n  enum:\n  - =\n  - '!='\n  - =~\n"
    assert load(crd) == [{"spec": {"enum": ["=", "!=", "=~"]}}]


def test_keys_become_json_strings_and_true_and_1_stay_two_keys():
    assert load("on: a\n1: b\n") == [{"true": "a", "1": "b"}]
    assert load("true: a\n1: b\n") == [{"true": "a", "1": "b"}]
    assert load("y: a\n0x10: b\n2024-01-01: c\n!!binary aGk=: d\n") == [
        {"true": "a", "16": "b", "2024-01-01": "c", "hi": "d"}
    ]


@pytest.mark.parametrize(
    ("key", "expected"),
    [("1.5", "1.5"), ("0.1", "0.1"), ("1.0", "1"), ("1e6", "1e+06"), ("123456.0", "123456"),
     ("1234567.0", "1.234567e+06"), ("0.0001", "0.0001"), ("0.00001", "1e-05"), ("3.141592653589793", "3.1415927"),
     ("-0.0", "-0"), ("1e39", ".inf"), ("-.inf", "-.inf"), (".nan", ".nan")],
)  # fmt: skip
def test_float_keys_are_printed_as_go_prints_a_float32(key, expected):
    assert load(f"{key}: x\n") == [{expected: "x"}]


def test_merge_keys_merge_in_place_later_keys_winning_as_in_go_yaml_v2():
    text = "base: &b {p: 1, q: 1}\nother: &o {q: 2, r: 2}\nm:\n  p: 0\n  <<: [*b, *o]\n  r: 3\n"
    assert load(text)[0]["m"] == {"p": 1, "q": 1, "r": 3}  # [*b, *o]: the earlier map wins


def test_aliases_share_their_anchors_value():
    (doc,) = load("a: &a {k: [1, 2]}\nb: *a\n")
    assert doc == {"a": {"k": [1, 2]}, "b": {"k": [1, 2]}} and doc["a"] is doc["b"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: .inf\n", "stdin doc 1: value .inf at line 1, column 4 is not a JSON number"),
        ("&k .nan: 1\nb: *k\n", r"stdin doc 1: alias '\*k' at line 2, column 4 is not a JSON number"),
        ("~: 1\n", "stdin doc 1: map key null is not a string, number or boolean"),
        ("[a]: 1\n", "stdin doc 1: a list cannot be a map key"),
        ("a: &a {x: 1}\n*a : 2\n", "stdin doc 1: a map cannot be a map key"),
        ("a: *x\n", "stdin doc 1: anchor 'x' is not defined"),
        ("a: &x [*x]\n", "stdin doc 1: anchor 'x' value contains itself"),
        ("<<: 1\n", "stdin doc 1: map merge requires map or sequence of maps as the value"),
        ("a: &a [1]\n<<: *a\n", "stdin doc 1: map merge requires map or sequence of maps"),
        ("a: !!int abc\n", "stdin doc 1: cannot decode !!str `abc` as a !!int"),
        ("a: !!bool 1.5\n", r"stdin doc 1: cannot decode !!float `1.5` as a !!bool"),
        ("a: !!binary 'é'\n", "stdin doc 1: !!binary value contains invalid base64 data"),
        ("a: !!timestamp 2023-02-29\n", "stdin doc 1: cannot decode !!str `2023-02-29` as a !!timestamp"),
        ("a: 1\n---\n- [\n", r"stdin: did not find expected node content at line 4, column 1 \(while parsing a flow"),
        (b"a: \xff\n", "stdin: invalid leading UTF-8 octet at byte 3"),
        ("a: \udcff\n", "stdin: not valid UTF-8 \\(character 3 is a lone surrogate\\)"),
        ("a: b\x00\n", "stdin: control characters are not allowed at byte 4"),
    ],
)
def test_every_problem_is_one_error_naming_the_source_and_document(text, message):
    with pytest.raises(ManifestError, match="^Parsing " + message):
        load(text)


def test_utf16_with_a_byte_order_mark_is_read_as_yaml_allows():
    assert load("a: é\n".encode("utf-16")) == [{"a": "é"}]


def test_documents_are_numbered_from_1_with_empty_ones_as_none():
    assert load("---\n---\na: 1\n---\n[x]\n") == [None, {"a": 1}, ["x"]]
    with pytest.raises(ManifestError, match="^Parsing stdin doc 2: value"):
        load("---\n---\na: .nan\n")


def test_nesting_is_bounded_at_max_depth_levels():
    assert yamlio.MAX_DEPTH == 100
    at_limit = "[" * 100 + "]" * 100
    assert load(at_limit)  # 100 levels are fine
    with pytest.raises(
        ManifestError, match=r"^Parsing stdin doc 1: nesting deeper than 100 levels \(at line 1, column"
    ):
        load("[" * 101 + "]" * 101)
    block = "".join(" " * i + "k:\n" for i in range(101)) + " " * 101 + "v\n"
    with pytest.raises(ManifestError, match="nesting deeper than 100 levels"):
        load(block)


def test_nesting_counts_through_aliases():
    half = "[" * 50 + "]" * 50
    assert load(f"a: &a {half}\n")  # 51 levels with the map
    with pytest.raises(ManifestError, match=r"nesting deeper than 100 levels through alias '\*a'"):
        load(f"a: &a {half}\nb: {'[' * 50}*a{']' * 50}\n")


def test_the_deepest_document_the_limit_allows_is_handled_by_every_later_stage():
    """100 levels of maps render as YAML, fingerprint and encode as JSON (orjson stops at 255)."""
    import orjson

    from kapply.config.config import Config
    from kapply.diff.change import calculate
    from kapply.diff.render import line_diffs

    deep: object = "x"
    for _ in range(99):
        deep = {"a": deep}
    old = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n"}, "data": deep}  # 100 levels
    text = to_yaml(old)
    (read,) = load(text)
    assert read == old and not yamlio.too_deep(read)
    new = {**old, "data": {"a": {"b": "changed"}}}
    change = calculate(new, old, Config())
    assert "- " in line_diffs([change], Config()) and orjson.loads(orjson.dumps(old)) == old


def _peak(script: str) -> tuple[str, int]:
    """Run `script` in a fresh interpreter: what it prints, and its peak RSS in MB (VmHWM: getrusage's maxrss would
    count the pytest process it was forked from)."""
    program = (
        f"{script}\n"
        "hwm = next(line for line in open('/proc/self/status') if line.startswith('VmHWM:'))\n"
        "print(int(hwm.split()[1]) // 1024)\n"
    )
    lines = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True).stdout.split()
    return " ".join(lines[:-1]), int(lines[-1])


ALIAS_BOMB = 'kind: ConfigMap\ndata:\n  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"  {n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_an_alias_bomb_is_refused_at_once_in_little_memory():
    assert len(ALIAS_BOMB) <= 413  # expands to 9**9 = 387,420,489 strings
    with pytest.raises(ManifestError, match="^Parsing stdin doc 1: document contains excessive aliasing$"):
        load(ALIAS_BOMB)
    out, peak_mb = _peak(
        "from kapply import yamlio\n"
        f"try:\n    yamlio.load_all({ALIAS_BOMB!r}, 'stdin', ValueError)\nexcept ValueError as e:\n    print('refused')"
    )
    assert out == "refused" and peak_mb < 64, peak_mb


def test_a_document_nested_100000_levels_deep_is_refused_in_little_memory():
    out, peak_mb = _peak(
        "from kapply import yamlio\n"
        "try:\n    yamlio.load_all('[' * 100000 + ']' * 100000, 'stdin', ValueError)\n"
        "except ValueError as e:\n    print('refused')"
    )
    assert out == "refused" and peak_mb < 64, peak_mb


def _aliasing(plain: int, aliases: int) -> str:
    """A document of `plain` strings and `aliases` aliases to all of them."""
    return f"a: &a [{','.join(['x'] * plain)}]\nb: [{','.join(['*a'] * aliases)}]\n"


def test_aliasing_follows_go_yamls_ratio_rule():
    # 1,006 nodes, then each alias counts 1 node plus 1,001 aliased: the aliased share passes 99% at the 111th.
    assert load(_aliasing(1000, 110))
    with pytest.raises(ManifestError, match="excessive aliasing"):
        load(_aliasing(1000, 111))
    assert load(_aliasing(10, 9)) == [{"a": ["x"] * 10, "b": [["x"] * 10] * 9}]


def test_small_documents_may_alias_freely_as_in_go_yaml():
    levels = ALIAS_BOMB.splitlines()[2:]
    assert load("\n".join(levels[:3]) + "\n")  # 9**3 strings: under the 1,000 nodes the rule starts at
    with pytest.raises(ManifestError, match="excessive aliasing"):
        load("\n".join(levels[:4]) + "\n")


def test_aliases_may_not_add_more_than_a_million_nodes_to_one_stream():
    one = _aliasing(5000, 49)  # 245,049 nodes from aliases, 2% of them plain: fine on its own
    assert len(load("---\n".join([one] * 4))) == 4
    with pytest.raises(ManifestError, match="^Parsing stdin doc 5: aliases expand the stream by more than 1,000,000"):
        load("---\n".join([one] * 5))


@pytest.mark.parametrize(
    "obj",
    [
        {"k": [1, 2.5, -3, True, None, "s"]},
        {
            "y": "y",
            "n": "on",
            "num": "017",
            "e": "1e3",
            "t": "2024-01-01",
            "eq": "=",
            "m": "<<",
            "e2": "",
            "tab": "a\tb",
        },
        {"true": 1, "1": 2, "1.5": 3, "": 4, "null": 5, "~": 7},
        {"big": 2**63 - 1, "float": 1e20, "small": 1e-7, "neg": -(2**63)},
    ],
)
def test_what_yaml_text_prints_reads_back_unchanged(obj):
    """yaml_text quotes a string exactly when go-yaml would read it as something else: the two agree. (Except for a
    `<<` key, which go-yaml v2 writes plain and then reads as a merge: kapp cannot read it back either.)"""
    assert load(to_yaml(obj)) == [obj]


def test_load_expects_at_most_one_document_and_load_mapping_a_map():
    assert yamlio.load("", "x", ConfigError) is None
    assert yamlio.load_mapping("# nothing\n", "x", ConfigError) == {}
    with pytest.raises(ConfigError, match="^Parsing x: expected a single document, but found 2$"):
        yamlio.load("a: 1\n---\nb: 2\n", "x", ConfigError)
    with pytest.raises(ConfigError, match="^Parsing x: expected a YAML mapping, but found list$"):
        yamlio.load_mapping("[1]", "x", ConfigError)


def test_too_deep_walks_dicts_and_lists_and_counts_a_cycle_as_too_deep():
    deep: object = "x"
    for _ in range(100):
        deep = [deep]
    assert not yamlio.too_deep(deep) and yamlio.too_deep({"a": deep})
    cycle: dict[str, object] = {}
    cycle["self"] = cycle
    assert yamlio.too_deep(cycle) and not yamlio.too_deep("scalar")


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (None, "null"),
        ({"a": 1}, "map"),
        ([1], "list"),
        ("", "string"),
        (True, "boolean"),  # not a number, though a bool is an int
        (0, "number"),
        (1.5, "number"),
        (b"x", None),
        ((1,), None),
    ],
)
def test_kind_of_names_a_loaded_values_kind(value: object, kind: str | None) -> None:
    assert yamlio.kind_of(value) == kind
