"""A structural diff reduced to a fingerprint, for kapp's last-applied check.

After kapply writes an object it records the MD5 of the differences between what
it sent and what the server stored (defaults, webhook mutations). Later, if the
live object still differs from the recorded copy in exactly the same way, nobody
else has touched it and the recorded copy is a faithful base for the diff.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson


def _same_scalar(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return a == b


def _diff(left: Any, right: Any, path: str, out: list[list[Any]]) -> None:
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted(left.keys() | right.keys()):
            sub = f"{path}/{key}"
            if key not in right:
                out.append(["remove", sub])
            elif key not in left:
                out.append(["add", sub, right[key]])
            else:
                _diff(left[key], right[key], sub, out)
    elif isinstance(left, list) and isinstance(right, list):
        for i in range(max(len(left), len(right))):
            if i >= len(right):
                out.append(["remove", f"{path}/{i}"])
            elif i >= len(left):
                out.append(["add", f"{path}/{i}", right[i]])
            else:
                _diff(left[i], right[i], f"{path}/{i}", out)
    elif not _same_scalar(left, right):
        out.append(["replace", path, right])


def ops_diff(left: Any, right: Any) -> list[list[Any]]:
    """Operations that turn left into right, in a canonical order."""
    out: list[list[Any]] = []
    _diff(left, right, "", out)
    return out


def fingerprint(left: Any, right: Any) -> str:
    return hashlib.md5(orjson.dumps(ops_diff(left, right), option=orjson.OPT_SORT_KEYS)).hexdigest()
