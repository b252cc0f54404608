"""Fuzz: reading manifests. Any text or bytes on stdin, and any dicts given to the Python API, end in documents of
JSON values (string keys, nested at most yamlio.MAX_DEPTH deep) or in one ManifestError naming the input."""

from __future__ import annotations

import io
import math
import re
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from kapply import yamlio
from kapply.diff.yaml_text import to_yaml
from kapply.errors import ManifestError
from kapply.resources import manifests
from tests.fuzz.profiles import fuzz_settings
from tests.fuzz.strategies import json_values, resources, yaml_inputs

BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def _is_json(value: Any) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                return False
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif item is not None and not isinstance(item, str | int):
            return False
    return True


def _stdin(data: str | bytes) -> io.TextIOBase:
    return io.TextIOWrapper(io.BytesIO(data)) if isinstance(data, bytes) else io.StringIO(data)


@fuzz_settings
@given(yaml_inputs)
@example("x: =\n")  # PyYAML: could not determine a constructor for the tag 'tag:yaml.org,2002:value'
@example("kind: ConfigMap\nmetadata: {name: a}\ndata: {on: a, 1: b, true: c}\n")  # True == 1 lost a key
@example(BOMB)  # 4.4 GB and 116 s before
@example("a: " + "[" * 500 + "]" * 500)  # RecursionError before
@example("a: " + "[" * 100_000 + "]" * 100_000)  # segmentation fault before
@example("a: !!binary é\n")  # ValueError from base64 (found by this target)
@example(b"kind: ConfigMap\ndata:\n  k: caf\xe9\n")
@example("kind: ConfigMap\ndata:\n  k: \udce9\n")
@example("~: 1\n")  # TypeError before: a null key
@example("? [a]\n: 1\n")  # TypeError before: unhashable key
@example("a: &a [*a]\n")  # a list that contains itself
@example("a: .nan\n")
def test_any_input_reads_as_json_documents_or_one_manifest_error(data):
    try:
        docs = manifests.read(["-"], _stdin(data))
    except ManifestError as e:
        assert str(e).startswith(("Parsing stdin", "Reading stdin")), e
        return
    for doc in docs:
        assert isinstance(doc.obj, dict) and doc.origin.startswith("stdin doc ")
        assert _is_json(doc.obj) and not yamlio.too_deep(doc.obj)


@fuzz_settings
@given(
    st.lists(json_values | resources() | st.recursive(json_values, lambda c: st.lists(c, max_size=1), max_leaves=200))
)
def test_any_dicts_given_to_the_python_api_become_documents_or_one_manifest_error(given_resources):
    try:
        docs = manifests.from_objects(given_resources)
    except ManifestError as e:
        assert re.match(r"(Reading|Parsing) resource \d+", str(e)), e
        return
    for doc in docs:
        assert _is_json(doc.obj) and not yamlio.too_deep(doc.obj)


printable = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text().filter(lambda k: k != "<<"), inner, max_size=3)
    ),
    max_leaves=12,
)


@fuzz_settings
@given(printable)
@example({"a": "=", "b": "y", "c": "1e3", "d": "2024-01-01", "e": "12:30", "f": "0o17", "g": "", "h": "~"})
def test_what_kapply_prints_as_yaml_reads_back_as_the_same_value(value):
    """yaml_text decides quoting with its own model of go-yaml's resolver; yamlio resolves with another. They agree,
    on every value as kapp sees it after its JSON round trip, where every number is a float64. (Not for a `<<` key,
    which go-yaml writes plain and reads back as a merge.)"""
    assert _float64(yamlio.load(to_yaml(value), "text", ManifestError)) == _float64(value)


def _float64(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _float64(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_float64(item) for item in value]
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value
