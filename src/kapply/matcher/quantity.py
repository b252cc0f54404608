"""Kubernetes resource quantities (`500m`, `1Gi`, `1e3`) as exact decimals.

The API server stores a quantity in canonical form (`1000m` comes back as `1`, `1024Mi` as `1Gi`), so a
desired value and the server's copy of it are equal when their decimals are.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

_SUFFIXES = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
# `1E` is an exa suffix, `1E3` a decimal exponent: the exponent needs digits after the letter.
_QUANTITY = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Decimal | None:
    match = _QUANTITY.fullmatch(text.strip())
    if match is None:
        return None
    number, exponent, suffix = match.groups()
    try:
        if exponent:
            return Decimal(number + exponent)
        return Decimal(number) * _SUFFIXES[suffix or ""]
    except InvalidOperation:
        return None


def parse_quantity(value: object) -> Decimal | None:
    """The quantity's value as a Decimal (`"1Gi"` -> 1073741824), or None when `value` is not a quantity."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if isinstance(value, str):
        return _parse_text(value)
    return None
