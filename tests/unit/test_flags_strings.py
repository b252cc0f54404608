"""String-list flags (pflag's StringSlice, `-f a.yml,b.yml`): a value is a CSV line, and a plain one is split without
the csv module, which a deploy's start-up then does not import (issue 33)."""

import subprocess
import sys

import pytest

from kapply.flags import FILE, convert


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("", []),
        ("app.yml", ["app.yml"]),
        ("a.yml,b.yml", ["a.yml", "b.yml"]),
        ("a,,b,", ["a", "", "b", ""]),
        (" a , b ", [" a ", " b "]),
        ('"a,b",c', ["a,b", "c"]),
        ('"a""b",c', ['a"b', "c"]),
        ('a"b,c', ['a"b', "c"]),
        ("a\nb,c", ["a"]),
    ],
)
def test_a_value_is_one_csv_line(text, values):
    assert convert(FILE, text) == values


def test_a_plain_value_is_split_without_importing_csv():
    code = (
        "import sys; from kapply.flags import FILE, convert; convert(FILE, 'a.yml,b.yml'); print('csv' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False"]
