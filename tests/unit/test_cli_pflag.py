"""Command lines as kapp (cobra and pflag) reads them."""

from __future__ import annotations

import pytest

from kapply.cli.pflag import UsageError, parse
from kapply.flags import Flag, Kind
from kapply.values import format_duration, parse_duration, parse_int

FLAGS = (
    Flag("app", Kind.STRING, "", "", short="a"),
    Flag("file", Kind.STRINGS, [], "", short="f"),
    Flag("diff-changes", Kind.BOOL, False, "", short="c"),
    Flag("yes", Kind.BOOL, False, "", short="y"),
    Flag("wait", Kind.BOOL, True, ""),
    Flag("diff-context", Kind.INT, 2, ""),
    Flag("wait-timeout", Kind.DURATION, 900.0, ""),
)


def test_booleans_never_take_the_next_argument():
    parsed = parse(["-c", "true", "--wait", "false"], FLAGS)
    assert parsed.flags["diff-changes"] is True and parsed.flags["wait"] is True
    assert parsed.args == ["true", "false"]


def test_booleans_take_attached_values_as_go_parses_them():
    parsed = parse(["-c=true", "--wait=F", "--yes=1"], FLAGS)
    assert (parsed.flags["diff-changes"], parsed.flags["wait"], parsed.flags["yes"]) == (True, False, True)


def test_shorthands_combine_and_take_values_attached_or_next():
    parsed = parse(["-yc", "-afirst", "-f=a.yml", "-f", "b.yml,c.yml"], FLAGS)
    assert parsed.flags["yes"] and parsed.flags["diff-changes"]
    assert parsed.flags["app"] == "first" and parsed.flags["file"] == ["a.yml", "b.yml", "c.yml"]


def test_flags_mix_with_arguments_and_double_dash_ends_them():
    parsed = parse(["x", "--app", "a", "--", "-f"], FLAGS)
    assert parsed.args == ["x", "-f"] and parsed.flags["app"] == "a" and parsed.flags["file"] == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--foo"], "unknown flag: --foo"),
        (["-z"], "unknown shorthand flag: 'z' in -z"),
        (["--app"], "flag needs an argument: --app"),
        (["-a"], "flag needs an argument: 'a' in -a"),
        (
            ["--wait-timeout", "10"],
            'invalid argument "10" for "--wait-timeout" flag: time: missing unit in duration "10"',
        ),
        (
            ["--diff-context=x"],
            'invalid argument "x" for "--diff-context" flag: strconv.ParseInt: parsing "x": invalid syntax',
        ),
        (
            ["-c=maybe"],
            'invalid argument "maybe" for "-c, --diff-changes" flag: '
            'strconv.ParseBool: parsing "maybe": invalid syntax',
        ),
    ],
)
def test_errors_read_as_pflags(argv, message):
    with pytest.raises(UsageError) as error:
        parse(argv, FLAGS)
    assert str(error.value) == message


@pytest.mark.parametrize(
    ("text", "seconds"), [("15m", 900), ("1h2m3.5s", 3723.5), ("500ms", 0.5), ("0", 0), ("-1s", -1)]
)
def test_durations_are_read_as_go_writes_them(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("seconds", "text"), [(900, "15m0s"), (3, "3s"), (0, "0s"), (3723, "1h2m3s")])
def test_default_durations_print_as_go_prints_them(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize(("text", "value"), [("10", 10), ("0x1f", 31), ("010", 8), ("0b11", 3), ("1_000", 1000)])
def test_integers_are_read_as_strconv_parseint_base_0(text, value):
    assert parse_int(text) == value
