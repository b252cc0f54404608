"""to_yaml must print objects exactly as kapp does (Go's sigs.k8s.io/yaml); expectations come from that library."""

import pytest

from kapply.diff.yaml_text import to_yaml


def value_line(value: object) -> str:
    return to_yaml({"k": value}).removeprefix("k: ").removesuffix("\n")


@pytest.mark.parametrize(
    "text",
    [
        "123", "1.5", "null", "~", "true", "Y", "n", "off", "0x1F", "1e3", "017", ".inf", "1_000", "12:30",
        "-1", "+1", ".5", "1.", "2024-01-01", "2024-01-01T10:00:00Z", "",
    ],
)  # fmt: skip
def test_strings_that_look_like_other_types_are_double_quoted(text):
    assert value_line(text) == f'"{text}"'


def test_strings_with_tabs_are_double_quoted_with_escapes():
    assert value_line("tab\there") == '"tab\\there"'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@x", "'@x'"), ("`x", "'`x'"), ("-", "'-'"), ("- x", "'- x'"), ("?", "'?'"), ("x:", "'x:'"),
        ("{a}", "'{a}'"), ("[a]", "'[a]'"), ("!x", "'!x'"), ("%x", "'%x'"), ("&x", "'&x'"), ("'q'", "'''q'''"),
        ('"dq"', "'\"dq\"'"), ("x ", "'x '"), ("a: b", "'a: b'"), ("a #b", "'a #b'"), (" x", "' x'"),
        ("*x", "'*x'"), ("|", "'|'"), ("> x", "'> x'"), ("#x", "'#x'"), ("null ", "'null '"),
    ],
)  # fmt: skip
def test_strings_that_cannot_be_plain_for_other_reasons_are_single_quoted(text, expected):
    assert value_line(text) == expected


@pytest.mark.parametrize("text", ["a,b", "a'b", "=", "<<", "a\\b", "NaN", "héllo", "0o8", "2024-13-01", "1:a"])
def test_other_strings_are_plain(text):
    assert value_line(text) == text


def test_characters_outside_the_basic_plane_are_escaped_like_go_yaml():
    assert value_line("smile \U0001f600") == '"smile \\U0001F600"'


def test_keys_are_quoted_like_values():
    assert to_yaml({"123": "x", "true": "y", "": "z"}) == '"": z\n"123": x\n"true": "y"\n'


def test_layout_of_nested_maps_lists_and_empty_values():
    obj = {
        "spec": {
            "containers": [{"name": "app", "args": ["a", "b"]}],
            "empty": {},
            "none": [],
            "nothing": None,
            "on": True,
            "off": False,
        }
    }
    assert to_yaml(obj) == (
        "spec:\n"
        "  containers:\n"
        "  - args:\n"
        "    - a\n"
        "    - b\n"
        "    name: app\n"
        "  empty: {}\n"
        "  none: []\n"
        "  nothing: null\n"
        '  "off": false\n'
        '  "on": true\n'
    )


def test_keys_sort_in_go_yaml_order_with_digit_runs_by_value_and_letters_last():
    keys = ["a10", "a9", "A", "_x", "b", "a-b", "ab", "x:", "x.y", "x/y"]
    assert to_yaml(dict.fromkeys(keys, 1)).splitlines() == [
        "_x: 1", "A: 1", "a-b: 1", "a9: 1", "a10: 1", "ab: 1", "b: 1", "x.y: 1", "x/y: 1", "'x:': 1",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (3, "3"),
        (-7, "-7"),
        (1000.0, "1000"),
        (-0.0, "0"),
        (1.5, "1.5"),
        (-2.5, "-2.5"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1234567.5, "1.2345675e+06"),
        (1e20, "1e+20"),
        (-1e25, "-1e+25"),
        (2**63 - 1, "9223372036854775807"),
        (2**63, "9223372036854776000"),  # beyond int64 Kubernetes decodes a float64, printed through JSON
    ],
)
def test_numbers_print_as_after_the_json_round_trip(number, expected):
    assert value_line(number) == expected


def test_non_finite_floats_use_yaml_spellings():
    assert to_yaml([float("inf"), float("-inf"), float("nan")]) == "- .inf\n- -.inf\n- .nan\n"


def test_booleans_and_null_are_plain():
    assert to_yaml({"a": True, "b": False, "c": None}) == "a: true\nb: false\nc: null\n"


def test_multi_line_strings_use_literal_blocks_with_chomping_and_indent_hints():
    obj = {"script": "echo a\necho b\n", "nonl": "a\nb", "keep": "a\n\n", "lead": "  a\nb\n"}
    assert to_yaml(obj) == (
        "keep: |+\n"
        "  a\n"
        "\n"
        "lead: |2\n"
        "    a\n"
        "  b\n"
        "nonl: |-\n"
        "  a\n"
        "  b\n"
        "script: |\n"
        "  echo a\n"
        "  echo b\n"
    )  # fmt: skip


def test_keep_chomping_at_the_end_of_the_document_has_no_document_end_marker():
    assert to_yaml({"z": "a\n\n"}) == "z: |+\n  a\n\n"


def test_multi_line_strings_that_cannot_be_blocks_are_double_quoted():
    assert value_line("a\tb\nc") == '"a\\tb\\nc"'
    assert value_line("trailing \nspace") == '"trailing \\nspace"'


def test_long_plain_strings_fold_at_spaces_after_column_80():
    text = (
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et"
        " dolore magna aliqua."
    )
    assert to_yaml({"long": text, "nested": {"msg": text}}) == (
        "long: Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor\n"
        "  incididunt ut labore et dolore magna aliqua.\n"
        "nested:\n"
        "  msg: Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor\n"
        "    incididunt ut labore et dolore magna aliqua.\n"
    )


def test_non_ascii_text_is_printed_as_is():
    assert to_yaml({"u": "héllo wörld 中"}) == "u: héllo wörld 中\n"


def test_output_ends_with_a_newline_for_any_top_level_value():
    assert to_yaml({}) == "{}\n"
    assert to_yaml([]) == "[]\n"
    assert to_yaml(None) == "null\n"
    assert to_yaml(["a", 1]) == "- a\n- 1\n"


def test_unsupported_values_are_rejected():
    with pytest.raises(TypeError, match="set"):
        to_yaml({"k": {1, 2}})
