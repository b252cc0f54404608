"""kapply's last-applied fingerprint against the real kapp's.

Every expected MinimalString text and MD5 here was produced by the real kapp (v0.60.0-16), not by kapply: each case
was deployed with kapp, the live object was then rewritten (for the synthetic cases, a custom resource whose `spec`
keeps unknown fields), and the text and MD5 were read from kapp's own debug output
(`KAPP_DEBUG_RESOURCE_WITH_HISTORY=true kapp deploy --diff-run`, which prints its recalculated `MinimalString` and
MD5 for every resource with a last-applied copy). The inputs are what kapp diffed: the left side as the API server
returned it, the right side as the `kapp.k14s.io/original` annotation held it; for the synthetic cases only `spec`
differed, for the real kinds only the parts shown.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from kapply.diff.ops_diff import _emit_ops, fingerprint, minimal_string, ops_diff

Case = tuple[str, dict[str, Any], dict[str, Any], str, str]

LONG = "word " * 25 + "end"
K129, K140 = "k" * 129, "k" * 140  # keys longer than 128 are written as "? key"

# (name, left `spec`, right `spec`, kapp's MinimalString, kapp's MD5)
SPEC_CASES: list[Case] = [
    (
        "removed-key",
        {"a": "x", "b": "y"},
        {"a": "x"},
        ('- type: test\n  path: /spec/b\n  value: "y"\n- type: remove\n  path: /spec/b\n'),
        "3fe7ab5056ad5f2ddd250daeff966fdb",
    ),
    (
        "added-key",
        {"a": "x"},
        {"a": "x", "b": {"c": [1, 2]}},
        (
            "- type: test\n"
            "  path: /spec/b\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/b?\n"
            "  value:\n"
            "    c:\n"
            "    - 1\n"
            "    - 2\n"
        ),
        "70bc8c2179b515e56c2560b98a6cd36c",
    ),
    (
        "changed-scalar",
        {"a": "y", "n": 4, "t": False},
        {"a": "x", "n": 3, "t": True},
        (
            "- type: test\n"
            "  path: /spec/a\n"
            '  value: "y"\n'
            "- type: replace\n"
            "  path: /spec/a\n"
            "  value: x\n"
            "- type: test\n"
            "  path: /spec/n\n"
            "  value: 4\n"
            "- type: replace\n"
            "  path: /spec/n\n"
            "  value: 3\n"
            "- type: test\n"
            "  path: /spec/t\n"
            "  value: false\n"
            "- type: replace\n"
            "  path: /spec/t\n"
            "  value: true\n"
        ),
        "6a60376498689cbab1215c0efc779c66",
    ),
    (
        "int-vs-float",
        {"big": 1000001, "f": 2, "g": 0.25, "h": 7, "i": 1.5, "tiny": 1},
        {"big": 1000000, "f": 2, "g": 0.5, "h": 123456789, "i": 1, "tiny": 1e-05},
        (
            "- type: test\n"
            "  path: /spec/big\n"
            "  value: 1000001\n"
            "- type: replace\n"
            "  path: /spec/big\n"
            "  value: 1e+06\n"
            "- type: test\n"
            "  path: /spec/g\n"
            "  value: 0.25\n"
            "- type: replace\n"
            "  path: /spec/g\n"
            "  value: 0.5\n"
            "- type: test\n"
            "  path: /spec/h\n"
            "  value: 7\n"
            "- type: replace\n"
            "  path: /spec/h\n"
            "  value: 1.23456789e+08\n"
            "- type: test\n"
            "  path: /spec/i\n"
            "  value: 1.5\n"
            "- type: replace\n"
            "  path: /spec/i\n"
            "  value: 1\n"
            "- type: test\n"
            "  path: /spec/tiny\n"
            "  value: 1\n"
            "- type: replace\n"
            "  path: /spec/tiny\n"
            "  value: 1e-05\n"
        ),
        "abf024922a1f2a6c16922ad6f3e747fe",
    ),
    (
        "nested-maps",
        {"a": {"b": {"c": {"d": 2, "f": "y"}}, "z": {"k": 1}}},
        {"a": {"b": {"c": {"d": 1, "e": "x"}}, "z": {}}},
        (
            "- type: test\n"
            "  path: /spec/a/b/c/d\n"
            "  value: 2\n"
            "- type: replace\n"
            "  path: /spec/a/b/c/d\n"
            "  value: 1\n"
            "- type: test\n"
            "  path: /spec/a/b/c/e\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/a/b/c/e?\n"
            "  value: x\n"
            "- type: test\n"
            "  path: /spec/a/b/c/f\n"
            '  value: "y"\n'
            "- type: remove\n"
            "  path: /spec/a/b/c/f\n"
            "- type: test\n"
            "  path: /spec/a/z/k\n"
            "  value: 1\n"
            "- type: remove\n"
            "  path: /spec/a/z/k\n"
        ),
        "4605c021565b58f29959d252ea6b52ad",
    ),
    (
        "array-grown",
        {"l": [1]},
        {"l": [1, 2, 3, {"a": "b"}, [5, 6]]},
        (
            "- type: test\n"
            "  path: /spec/l/1\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/l/-\n"
            "  value: 2\n"
            "- type: test\n"
            "  path: /spec/l/2\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/l/-\n"
            "  value: 3\n"
            "- type: test\n"
            "  path: /spec/l/3\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/l/-\n"
            "  value:\n"
            "    a: b\n"
            "- type: test\n"
            "  path: /spec/l/4\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/l/-\n"
            "  value:\n"
            "  - 5\n"
            "  - 6\n"
        ),
        "b9d83d57bf36c285c58773ec8c99586a",
    ),
    (
        "array-shrunk",
        {"l": [1, 2, {"x": "y"}, [3]]},
        {"l": [1]},
        (
            "- type: test\n"
            "  path: /spec/l/1\n"
            "  value: 2\n"
            "- type: remove\n"
            "  path: /spec/l/1\n"
            "- type: test\n"
            "  path: /spec/l/1\n"
            "  value:\n"
            '    x: "y"\n'
            "- type: remove\n"
            "  path: /spec/l/1\n"
            "- type: test\n"
            "  path: /spec/l/1\n"
            "  value:\n"
            "  - 3\n"
            "- type: remove\n"
            "  path: /spec/l/1\n"
        ),
        "1718351042c39233cf63e52628058357",
    ),
    (
        "array-changed",
        {"l": [{"name": "a", "v": 2}, "t", 3.5]},
        {"l": [{"name": "a", "v": 1}, "s", 3]},
        (
            "- type: test\n"
            "  path: /spec/l/0/v\n"
            "  value: 2\n"
            "- type: replace\n"
            "  path: /spec/l/0/v\n"
            "  value: 1\n"
            "- type: test\n"
            "  path: /spec/l/1\n"
            "  value: t\n"
            "- type: replace\n"
            "  path: /spec/l/1\n"
            "  value: s\n"
            "- type: test\n"
            "  path: /spec/l/2\n"
            "  value: 3.5\n"
            "- type: replace\n"
            "  path: /spec/l/2\n"
            "  value: 3\n"
        ),
        "08dd422b10e5806f80b472034fb3eb9b",
    ),
    (
        "type-change",
        {"b": "true", "l": {"0": 1}, "m": "a", "n": "1", "s": 1, "x": {"k": "v"}},
        {"b": True, "l": [1, 2], "m": {"a": 1}, "n": 1, "s": "1", "x": None},
        (
            "- type: test\n"
            "  path: /spec/b\n"
            '  value: "true"\n'
            "- type: replace\n"
            "  path: /spec/b\n"
            "  value: true\n"
            "- type: test\n"
            "  path: /spec/l\n"
            "  value:\n"
            '    "0": 1\n'
            "- type: replace\n"
            "  path: /spec/l\n"
            "  value:\n"
            "  - 1\n"
            "  - 2\n"
            "- type: test\n"
            "  path: /spec/m\n"
            "  value: a\n"
            "- type: replace\n"
            "  path: /spec/m\n"
            "  value:\n"
            "    a: 1\n"
            "- type: test\n"
            "  path: /spec/n\n"
            '  value: "1"\n'
            "- type: replace\n"
            "  path: /spec/n\n"
            "  value: 1\n"
            "- type: test\n"
            "  path: /spec/s\n"
            "  value: 1\n"
            "- type: replace\n"
            "  path: /spec/s\n"
            '  value: "1"\n'
            "- type: test\n"
            "  path: /spec/x\n"
            "  value:\n"
            "    k: v\n"
            "- type: replace\n"
            "  path: /spec/x\n"
            "  value: null\n"
        ),
        "70f536cb199dcb6020ae2aab7cc1ce99",
    ),
    (
        "escaped-keys",
        {"a/b": 2, "c~d": 3, "e:f": 4, "q?": 5, "x": {}, "~1": 6},
        {"a/b": 1, "c~d": 2, "e:f": 3, "q?": 4, "x": {"p/q~r:s": "v"}, "~1": 5},
        (
            "- type: test\n"
            "  path: /spec/a~1b\n"
            "  value: 2\n"
            "- type: replace\n"
            "  path: /spec/a~1b\n"
            "  value: 1\n"
            "- type: test\n"
            "  path: /spec/c~0d\n"
            "  value: 3\n"
            "- type: replace\n"
            "  path: /spec/c~0d\n"
            "  value: 2\n"
            "- type: test\n"
            "  path: /spec/e~7f\n"
            "  value: 4\n"
            "- type: replace\n"
            "  path: /spec/e~7f\n"
            "  value: 3\n"
            "- type: test\n"
            "  path: /spec/q?\n"
            "  value: 5\n"
            "- type: replace\n"
            "  path: /spec/q?\n"
            "  value: 4\n"
            "- type: test\n"
            "  path: /spec/x/p~1q~0r~7s\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/x/p~1q~0r~7s?\n"
            "  value: v\n"
            "- type: test\n"
            "  path: /spec/~01\n"
            "  value: 6\n"
            "- type: replace\n"
            "  path: /spec/~01\n"
            "  value: 5\n"
        ),
        "5053a9983612e3953f4a4b14ceae2dd4",
    ),
    (
        "numeric-keys",
        {"1": "x", "10": "y", "2": "z", "m": {}},
        {"m": {"01": "d", "1": "a", "10": "b", "2": "c"}},
        (
            "- type: test\n"
            "  path: /spec/1\n"
            "  value: x\n"
            "- type: remove\n"
            "  path: /spec/1\n"
            "- type: test\n"
            "  path: /spec/10\n"
            '  value: "y"\n'
            "- type: remove\n"
            "  path: /spec/10\n"
            "- type: test\n"
            "  path: /spec/2\n"
            "  value: z\n"
            "- type: remove\n"
            "  path: /spec/2\n"
            "- type: test\n"
            "  path: /spec/m/01\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/m/01?\n"
            "  value: d\n"
            "- type: test\n"
            "  path: /spec/m/1\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/m/1?\n"
            "  value: a\n"
            "- type: test\n"
            "  path: /spec/m/10\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/m/10?\n"
            "  value: b\n"
            "- type: test\n"
            "  path: /spec/m/2\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/m/2?\n"
            "  value: c\n"
        ),
        "78b7c811842d1b4b284ea3e9e04b9832",
    ),
    (
        "unicode",
        {"emoji": "x", "é": "ö", "ключ": "другое"},
        {"emoji": "🙂 smile", "é": "ü", "ключ": "значение"},
        (
            "- type: test\n"
            "  path: /spec/emoji\n"
            "  value: x\n"
            "- type: replace\n"
            "  path: /spec/emoji\n"
            '  value: "\\U0001F642 smile"\n'
            "- type: test\n"
            "  path: /spec/é\n"
            "  value: ö\n"
            "- type: replace\n"
            "  path: /spec/é\n"
            "  value: ü\n"
            "- type: test\n"
            "  path: /spec/ключ\n"
            "  value: другое\n"
            "- type: replace\n"
            "  path: /spec/ключ\n"
            "  value: значение\n"
        ),
        "e992daa0eb4f6171e2f2eabd8347cc32",
    ),
    (
        "multi-line",
        {"s": "line1\n", "t": "a", "u": "y\nz"},
        {"s": "line1\nline2\n", "t": "a\n  b\n", "u": "x"},
        (
            "- type: test\n"
            "  path: /spec/s\n"
            "  value: |\n"
            "    line1\n"
            "- type: replace\n"
            "  path: /spec/s\n"
            "  value: |\n"
            "    line1\n"
            "    line2\n"
            "- type: test\n"
            "  path: /spec/t\n"
            "  value: a\n"
            "- type: replace\n"
            "  path: /spec/t\n"
            "  value: |\n"
            "    a\n"
            "      b\n"
            "- type: test\n"
            "  path: /spec/u\n"
            "  value: |-\n"
            "    y\n"
            "    z\n"
            "- type: replace\n"
            "  path: /spec/u\n"
            "  value: x\n"
        ),
        "35dd83a9e6a32202a7859b9e68cda60d",
    ),
    (
        "null-values",
        {"a": 1, "b": None, "c": [1, None]},
        {"a": None, "b": 1, "c": [None, 1]},
        (
            "- type: test\n"
            "  path: /spec/a\n"
            "  value: 1\n"
            "- type: replace\n"
            "  path: /spec/a\n"
            "  value: null\n"
            "- type: test\n"
            "  path: /spec/b\n"
            "  value: null\n"
            "- type: replace\n"
            "  path: /spec/b\n"
            "  value: 1\n"
            "- type: test\n"
            "  path: /spec/c/0\n"
            "  value: 1\n"
            "- type: replace\n"
            "  path: /spec/c/0\n"
            "  value: null\n"
            "- type: test\n"
            "  path: /spec/c/1\n"
            "  value: null\n"
            "- type: replace\n"
            "  path: /spec/c/1\n"
            "  value: 1\n"
        ),
        "8ea73163ec1ed4c61a58d173e6f0b0b4",
    ),
    (
        "empty-maps-lists",
        {"l": {}, "m": [], "n": {"x": {}}, "o": {}, "p": []},
        {"l": [], "m": {}, "n": {"x": []}},
        (
            "- type: test\n"
            "  path: /spec/l\n"
            "  value: {}\n"
            "- type: replace\n"
            "  path: /spec/l\n"
            "  value: []\n"
            "- type: test\n"
            "  path: /spec/m\n"
            "  value: []\n"
            "- type: replace\n"
            "  path: /spec/m\n"
            "  value: {}\n"
            "- type: test\n"
            "  path: /spec/n/x\n"
            "  value: {}\n"
            "- type: replace\n"
            "  path: /spec/n/x\n"
            "  value: []\n"
            "- type: test\n"
            "  path: /spec/o\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /spec/o\n"
            "- type: test\n"
            "  path: /spec/p\n"
            "  value: []\n"
            "- type: remove\n"
            "  path: /spec/p\n"
        ),
        "1b47d542a5524518d681888ec97682f4",
    ),
    (
        "strings-needing-quotes",
        {
            "a": "x",
            "b": "true",
            "c": "1.5",
            "d": "",
            "e": "a: b",
            "f": "#x",
            "g": "null",
            "h": "0x1F",
            "i": "2020-01-01",
            "j": " lead",
            "k": "@at",
            "l": "yes",
            "m": "1e+06",
            "n": "'q'",
            "o": "tab\there",
        },
        {"a": "x"},
        (
            "- type: test\n"
            "  path: /spec/b\n"
            '  value: "true"\n'
            "- type: remove\n"
            "  path: /spec/b\n"
            "- type: test\n"
            "  path: /spec/c\n"
            '  value: "1.5"\n'
            "- type: remove\n"
            "  path: /spec/c\n"
            "- type: test\n"
            "  path: /spec/d\n"
            '  value: ""\n'
            "- type: remove\n"
            "  path: /spec/d\n"
            "- type: test\n"
            "  path: /spec/e\n"
            "  value: 'a: b'\n"
            "- type: remove\n"
            "  path: /spec/e\n"
            "- type: test\n"
            "  path: /spec/f\n"
            "  value: '#x'\n"
            "- type: remove\n"
            "  path: /spec/f\n"
            "- type: test\n"
            "  path: /spec/g\n"
            '  value: "null"\n'
            "- type: remove\n"
            "  path: /spec/g\n"
            "- type: test\n"
            "  path: /spec/h\n"
            '  value: "0x1F"\n'
            "- type: remove\n"
            "  path: /spec/h\n"
            "- type: test\n"
            "  path: /spec/i\n"
            '  value: "2020-01-01"\n'
            "- type: remove\n"
            "  path: /spec/i\n"
            "- type: test\n"
            "  path: /spec/j\n"
            "  value: ' lead'\n"
            "- type: remove\n"
            "  path: /spec/j\n"
            "- type: test\n"
            "  path: /spec/k\n"
            "  value: '@at'\n"
            "- type: remove\n"
            "  path: /spec/k\n"
            "- type: test\n"
            "  path: /spec/l\n"
            '  value: "yes"\n'
            "- type: remove\n"
            "  path: /spec/l\n"
            "- type: test\n"
            "  path: /spec/m\n"
            '  value: "1e+06"\n'
            "- type: remove\n"
            "  path: /spec/m\n"
            "- type: test\n"
            "  path: /spec/n\n"
            "  value: '''q'''\n"
            "- type: remove\n"
            "  path: /spec/n\n"
            "- type: test\n"
            "  path: /spec/o\n"
            '  value: "tab\\there"\n'
            "- type: remove\n"
            "  path: /spec/o\n"
        ),
        "5df03e7c36aa0ba7bfc2b1919b9b4593",
    ),
    (
        "long-strings",
        {
            "a": LONG,
            "b": {"c": {"d": LONG}},
            "e": [LONG],
            K140: 1,
        },
        {"a": "x"},
        (
            "- type: test\n"
            "  path: /spec/a\n"
            "  value: word word word word word word word word word word word word word word word\n"
            "    word word word word word word word word word word end\n"
            "- type: replace\n"
            "  path: /spec/a\n"
            "  value: x\n"
            "- type: test\n"
            "  path: /spec/b\n"
            "  value:\n"
            "    c:\n"
            "      d: word word word word word word word word word word word word word word word\n"
            "        word word word word word word word word word word end\n"
            "- type: remove\n"
            "  path: /spec/b\n"
            "- type: test\n"
            "  path: /spec/e\n"
            "  value:\n"
            "  - word word word word word word word word word word word word word word word word\n"
            "    word word word word word word word word word end\n"
            "- type: remove\n"
            "  path: /spec/e\n"
            "- type: test\n"
            "  path: /spec/" + K140 + "\n"
            "  value: 1\n"
            "- type: remove\n"
            "  path: /spec/" + K140 + "\n"
        ),
        "d9f1780eeef154bce3e59d49dd4a90b6",
    ),
    (
        "no-change",
        {"a": {"b": [1, 2.5, "x"]}},
        {"a": {"b": [1, 2.5, "x"]}},
        "[]\n",
        "58e0494c51d30eb3494f7c9198986bb9",
    ),
    (
        "long-keys",
        {
            "l": [{K129: {"a": "b"}}],
            "m": {
                K140: 1,
                "x": 1,
            },
        },
        {"m": {"x": 1}},
        (
            "- type: test\n"
            "  path: /spec/l\n"
            "  value:\n"
            "  - ? " + K129 + "\n"
            "    : a: b\n"
            "- type: remove\n"
            "  path: /spec/l\n"
            "- type: test\n"
            "  path: /spec/m/" + K140 + "\n"
            "  value: 1\n"
            "- type: remove\n"
            "  path: /spec/m/" + K140 + "\n"
        ),
        "bca60fde5871aab53a6dcdda5beb24e3",
    ),
    (
        "byte-order-mark",
        {"a": "\ufeffbom text", "b": {"\ufeffk": "v\ufeff"}, "c": ["\ufeff"]},
        {"a": "x"},
        (
            "- type: test\n"
            "  path: /spec/a\n"
            '  value: "\\uFEFF\\x62\\x6F\\x6D\\x20\\x74\\x65\\x78\\x74"\n'
            "- type: replace\n"
            "  path: /spec/a\n"
            "  value: x\n"
            "- type: test\n"
            "  path: /spec/b\n"
            "  value:\n"
            '    "\\uFEFF\\x6B": "v\\uFEFF"\n'
            "- type: remove\n"
            "  path: /spec/b\n"
            "- type: test\n"
            "  path: /spec/c\n"
            "  value:\n"
            '  - "\\uFEFF"\n'
            "- type: remove\n"
            "  path: /spec/c\n"
        ),
        "9a9675ee13a7ff593b2288bf26baccc1",
    ),
    (
        "special-chars",
        {
            "a": "nel\x85x",
            "b": "nbsp\xa0x",
            "c": "ls\u2028x",
            "d": "esc\x1bx",
            "e": 'back\\slash "quoted"',
            "f": "🙂",
            "g": "trailing ",
            "h": "a #b",
        },
        {"a": "x"},
        (
            "- type: test\n"
            "  path: /spec/a\n"
            '  value: "nel\\Nx"\n'
            "- type: replace\n"
            "  path: /spec/a\n"
            "  value: x\n"
            "- type: test\n"
            "  path: /spec/b\n"
            "  value: nbsp\xa0x\n"
            "- type: remove\n"
            "  path: /spec/b\n"
            "- type: test\n"
            "  path: /spec/c\n"
            "  value: 'ls\u2028"
            "    x'\n"
            "- type: remove\n"
            "  path: /spec/c\n"
            "- type: test\n"
            "  path: /spec/d\n"
            '  value: "esc\\ex"\n'
            "- type: remove\n"
            "  path: /spec/d\n"
            "- type: test\n"
            "  path: /spec/e\n"
            '  value: back\\slash "quoted"\n'
            "- type: remove\n"
            "  path: /spec/e\n"
            "- type: test\n"
            "  path: /spec/f\n"
            '  value: "\\U0001F642"\n'
            "- type: remove\n"
            "  path: /spec/f\n"
            "- type: test\n"
            "  path: /spec/g\n"
            "  value: 'trailing '\n"
            "- type: remove\n"
            "  path: /spec/g\n"
            "- type: test\n"
            "  path: /spec/h\n"
            "  value: 'a #b'\n"
            "- type: remove\n"
            "  path: /spec/h\n"
        ),
        "759f43591887c79de545141608c19c5e",
    ),
    (
        "big-numbers",
        {"a": 9007199254740993, "b": 18446744073709552000, "c": -5, "d": 1e21, "e": 123456.5, "f": 4611686018427387904},
        {"a": 9007199254740992, "b": 18446744073709552000, "c": -5, "d": 1e21, "e": 123456},
        (
            "- type: test\n"
            "  path: /spec/a\n"
            "  value: 9007199254740993\n"
            "- type: replace\n"
            "  path: /spec/a\n"
            "  value: 9.007199254740992e+15\n"
            "- type: test\n"
            "  path: /spec/e\n"
            "  value: 123456.5\n"
            "- type: replace\n"
            "  path: /spec/e\n"
            "  value: 123456\n"
            "- type: test\n"
            "  path: /spec/f\n"
            "  value: 4611686018427387904\n"
            "- type: remove\n"
            "  path: /spec/f\n"
        ),
        "4a0f9205e2358ebd7f4ac8cf6688be79",
    ),
]

# (name, left, right, kapp's MinimalString, kapp's MD5): what kapp recorded after creating these objects on
# kube-apiserver v1.34 (server defaults, allocated fields, merged stringData), reduced to the differing top-level keys.
KIND_CASES: list[Case] = [
    (
        "service/web",
        {
            "spec": {
                "clusterIP": "10.96.224.161",
                "clusterIPs": ["10.96.224.161"],
                "internalTrafficPolicy": "Cluster",
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}],
                "selector": {"app": "web", "kapp.k14s.io/app": "1795465498845058242"},
                "sessionAffinity": "None",
                "type": "ClusterIP",
            },
            "metadata": {"annotations": {}},
        },
        {
            "spec": {
                "ports": [{"port": 80, "targetPort": 8080}],
                "selector": {"app": "web", "kapp.k14s.io/app": "1795465498845058242"},
                "clusterIP": "10.96.224.161",
            },
            "metadata": {},
        },
        (
            "- type: test\n"
            "  path: /metadata/annotations\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /metadata/annotations\n"
            "- type: test\n"
            "  path: /spec/clusterIPs\n"
            "  value:\n"
            "  - 10.96.224.161\n"
            "- type: remove\n"
            "  path: /spec/clusterIPs\n"
            "- type: test\n"
            "  path: /spec/internalTrafficPolicy\n"
            "  value: Cluster\n"
            "- type: remove\n"
            "  path: /spec/internalTrafficPolicy\n"
            "- type: test\n"
            "  path: /spec/ipFamilies\n"
            "  value:\n"
            "  - IPv4\n"
            "- type: remove\n"
            "  path: /spec/ipFamilies\n"
            "- type: test\n"
            "  path: /spec/ipFamilyPolicy\n"
            "  value: SingleStack\n"
            "- type: remove\n"
            "  path: /spec/ipFamilyPolicy\n"
            "- type: test\n"
            "  path: /spec/ports/0/protocol\n"
            "  value: TCP\n"
            "- type: remove\n"
            "  path: /spec/ports/0/protocol\n"
            "- type: test\n"
            "  path: /spec/sessionAffinity\n"
            "  value: None\n"
            "- type: remove\n"
            "  path: /spec/sessionAffinity\n"
            "- type: test\n"
            "  path: /spec/type\n"
            "  value: ClusterIP\n"
            "- type: remove\n"
            "  path: /spec/type\n"
        ),
        "cbfab31e5ddb1de97b366c14b5a3f3c9",
    ),
    (
        "service/web-nodeport",
        {
            "spec": {
                "clusterIP": "10.96.39.153",
                "clusterIPs": ["10.96.39.153"],
                "externalTrafficPolicy": "Cluster",
                "internalTrafficPolicy": "Cluster",
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "ports": [{"nodePort": 32163, "port": 80, "protocol": "TCP", "targetPort": 80}],
                "selector": {"app": "web", "kapp.k14s.io/app": "1795465498845058242"},
                "sessionAffinity": "None",
                "type": "NodePort",
            },
            "metadata": {"annotations": {}},
        },
        {
            "spec": {
                "ports": [{"port": 80}],
                "selector": {"app": "web", "kapp.k14s.io/app": "1795465498845058242"},
                "type": "NodePort",
                "clusterIP": "10.96.39.153",
            },
            "metadata": {},
        },
        (
            "- type: test\n"
            "  path: /metadata/annotations\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /metadata/annotations\n"
            "- type: test\n"
            "  path: /spec/clusterIPs\n"
            "  value:\n"
            "  - 10.96.39.153\n"
            "- type: remove\n"
            "  path: /spec/clusterIPs\n"
            "- type: test\n"
            "  path: /spec/externalTrafficPolicy\n"
            "  value: Cluster\n"
            "- type: remove\n"
            "  path: /spec/externalTrafficPolicy\n"
            "- type: test\n"
            "  path: /spec/internalTrafficPolicy\n"
            "  value: Cluster\n"
            "- type: remove\n"
            "  path: /spec/internalTrafficPolicy\n"
            "- type: test\n"
            "  path: /spec/ipFamilies\n"
            "  value:\n"
            "  - IPv4\n"
            "- type: remove\n"
            "  path: /spec/ipFamilies\n"
            "- type: test\n"
            "  path: /spec/ipFamilyPolicy\n"
            "  value: SingleStack\n"
            "- type: remove\n"
            "  path: /spec/ipFamilyPolicy\n"
            "- type: test\n"
            "  path: /spec/ports/0/nodePort\n"
            "  value: 32163\n"
            "- type: remove\n"
            "  path: /spec/ports/0/nodePort\n"
            "- type: test\n"
            "  path: /spec/ports/0/protocol\n"
            "  value: TCP\n"
            "- type: remove\n"
            "  path: /spec/ports/0/protocol\n"
            "- type: test\n"
            "  path: /spec/ports/0/targetPort\n"
            "  value: 80\n"
            "- type: remove\n"
            "  path: /spec/ports/0/targetPort\n"
            "- type: test\n"
            "  path: /spec/sessionAffinity\n"
            "  value: None\n"
            "- type: remove\n"
            "  path: /spec/sessionAffinity\n"
        ),
        "392ec9d3b8406dbb8304946893f2496c",
    ),
    (
        "secret/creds",
        {"data": {"password": "aHVudGVyMg==", "user": "YWRtaW4="}, "metadata": {"annotations": {}}},
        {"data": {"user": "YWRtaW4="}, "stringData": {"password": "hunter2"}, "metadata": {}},
        (
            "- type: test\n"
            "  path: /data/password\n"
            "  value: aHVudGVyMg==\n"
            "- type: remove\n"
            "  path: /data/password\n"
            "- type: test\n"
            "  path: /metadata/annotations\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /metadata/annotations\n"
            "- type: test\n"
            "  path: /stringData\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /stringData?\n"
            "  value:\n"
            "    password: hunter2\n"
        ),
        "232aa423222ba2b54602308272acd053",
    ),
    (
        "statefulset/db",
        {
            "spec": {
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                "podManagementPolicy": "OrderedReady",
                "replicas": 1,
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": {"app": "db", "kapp.k14s.io/app": "1795465498845058242"}},
                "serviceName": "db",
                "template": {
                    "metadata": {
                        "labels": {
                            "app": "db",
                            "kapp.k14s.io/app": "1795465498845058242",
                            "kapp.k14s.io/association": "v1.839f8c9b65b28c03e06086c7cb0055bf",
                        }
                    },
                    "spec": {
                        "containers": [
                            {
                                "image": "registry.invalid/db:1",
                                "imagePullPolicy": "IfNotPresent",
                                "name": "db",
                                "resources": {},
                                "terminationMessagePath": "/dev/termination-log",
                                "terminationMessagePolicy": "File",
                            }
                        ],
                        "dnsPolicy": "ClusterFirst",
                        "restartPolicy": "Always",
                        "schedulerName": "default-scheduler",
                        "securityContext": {},
                        "terminationGracePeriodSeconds": 30,
                    },
                },
                "updateStrategy": {"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"},
            },
            "metadata": {"annotations": {}},
        },
        {
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "db", "kapp.k14s.io/app": "1795465498845058242"}},
                "serviceName": "db",
                "template": {
                    "metadata": {
                        "labels": {
                            "app": "db",
                            "kapp.k14s.io/app": "1795465498845058242",
                            "kapp.k14s.io/association": "v1.839f8c9b65b28c03e06086c7cb0055bf",
                        }
                    },
                    "spec": {"containers": [{"image": "registry.invalid/db:1", "name": "db"}]},
                },
            },
            "metadata": {},
        },
        (
            "- type: test\n"
            "  path: /metadata/annotations\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /metadata/annotations\n"
            "- type: test\n"
            "  path: /spec/persistentVolumeClaimRetentionPolicy\n"
            "  value:\n"
            "    whenDeleted: Retain\n"
            "    whenScaled: Retain\n"
            "- type: remove\n"
            "  path: /spec/persistentVolumeClaimRetentionPolicy\n"
            "- type: test\n"
            "  path: /spec/podManagementPolicy\n"
            "  value: OrderedReady\n"
            "- type: remove\n"
            "  path: /spec/podManagementPolicy\n"
            "- type: test\n"
            "  path: /spec/revisionHistoryLimit\n"
            "  value: 10\n"
            "- type: remove\n"
            "  path: /spec/revisionHistoryLimit\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/imagePullPolicy\n"
            "  value: IfNotPresent\n"
            "- type: remove\n"
            "  path: /spec/template/spec/containers/0/imagePullPolicy\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/resources\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /spec/template/spec/containers/0/resources\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/terminationMessagePath\n"
            "  value: /dev/termination-log\n"
            "- type: remove\n"
            "  path: /spec/template/spec/containers/0/terminationMessagePath\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/terminationMessagePolicy\n"
            "  value: File\n"
            "- type: remove\n"
            "  path: /spec/template/spec/containers/0/terminationMessagePolicy\n"
            "- type: test\n"
            "  path: /spec/template/spec/dnsPolicy\n"
            "  value: ClusterFirst\n"
            "- type: remove\n"
            "  path: /spec/template/spec/dnsPolicy\n"
            "- type: test\n"
            "  path: /spec/template/spec/restartPolicy\n"
            "  value: Always\n"
            "- type: remove\n"
            "  path: /spec/template/spec/restartPolicy\n"
            "- type: test\n"
            "  path: /spec/template/spec/schedulerName\n"
            "  value: default-scheduler\n"
            "- type: remove\n"
            "  path: /spec/template/spec/schedulerName\n"
            "- type: test\n"
            "  path: /spec/template/spec/securityContext\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /spec/template/spec/securityContext\n"
            "- type: test\n"
            "  path: /spec/template/spec/terminationGracePeriodSeconds\n"
            "  value: 30\n"
            "- type: remove\n"
            "  path: /spec/template/spec/terminationGracePeriodSeconds\n"
            "- type: test\n"
            "  path: /spec/updateStrategy\n"
            "  value:\n"
            "    rollingUpdate:\n"
            "      partition: 0\n"
            "    type: RollingUpdate\n"
            "- type: remove\n"
            "  path: /spec/updateStrategy\n"
        ),
        "7f06aaec2216c397fd4bab9356cfa546",
    ),
    (
        "job/once",
        {
            "spec": {
                "backoffLimit": 6,
                "completionMode": "NonIndexed",
                "completions": 1,
                "manualSelector": False,
                "parallelism": 1,
                "podReplacementPolicy": "TerminatingOrFailed",
                "selector": {
                    "matchLabels": {"batch.kubernetes.io/controller-uid": "34ab7857-0ee6-4daf-a5f4-4d1b08ffa535"}
                },
                "suspend": False,
                "template": {
                    "metadata": {
                        "labels": {
                            "batch.kubernetes.io/controller-uid": "34ab7857-0ee6-4daf-a5f4-4d1b08ffa535",
                            "batch.kubernetes.io/job-name": "once",
                            "controller-uid": "34ab7857-0ee6-4daf-a5f4-4d1b08ffa535",
                            "job-name": "once",
                            "kapp.k14s.io/app": "1795465498845058242",
                            "kapp.k14s.io/association": "v1.a2025bae79b8689b1ad51dc773a43555",
                        }
                    },
                    "spec": {
                        "containers": [
                            {
                                "image": "registry.invalid/once:1",
                                "imagePullPolicy": "IfNotPresent",
                                "name": "once",
                                "resources": {},
                                "terminationMessagePath": "/dev/termination-log",
                                "terminationMessagePolicy": "File",
                            }
                        ],
                        "dnsPolicy": "ClusterFirst",
                        "restartPolicy": "Never",
                        "schedulerName": "default-scheduler",
                        "securityContext": {},
                        "terminationGracePeriodSeconds": 30,
                    },
                },
            },
            "metadata": {"annotations": {}},
        },
        {
            "spec": {
                "template": {
                    "metadata": {
                        "labels": {
                            "kapp.k14s.io/app": "1795465498845058242",
                            "kapp.k14s.io/association": "v1.a2025bae79b8689b1ad51dc773a43555",
                        }
                    },
                    "spec": {
                        "containers": [{"image": "registry.invalid/once:1", "name": "once"}],
                        "restartPolicy": "Never",
                    },
                }
            },
            "metadata": {},
        },
        (
            "- type: test\n"
            "  path: /metadata/annotations\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /metadata/annotations\n"
            "- type: test\n"
            "  path: /spec/backoffLimit\n"
            "  value: 6\n"
            "- type: remove\n"
            "  path: /spec/backoffLimit\n"
            "- type: test\n"
            "  path: /spec/completionMode\n"
            "  value: NonIndexed\n"
            "- type: remove\n"
            "  path: /spec/completionMode\n"
            "- type: test\n"
            "  path: /spec/completions\n"
            "  value: 1\n"
            "- type: remove\n"
            "  path: /spec/completions\n"
            "- type: test\n"
            "  path: /spec/manualSelector\n"
            "  value: false\n"
            "- type: remove\n"
            "  path: /spec/manualSelector\n"
            "- type: test\n"
            "  path: /spec/parallelism\n"
            "  value: 1\n"
            "- type: remove\n"
            "  path: /spec/parallelism\n"
            "- type: test\n"
            "  path: /spec/podReplacementPolicy\n"
            "  value: TerminatingOrFailed\n"
            "- type: remove\n"
            "  path: /spec/podReplacementPolicy\n"
            "- type: test\n"
            "  path: /spec/selector\n"
            "  value:\n"
            "    matchLabels:\n"
            "      batch.kubernetes.io/controller-uid: 34ab7857-0ee6-4daf-a5f4-4d1b08ffa535\n"
            "- type: remove\n"
            "  path: /spec/selector\n"
            "- type: test\n"
            "  path: /spec/suspend\n"
            "  value: false\n"
            "- type: remove\n"
            "  path: /spec/suspend\n"
            "- type: test\n"
            "  path: /spec/template/metadata/labels/batch.kubernetes.io~1controller-uid\n"
            "  value: 34ab7857-0ee6-4daf-a5f4-4d1b08ffa535\n"
            "- type: remove\n"
            "  path: /spec/template/metadata/labels/batch.kubernetes.io~1controller-uid\n"
            "- type: test\n"
            "  path: /spec/template/metadata/labels/batch.kubernetes.io~1job-name\n"
            "  value: once\n"
            "- type: remove\n"
            "  path: /spec/template/metadata/labels/batch.kubernetes.io~1job-name\n"
            "- type: test\n"
            "  path: /spec/template/metadata/labels/controller-uid\n"
            "  value: 34ab7857-0ee6-4daf-a5f4-4d1b08ffa535\n"
            "- type: remove\n"
            "  path: /spec/template/metadata/labels/controller-uid\n"
            "- type: test\n"
            "  path: /spec/template/metadata/labels/job-name\n"
            "  value: once\n"
            "- type: remove\n"
            "  path: /spec/template/metadata/labels/job-name\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/imagePullPolicy\n"
            "  value: IfNotPresent\n"
            "- type: remove\n"
            "  path: /spec/template/spec/containers/0/imagePullPolicy\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/resources\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /spec/template/spec/containers/0/resources\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/terminationMessagePath\n"
            "  value: /dev/termination-log\n"
            "- type: remove\n"
            "  path: /spec/template/spec/containers/0/terminationMessagePath\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/terminationMessagePolicy\n"
            "  value: File\n"
            "- type: remove\n"
            "  path: /spec/template/spec/containers/0/terminationMessagePolicy\n"
            "- type: test\n"
            "  path: /spec/template/spec/dnsPolicy\n"
            "  value: ClusterFirst\n"
            "- type: remove\n"
            "  path: /spec/template/spec/dnsPolicy\n"
            "- type: test\n"
            "  path: /spec/template/spec/schedulerName\n"
            "  value: default-scheduler\n"
            "- type: remove\n"
            "  path: /spec/template/spec/schedulerName\n"
            "- type: test\n"
            "  path: /spec/template/spec/securityContext\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /spec/template/spec/securityContext\n"
            "- type: test\n"
            "  path: /spec/template/spec/terminationGracePeriodSeconds\n"
            "  value: 30\n"
            "- type: remove\n"
            "  path: /spec/template/spec/terminationGracePeriodSeconds\n"
        ),
        "91a1f3aa4a1d3424bed14b8c93b3cf25",
    ),
    (
        "deployment/web",
        {
            "spec": {
                "progressDeadlineSeconds": 600,
                "replicas": 1,
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": {"app": "web", "kapp.k14s.io/app": "1795465498845058242"}},
                "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
                "template": {
                    "metadata": {
                        "labels": {
                            "app": "web",
                            "kapp.k14s.io/app": "1795465498845058242",
                            "kapp.k14s.io/association": "v1.8d2a566430489a1ba6a094af78c0670e",
                        }
                    },
                    "spec": {
                        "containers": [
                            {
                                "image": "registry.invalid/app:1",
                                "imagePullPolicy": "IfNotPresent",
                                "name": "app",
                                "resources": {"limits": {"cpu": "500m", "memory": "1M"}},
                                "terminationMessagePath": "/dev/termination-log",
                                "terminationMessagePolicy": "File",
                            }
                        ],
                        "dnsPolicy": "ClusterFirst",
                        "restartPolicy": "Always",
                        "schedulerName": "default-scheduler",
                        "securityContext": {},
                        "terminationGracePeriodSeconds": 30,
                    },
                },
            },
            "metadata": {"annotations": {}},
        },
        {
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web", "kapp.k14s.io/app": "1795465498845058242"}},
                "template": {
                    "metadata": {
                        "labels": {
                            "app": "web",
                            "kapp.k14s.io/app": "1795465498845058242",
                            "kapp.k14s.io/association": "v1.8d2a566430489a1ba6a094af78c0670e",
                        }
                    },
                    "spec": {
                        "containers": [
                            {
                                "image": "registry.invalid/app:1",
                                "name": "app",
                                "resources": {"limits": {"cpu": 0.5, "memory": 1000000}},
                            }
                        ]
                    },
                },
            },
            "metadata": {},
        },
        (
            "- type: test\n"
            "  path: /metadata/annotations\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /metadata/annotations\n"
            "- type: test\n"
            "  path: /spec/progressDeadlineSeconds\n"
            "  value: 600\n"
            "- type: remove\n"
            "  path: /spec/progressDeadlineSeconds\n"
            "- type: test\n"
            "  path: /spec/revisionHistoryLimit\n"
            "  value: 10\n"
            "- type: remove\n"
            "  path: /spec/revisionHistoryLimit\n"
            "- type: test\n"
            "  path: /spec/strategy\n"
            "  value:\n"
            "    rollingUpdate:\n"
            "      maxSurge: 25%\n"
            "      maxUnavailable: 25%\n"
            "    type: RollingUpdate\n"
            "- type: remove\n"
            "  path: /spec/strategy\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/imagePullPolicy\n"
            "  value: IfNotPresent\n"
            "- type: remove\n"
            "  path: /spec/template/spec/containers/0/imagePullPolicy\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/resources/limits/cpu\n"
            "  value: 500m\n"
            "- type: replace\n"
            "  path: /spec/template/spec/containers/0/resources/limits/cpu\n"
            "  value: 0.5\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/resources/limits/memory\n"
            "  value: 1M\n"
            "- type: replace\n"
            "  path: /spec/template/spec/containers/0/resources/limits/memory\n"
            "  value: 1e+06\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/terminationMessagePath\n"
            "  value: /dev/termination-log\n"
            "- type: remove\n"
            "  path: /spec/template/spec/containers/0/terminationMessagePath\n"
            "- type: test\n"
            "  path: /spec/template/spec/containers/0/terminationMessagePolicy\n"
            "  value: File\n"
            "- type: remove\n"
            "  path: /spec/template/spec/containers/0/terminationMessagePolicy\n"
            "- type: test\n"
            "  path: /spec/template/spec/dnsPolicy\n"
            "  value: ClusterFirst\n"
            "- type: remove\n"
            "  path: /spec/template/spec/dnsPolicy\n"
            "- type: test\n"
            "  path: /spec/template/spec/restartPolicy\n"
            "  value: Always\n"
            "- type: remove\n"
            "  path: /spec/template/spec/restartPolicy\n"
            "- type: test\n"
            "  path: /spec/template/spec/schedulerName\n"
            "  value: default-scheduler\n"
            "- type: remove\n"
            "  path: /spec/template/spec/schedulerName\n"
            "- type: test\n"
            "  path: /spec/template/spec/securityContext\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /spec/template/spec/securityContext\n"
            "- type: test\n"
            "  path: /spec/template/spec/terminationGracePeriodSeconds\n"
            "  value: 30\n"
            "- type: remove\n"
            "  path: /spec/template/spec/terminationGracePeriodSeconds\n"
        ),
        "9121b1cb68807f336097b6fc0d5d736c",
    ),
    (
        "widget/gadget",
        {"spec": {"ratio": 1.5, "size": 3, "tags": ["a", "b"]}, "metadata": {"annotations": {}}},
        {"spec": {"ratio": 1.5, "tags": ["a", "b"]}, "metadata": {}},
        (
            "- type: test\n"
            "  path: /metadata/annotations\n"
            "  value: {}\n"
            "- type: remove\n"
            "  path: /metadata/annotations\n"
            "- type: test\n"
            "  path: /spec/size\n"
            "  value: 3\n"
            "- type: remove\n"
            "  path: /spec/size\n"
        ),
        "146c7dc7396bf2012ae47cb080c3fd56",
    ),
]


def _objects(case: Case) -> tuple[str, dict[str, Any], dict[str, Any], str, str]:
    name, left, right, text, md5 = case
    return name, {"spec": left}, {"spec": right}, text, md5


ALL_CASES = [_objects(case) for case in SPEC_CASES] + KIND_CASES
IDS = [case[0] for case in ALL_CASES]


@pytest.mark.parametrize(("name", "left", "right", "text", "md5"), ALL_CASES, ids=IDS)
def test_minimal_string_and_md5_are_kapps(
    name: str, left: dict[str, Any], right: dict[str, Any], text: str, md5: str
) -> None:
    assert hashlib.md5(text.encode()).hexdigest() == md5  # the recorded text is the one kapp hashed
    assert minimal_string(ops_diff(left, right)) == text
    assert fingerprint(left, right) == md5


@pytest.mark.parametrize(("name", "left", "right", "text", "md5"), ALL_CASES, ids=IDS)
def test_the_emitter_path_writes_the_same_text(
    name: str, left: dict[str, Any], right: dict[str, Any], text: str, md5: str
) -> None:
    """Most documents are written directly; the rest go through libyaml's emitter. Both must give kapp's text."""
    ops = ops_diff(left, right)
    if ops:
        assert _emit_ops(ops) == text


def test_identical_subtrees_are_skipped_without_changing_the_result() -> None:
    shared = {"managedFields": [{"manager": "kapp", "fieldsV1": {"f:data": {}}}], "name": "x"}
    left = {"metadata": shared, "data": {"a": "1"}}
    right = {"metadata": shared, "data": {"a": "2"}}
    assert fingerprint(left, right) == fingerprint({**left, "metadata": dict(shared)}, right)
